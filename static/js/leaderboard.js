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
      scales: { y: { beginAtZero: true, title: { display: true, text: "problems" } } },
    },
  });
}
