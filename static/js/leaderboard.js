// Draws the speedup distribution from the table the server rendered; without JavaScript the
// table alone carries the same numbers.
const data = JSON.parse(document.getElementById("distribution-data").textContent);
const canvas = document.getElementById("distribution");
const colors = ["#0a58ca", "#b45309", "#15803d", "#7c3aed"];
if (canvas && window.Chart) {
  new window.Chart(canvas, {
    type: "bar",
    data: {
      labels: data.buckets,
      datasets: data.series.map((serie, i) => ({
        label: serie.level === null ? "Pasted problems" : `Level ${serie.level}`,
        data: serie.counts,
        backgroundColor: colors[i % colors.length],
      })),
    },
    options: {
      animation: false,
      // A count of problems: whole numbers on the axis, never 0.5 of one.
      scales: { y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "problems" } } },
    },
  });
}
