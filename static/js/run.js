// The run page, live: replays the run's stored transcript from its WebSocket, then appends
// events as they arrive. Everything from the model is inserted as text, never as HTML.
const container = document.getElementById("transcript");
const statusText = document.getElementById("status-text");
const statusLine = document.getElementById("run-status");
const roundText = document.getElementById("round");
const errorLine = document.getElementById("run-error");
const cancelForm = document.getElementById("cancel-form");
const FINISHED = new Set(["done", "failed", "cancelled"]);

function el(tag, attrs = {}, text = "") {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text) node.textContent = text;
  return node;
}

function lastBlock(kind, round) {
  const last = container.lastElementChild;
  if (last && last.dataset.kind === kind && last.dataset.round === String(round)) return last;
  let block;
  if (kind === "reasoning") {
    block = el("details", { class: "reasoning", open: "" });
    block.append(el("summary", {}, `Reasoning, round ${round}`));
  } else {
    block = el("section", { class: "answer" });
    block.append(el("h2", {}, `Answer, round ${round}`));
  }
  block.dataset.kind = kind;
  block.dataset.round = String(round);
  block.append(el("pre", { class: "stream" }));
  container.append(block);
  return block;
}

function appendDelta(event) {
  const pre = lastBlock(event.kind, event.round).querySelector("pre");
  const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  pre.textContent += event.text;
  if (atBottom) window.scrollTo(0, document.body.scrollHeight);
}

function candidateSection(event) {
  const section = el("section", { class: "candidate" });
  section.dataset.candidate = String(event.data.candidate);
  const heading = el("h2", {}, "Candidate ");
  heading.append(el("a", { href: event.data.url }, `#${event.data.candidate}`));
  heading.append(` (${event.data.language}), round ${event.round}`);
  const table = el("table", { class: "archs" });
  const head = el("tr");
  for (const title of ["Architecture", "Status", "vs eager", "vs compile", "Reason"]) head.append(el("th", { scope: "col" }, title));
  table.append(el("thead"), el("tbody"));
  table.tHead.append(head);
  const code = el("details");
  code.append(el("summary", {}, "Code"), el("pre", { class: "stream" }, event.text));
  section.append(heading, table, code);
  container.append(section);
}

// The server reads each speedup's interval (event.differences): noise is never shown as a number.
function speedup(value, difference) {
  if (value == null) return "—";
  return difference === "no measurable difference" ? difference : `${value.toFixed(2)}x`;
}

function updateEvaluation(event) {
  const section = container.querySelector(`section.candidate[data-candidate="${event.candidate}"]`);
  if (!section) return;
  const body = section.querySelector("tbody");
  let row = body.querySelector(`tr[data-arch="${event.arch}"]`);
  if (!row) {
    row = el("tr", { "data-arch": event.arch });
    for (let i = 0; i < 5; i++) row.append(el("td"));
    body.append(row);
  }
  const cells = row.children;
  const pending = event.status === "queued" || event.status === "running";
  cells[0].textContent = event.arch;
  cells[1].textContent = pending ? event.stage : event.status;
  cells[1].className = `status status-${event.status}`;
  const differences = event.differences || {};
  cells[2].textContent = speedup(event.speedups.eager, differences.eager);
  cells[3].textContent = speedup(event.speedups.compile, differences.compile);
  cells[4].textContent = event.reason || "";
}

function updateStatus(event) {
  statusText.textContent = event.text;
  statusLine.dataset.status = event.data.status;
  roundText.textContent = event.data.rounds_completed;
  if (event.data.error) {
    errorLine.textContent = event.data.error;
    errorLine.hidden = false;
  }
  if (cancelForm && FINISHED.has(event.data.status)) cancelForm.hidden = true;
}

function note(event) {
  container.append(el("p", { class: "errors" }, `Round ${event.round}: ${event.text}`));
}

const handlers = {
  reasoning: appendDelta,
  answer: appendDelta,
  candidate: candidateSection,
  evaluation: updateEvaluation,
  status: updateStatus,
  no_candidate: note,
  error: note,
};

let replaying = false;

function handle(event) {
  if (event.replay && !replaying) {
    replaying = true;
    container.replaceChildren();
  }
  if (event.kind === "replayed") {
    replaying = false;
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
  socket.addEventListener("open", () => { delay = 500; });
  socket.addEventListener("message", (message) => handle(JSON.parse(message.data)));
  socket.addEventListener("close", () => {
    container.dataset.live = "false";
    if (!FINISHED.has(statusLine.dataset.status)) {
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    }
  });
}

if (container) connect();
