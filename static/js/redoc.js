// Starts Redoc on the API's schema (templates/api/redoc.html), where the stock page does it inline.
const container = document.getElementById("redoc-container");
const settingsData = document.getElementById("redoc-settings");
const settings = settingsData ? JSON.parse(settingsData.textContent) : {};
window.Redoc.init(container.dataset.schemaUrl, settings, container);
