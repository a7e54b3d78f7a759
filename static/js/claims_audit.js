// Draws ours against the claims from the data the server rendered (the table below the chart has the
// same numbers for whoever has no JavaScript). A point opens its kernel's page.
const data = JSON.parse(document.getElementById("audit-chart-data").textContent);
const canvas = document.getElementById("audit-chart");
const colors = { "beats the claim": "#15803d", "reproduced within 20%": "#0a58ca", "not reproduced": "#b45309" };
if (canvas && window.Chart && data.points.length) {
  const values = data.points.flatMap((point) => [point.x, point.y]).filter((value) => value > 0);
  const low = Math.min(...values) / 1.5;
  const high = Math.max(...values) * 1.5;
  const groups = Object.keys(colors).map((name) => ({
    type: "scatter",
    label: `Measured: ${name}`,
    data: data.points.filter((point) => point.reproduction === name),
    backgroundColor: colors[name],
    pointRadius: 5,
  }));
  const line = (factor, label, dash) => ({
    type: "line",
    label,
    data: [{ x: low, y: low * factor }, { x: high, y: high * factor }],
    borderColor: "#57606a",
    borderDash: dash,
    borderWidth: 1,
    pointRadius: 0,
  });
  new window.Chart(canvas, {
    data: { datasets: [...groups, line(1, "Ours = claimed", []), line(data.within, "Ours = 80% of claimed", [5, 4])] },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: { type: "logarithmic", min: low, max: high, title: { display: true, text: "claimed speedup over eager (theirs)" } },
        y: { type: "logarithmic", min: low, max: high, title: { display: true, text: "measured speedup over eager (ours)" } },
      },
      plugins: {
        tooltip: {
          callbacks: {
            label: (item) => item.raw.label ? `${item.raw.label}: claimed ${item.raw.x}x, measured ${item.raw.y.toFixed(2)}x` : item.dataset.label,
          },
        },
      },
      onClick: (event, elements, chart) => {
        const hit = elements.find((element) => chart.data.datasets[element.datasetIndex].type === "scatter");
        if (hit) window.location.href = chart.data.datasets[hit.datasetIndex].data[hit.index].url;
      },
      onHover: (event, elements) => {
        event.native.target.style.cursor = elements.length ? "pointer" : "default";
      },
    },
  });
}
