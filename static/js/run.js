// The run page, live: replays the run's stored transcript from its WebSocket, then appends events
// as they arrive. It builds the blocks templates/inference/run.html renders on the server: change
// both together. The model's Markdown is rendered by the Markdown bundle (CourtMarkdown: markdown-it
// and DOMPurify, as inference/markdown.py on the server); everything else from the model or the
// harness is inserted as text. A candidate's code comes highlighted by the server (Pygments, as on
// kernel pages) and is sanitised again here.
const container = document.getElementById("transcript");
const statusText = document.getElementById("status-text");
const statusLine = document.getElementById("run-status");
const roundPart = document.getElementById("round-part");
const roundText = document.getElementById("round");
const errorLine = document.getElementById("run-error");
const cancelForm = document.getElementById("cancel-form");
const runWait = document.getElementById("run-wait");
const reconnecting = document.getElementById("reconnecting");
const FINISHED = new Set(["done", "failed", "cancelled"]);
const PENDING = new Set(["queued", "running"]);
const BASELINES = [["eager", "eager"], ["compile", "torch.compile"]];
// How long deltas are gathered before a Markdown block is rendered again: the whole block is
// rendered each time (Markdown cannot be rendered piecewise), at most this often.
const RENDER_EVERY_MS = 50;
// How often the page asks what a queued verdict waits for, while one does.
const WAITS_EVERY_MS = 5000;

function el(tag, attrs = {}, text = "") {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text) node.textContent = text;
  return node;
}

// Markdown blocks: their text so far, rendered again once per RENDER_EVERY_MS while deltas come.
const sources = new WeakMap();
const stale = new Set();
let renderTimer = null;

function renderStale() {
  renderTimer = null;
  const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  for (const block of stale) {
    const box = block.querySelector(".markdown");
    const boxAtBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 20;
    box.replaceChildren(window.CourtMarkdown.render(sources.get(block)));
    if (boxAtBottom) box.scrollTop = box.scrollHeight;
    offerToGrow(block);
  }
  stale.clear();
  delete container.dataset.pending;
  if (atBottom && !replaying) window.scrollTo(0, document.body.scrollHeight);
}

function markStale(block) {
  stale.add(block);
  container.dataset.pending = "render";  // what the browser tests wait for
  if (renderTimer === null) renderTimer = setTimeout(renderStale, RENDER_EVERY_MS);
}

function lastBlock(kind, round) {
  const last = container.lastElementChild;
  if (last && last.dataset.kind === kind && last.dataset.round === String(round)) return last;
  let block;
  if (kind === "reasoning") {
    block = el("details", { class: "reasoning", open: "" });
    block.append(el("summary", {}, `Reasoning, round ${round}`), el("div", { class: "markdown" }));
    block.append(el("button", { type: "button", class: "secondary grow", "aria-expanded": "false", hidden: "" }, "Show all"));
  } else {
    block = el("section", { class: "answer" });
    block.append(el("h2", {}, `Answer, round ${round}`), el("div", { class: "markdown" }));
  }
  block.dataset.kind = kind;
  block.dataset.round = String(round);
  sources.set(block, "");
  container.append(block);
  return block;
}

function appendDelta(event) {
  const block = lastBlock(event.kind, event.round);
  sources.set(block, sources.get(block) + event.text);
  markStale(block);
}

// The reasoning box keeps its height while the model writes; "Show all" lets it grow to its text,
// offered once the text is taller than the box.
function offerToGrow(block) {
  const button = block.querySelector("button.grow");
  if (!button) return;
  const box = block.querySelector(".markdown");
  button.hidden = !box.classList.contains("grown") && box.scrollHeight <= box.clientHeight;
}

// A toggle event does not bubble: caught on its way down. A box measured while closed is measured again.
container.addEventListener("toggle", (toggle) => {
  if (toggle.target.matches("details.reasoning")) offerToGrow(toggle.target);
}, true);

container.addEventListener("click", (click) => {
  const button = click.target.closest("button.grow");
  if (!button) return;
  const box = button.parentElement.querySelector(".markdown");
  const grown = box.classList.toggle("grown");
  button.setAttribute("aria-expanded", String(grown));
  button.textContent = grown ? "Show less" : "Show all";
});

// The verdict table's columns, as templates/inference/run.html heads them.
const COLUMNS = ["Architecture", "Status", "This kernel", "vs eager", "vs torch.compile", "Reason"];

function candidateSection(event) {
  const section = el("section", { class: "candidate" });
  section.dataset.candidate = String(event.data.candidate);
  const heading = el("h2", {}, "Candidate ");
  heading.append(el("a", { href: event.data.url }, `#${event.data.candidate}`));
  heading.append(` (${event.data.language}), round ${event.round}`);
  if (event.data.hidden) heading.append(" ", el("small", { class: "hidden-mark" }, "Hidden by staff: shown to staff only"));
  const table = el("table", { class: "archs" });
  const head = el("tr");
  for (const title of COLUMNS) head.append(el("th", { scope: "col" }, title));
  table.append(el("thead"), el("tbody"));
  table.tHead.append(head);
  const scroll = el("div", { class: "scroll" });
  scroll.append(table);
  const code = el("details", { class: "code" });
  const box = el("div", { class: "code" });
  if (event.html) box.replaceChildren(window.CourtMarkdown.highlighted(event.html));
  else box.append(el("pre", {}, event.text));
  code.append(el("summary", {}, "Code"), box);
  section.append(heading, scroll, code);
  container.append(section);
}

// Three significant figures, no exponent: inference/presentation.py's format_ms.
function formatMs(value) {
  if (value == null) return "";
  let decimals = 0;
  if (value > 0 && value < 100) decimals = Math.min(6, 2 - Math.floor(Math.log10(value)));
  return `${value.toFixed(decimals)} ms`;
}

// The server reads each speedup's interval (event.differences): noise is never shown as a number,
// as inference/presentation.py's format_speedup.
function speedupCell(cell, speedup, difference, baseline, time) {
  if (speedup == null) cell.textContent = "—";
  else cell.textContent = difference === "no measurable difference" ? difference : `${speedup.toFixed(2)}x`;
  if (time) cell.append(" ", el("small", {}, `${baseline} ${time}`));
}

function setWait(row, text) {
  let wait = row.querySelector(".wait");
  if (!text) {
    if (wait) wait.remove();
    return;
  }
  if (!wait) {
    wait = el("small", { class: "wait" });
    row.querySelector("td.status").append(" ", wait);
  }
  wait.textContent = text;
}

function updateEvaluation(event) {
  const section = container.querySelector(`section.candidate[data-candidate="${event.candidate}"]`);
  if (!section) return;
  const body = section.querySelector("tbody");
  let row = body.querySelector(`tr[data-arch="${event.arch}"]`);
  if (!row) {
    row = el("tr", { "data-arch": event.arch });
    // Each cell names its column: a phone's width stacks them (static/css/site.css).
    for (const title of COLUMNS) row.append(el("td", { "data-label": title }));
    body.append(row);
  }
  row.dataset.evaluation = String(event.evaluation);
  const cells = row.children;
  const times = event.times_ms || {};
  cells[0].textContent = event.arch;
  cells[1].className = `status status-${event.status}`;
  cells[1].replaceChildren(el("span", { class: "state" }, PENDING.has(event.status) ? event.stage : event.status));
  cells[2].className = "time";
  cells[2].textContent = formatMs(times.candidate) || "—";
  const differences = event.differences || {};
  BASELINES.forEach(([name, label], index) => {
    cells[3 + index].className = "speedup";
    speedupCell(cells[3 + index], event.speedups[name], differences[name], label, formatMs(times[name]));
  });
  cells[5].textContent = event.reason || "";
  if (event.status === "queued") askWaits();
}

async function fetchWaits() {
  waitsTimer = null;
  waitsDue = Infinity;
  const queued = container.querySelectorAll("td.status-queued");
  if (!queued.length && statusLine.dataset.status !== "queued") return;
  try {
    const response = await fetch(container.dataset.waits, { headers: { Accept: "application/json" } });
    if (response.ok) {
      const { waits, run } = await response.json();
      for (const cell of queued) setWait(cell.parentElement, waits[cell.parentElement.dataset.evaluation] || "");
      runWait.textContent = run || "";
      runWait.hidden = !run;
    }
  } finally {
    askWaits(WAITS_EVERY_MS);
  }
}

let waitsTimer = null;
let waitsDue = Infinity;
function askWaits(after = 0) {
  if (replaying || (!container.querySelector("td.status-queued") && statusLine.dataset.status !== "queued")) return;
  const due = Date.now() + after;
  if (waitsTimer !== null && waitsDue <= due) return;
  clearTimeout(waitsTimer);
  waitsDue = due;
  waitsTimer = setTimeout(fetchWaits, after);
}

function updateStatus(event) {
  statusText.textContent = event.text;
  if (event.data.status !== "queued") runWait.hidden = true;
  statusLine.dataset.status = event.data.status;
  roundText.textContent = event.round;
  roundPart.hidden = !event.round;
  if (event.data.error) {
    errorLine.textContent = event.data.error;
    errorLine.hidden = false;
  }
  if (cancelForm && FINISHED.has(event.data.status)) cancelForm.hidden = true;
}

function note(event) {
  container.append(el("p", { class: "errors", "data-kind": "note" }, `Round ${event.round}: ${event.text}`));
}

// What staff hid of a round (its kernel, and what the model wrote for it) arrives as one "removed"
// event per event it replaces: the round says so once.
function removed(event) {
  if (container.querySelector(`[data-kind="removed"][data-round="${event.round}"]`)) return;
  container.append(el("p", { class: "removed", "data-kind": "removed", "data-round": String(event.round) }, `Round ${event.round}: ${event.text}`));
}

const handlers = {
  reasoning: appendDelta,
  answer: appendDelta,
  candidate: candidateSection,
  evaluation: updateEvaluation,
  status: updateStatus,
  no_candidate: note,
  error: note,
  removed,
};

let replaying = false;

function handle(event) {
  if (event.replay && !replaying) {
    replaying = true;
    stale.clear();
    container.replaceChildren();
  }
  if (event.kind === "replayed") {
    replaying = false;
    clearTimeout(renderTimer);
    renderStale();
    askWaits();  // the replay rebuilt the rows without what they wait for
    container.dataset.live = "true";
    return;
  }
  const handler = handlers[event.kind];
  if (handler) handler(event);
}

let delay = 500;
function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}${container.dataset.socket}`);
  socket.addEventListener("open", () => {
    delay = 500;
    reconnecting.hidden = true;
  });
  socket.addEventListener("message", (message) => handle(JSON.parse(message.data)));
  socket.addEventListener("close", () => {
    container.dataset.live = "false";
    if (!FINISHED.has(statusLine.dataset.status)) {
      reconnecting.hidden = false;  // a page that froze silently read as a stalled run
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    }
  });
}

if (container) {
  for (const block of container.querySelectorAll("details.reasoning")) offerToGrow(block);
  askWaits(WAITS_EVERY_MS);  // the page came with fresh ones
  connect();
}
