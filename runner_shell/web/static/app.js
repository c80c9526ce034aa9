// runner serve's page: renders /api documents, updates them in place on server-sent events.
"use strict";

const PAGE = 200; // children rendered per "show more"
const OUTPUT_LINES = 200;
const view = { rows: [], byId: new Map(), kids: new Map(), open: new Set(), shown: new Map(),
  elements: new Map(), rollups: {}, shape: "", chosen: null, refreshes: 0, fallbacks: new Map() };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}
const text = (id, value) => { document.getElementById(id).textContent = value; };
async function getJson(url) {
  const answer = await fetch(url, { cache: "no-store" });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || answer.statusText);
  return body;
}
const tokens = (t) => (t ? `${t.input}/${t.output}/${t.cached}` : "-");
// A duration as the CLI says one (`6s`, `4m 05s`, `2h 03m`): runner_core.views.charts.duration_text.
function duration(secs) {
  const whole = Math.max(0, Math.floor(secs));
  if (whole < 60) return `${whole}s`;
  if (whole < 3600) return `${Math.floor(whole / 60)}m ${String(whole % 60).padStart(2, "0")}s`;
  return `${Math.floor(whole / 3600)}h ${String(Math.floor((whole % 3600) / 60)).padStart(2, "0")}m`;
}
// Times read as elapsed ("for 6s"), the absolute time on hover; ticked every second.
function since(iso) {
  const node = el("span", { class: "since", "data-since": iso, title: `started ${iso}` });
  node.textContent = `for ${duration((Date.now() - new Date(iso)) / 1000)}`;
  return node;
}
setInterval(() => {
  for (const node of document.querySelectorAll("[data-since]")) {
    node.textContent = `for ${duration((Date.now() - new Date(node.dataset.since)) / 1000)}`;
  }
}, 1000);
const secs = (ms) => `${(ms / 1000).toFixed(1)}s`;

function setBadge(node, word) {
  node.textContent = word;
  node.className = `badge s-${word}`;
}

// A budget as the status document has it: figures as given, `exhausted` as the core decided.
const budgetText = (use) => `${use.budget} ${use.spent}/${use.limit}`
  + (use.exhausted ? " (reached)" : "");

function showBudgets(budgets) {
  const node = document.getElementById("budget");
  node.textContent = budgets.length ? budgets.map(budgetText).join(", ") : "none set";
  node.classList.toggle("reached", budgets.some((use) => use.exhausted));
}

// The wait a live loop sleeps through (the overview's `wait`): its reason, its end and a
// countdown; null hides it.
let waitTimer = null;
function showWait(wait) {
  clearInterval(waitTimer);
  for (const id of ["wait", "wait-label"]) document.getElementById(id).hidden = !wait;
  if (!wait) return;
  const until = new Date(wait.until);
  const tick = () => {
    const left = Math.max(0, Math.round((until - Date.now()) / 1000));
    const clock = `${Math.floor(left / 60)}m ${String(left % 60).padStart(2, "0")}s`;
    text("wait", `${wait.reason} until ${wait.until} (${left ? `${clock} left` : "ending"})`);
  };
  document.getElementById("wait").title = wait.until;
  tick();
  waitTimer = setInterval(tick, 1000);
}

function showOverview(status, overview) {
  text("run-id", status.run_id || "(not started)");
  setBadge(document.getElementById("run-state"), overview.state);
  showBudgets(status.budgets);
  showWait(overview.wait);
  for (const found of overview.fallbacks || []) if (!view.fallbacks.has(found.iter)) addFallback(found);
  text("branch", status.branch || "-");
  text("iteration", `${overview.iteration} of ${status.max_iterations}`);
  text("leaves", `${status.leaves.passed}/${status.leaves.total} passed`);
  const sel = status.selected;
  text("selected", sel.id ? `${sel.path} (${sel.attempts}/${sel.max_attempts})` : sel.status);
  text("stuck", status.stuck.length ? status.stuck.map((s) => s.path).join(", ") : "none");
  const suite = status.tests;
  document.getElementById("tests-label").hidden = document.getElementById("tests").hidden = !suite;
  if (suite) text("tests", `${testsText(suite.last)}` + (suite.flaky.length ? `, ${suite.flaky.length} flaky` : ""));
  showJobs(status.jobs || []);
  const guidance = document.getElementById("guidance");
  guidance.hidden = !status.guidance;
  guidance.textContent = status.guidance ? `guidance: ${status.guidance}` : "";
}

// ------------------------------------------------------------------ the tree, rendered lazily

function indexTree(rows) {
  view.rows = rows;
  view.byId = new Map(rows.map((row) => [row.id, row]));
  view.kids = new Map();
  const stack = [];
  for (const row of rows) {
    stack.length = row.depth;
    const parent = stack[row.depth - 1];
    if (parent) view.kids.get(parent).push(row.id);
    view.kids.set(row.id, []);
    stack.push(row.id);
  }
  if (rows.length && view.open.size === 0) view.open.add(rows[0].id);
}

function nodeRow(row) {
  const kids = view.kids.get(row.id).length;
  const toggle = el("span", { class: "toggle" }, kids ? (view.open.has(row.id) ? "▾" : "▸") : "·");
  const badge = el("span", {});
  const line = el("div", { class: "node", role: "treeitem", "data-id": row.id }, toggle, badge,
    el("span", { class: "title", title: row.title }, `${row.title} `),
    el("span", { class: "id" }, `[${row.id}]`), el("span", { class: "figures" }));
  // The page's CSP blocks inline style attributes; a CSSOM property is allowed.
  line.style.setProperty("--depth", String(row.depth));
  toggle.addEventListener("click", (event) => { event.stopPropagation(); flip(row.id); });
  line.addEventListener("click", () => { location.hash = `node/${encodeURIComponent(row.id)}`; });
  view.elements.set(row.id, line);
  fillRow(line, row);
  return line;
}

function fillRow(line, row) {
  setBadge(line.children[1], row.state);
  const rolled = view.rollups[row.id];
  const cost = rolled && rolled.cost_usd ? ` $${rolled.cost_usd.toFixed(4)}` : "";
  const used = rolled ? ` tok ${tokens(rolled.tokens)}` : "";
  line.children[4].textContent = `att ${row.attempts}/${row.max_attempts} exe ${row.executions}${used}${cost}`;
  line.classList.toggle("chosen", row.id === view.chosen);
}

function renderBranch(id, into) {
  into.append(nodeRow(view.byId.get(id)));
  if (!view.open.has(id)) return;
  const kids = view.kids.get(id);
  const limit = view.shown.get(id) || PAGE;
  for (const kid of kids.slice(0, limit)) renderBranch(kid, into);
  if (kids.length > limit) {
    const more = el("div", { class: "more" }, `show ${Math.min(PAGE, kids.length - limit)} more of ${kids.length - limit}…`);
    more.addEventListener("click", () => { view.shown.set(id, limit + PAGE); renderTree(); });
    into.append(more);
  }
}

function renderTree() {
  const tree = document.getElementById("tree");
  const fragment = document.createDocumentFragment();
  view.elements = new Map();
  if (view.rows.length) renderBranch(view.rows[0].id, fragment);
  tree.replaceChildren(fragment);
}

function flip(id) {
  if (view.open.has(id)) view.open.delete(id); else view.open.add(id);
  renderTree();
}

function showTree(rows) {
  const shape = rows.map((row) => `${row.depth}:${row.id}`).join(",");
  indexTree(rows);
  if (shape !== view.shape) { view.shape = shape; renderTree(); return; }
  for (const [id, line] of view.elements) fillRow(line, view.byId.get(id)); // in place
}

// ------------------------------------------------------------------ node and iteration panels

function table(headers, rows) {
  const head = el("tr", {}, ...headers.map((h) => el("th", {}, h)));
  return el("table", {}, el("thead", {}, head),
    el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))));
}
const iterLink = (n) => el("a", { href: `#iter/${n}` }, String(n));
// A history row's iteration link: when it ended, relative, with the absolute time on hover.
function endedLink(r) {
  const link = iterLink(r.iter);
  if (r.ended_at) link.title = `ended ${r.ended_at} (${duration((Date.now() - new Date(r.ended_at)) / 1000)} ago)`;
  return link;
}

async function showNode(id) {
  view.chosen = id;
  for (const [key, line] of view.elements) line.classList.toggle("chosen", key === id);
  const node = await getJson(`/api/nodes/${encodeURIComponent(id)}`);
  const rows = node.executions.map((e) => [iterLink(e.iteration), e.shown_status || e.status, e.guard,
    backendCell(e.iteration, e.backend), secs(e.duration_ms), tokens(e.tokens),
    e.cost_usd == null ? "-" : `$${e.cost_usd}`, e.error || ""]);
  document.getElementById("detail").replaceChildren(
    el("h2", {}, `${node.title} [${node.id}]`), el("div", {}, `path: ${node.path}`),
    el("div", {}, `attempts: ${node.attempts}/${node.max_attempts}`),
    el("h3", {}, "Goal"), el("pre", {}, node.goal),
    el("h3", {}, "Acceptance"), el("ul", {}, ...node.acceptance.map((a) => el("li", {}, a))),
    el("h3", {}, `Executions (${node.executions.length})`),
    table(["iter", "status", "guard", "backend", "duration", "tokens", "cost", "error"], rows));
}

async function showIteration(n) {
  const it = await getJson(`/api/iterations/${encodeURIComponent(n)}`);
  const parts = [el("h2", {}, `Iteration ${it.iter}`), el("div", {}, it.dir)];
  parts.push(el("h3", {}, "Meta"), el("pre", {}, JSON.stringify(it.meta ?? it.meta_problem, null, 2)));
  parts.push(el("h3", {}, "Output"), el("pre", {}, JSON.stringify(it.output ?? it.output_problem, null, 2)));
  if (it.tests) {
    const changes = it.tests.changes.map((c) => `${c.id}: ${c.before || "absent"} -> ${c.after || "absent"}`);
    const flaky = it.tests.flaky.map((id) => `flaky: ${id}`);
    parts.push(el("h3", {}, `Tests (${testsText(it.meta && it.meta.tests)})`),
      el("pre", { id: "test-changes" }, changes.concat(flaky, it.tests.reasons).join("\n") || "no change"));
  }
  const heads = new Map(it.logs.map((log) => [log.name, log]));
  for (const file of it.files) {
    const href = `/api/iterations/${it.iter}/files/${encodeURIComponent(file.name)}`;
    parts.push(el("h3", {}, el("a", { href, target: "_blank" }, file.name), ` (${file.size} bytes)`));
    const log = heads.get(file.name);
    if (log) parts.push(el("pre", {}, log.head.join("\n") + (log.truncated ? "\n[…]" : "")));
    else if (!SHOWN_ABOVE.has(file.name)) parts.push(onDemand(href, file.name));
  }
  const diff = await getJson(`/api/iterations/${encodeURIComponent(n)}/diff`);
  parts.push(el("h3", {}, `Tree diff (${diff.source})`),
    el("pre", { id: "tree-diff" }, diff.changes.map(changeText).join("\n") || "no change"));
  document.getElementById("detail").replaceChildren(...parts);
}

// meta.json and output.json are shown above; the prompt and the trees open on demand.
const SHOWN_ABOVE = new Set(["meta.json", "output.json"]);

function onDemand(href, name) {
  const body = el("pre", { "data-file": name }, "…");
  const details = el("details", {}, el("summary", {}, `show ${name}`), body);
  details.addEventListener("toggle", async () => {
    if (!details.open || body.dataset.loaded) return;
    const answer = await fetch(href, { cache: "no-store" });
    body.textContent = await answer.text();
    body.dataset.loaded = "yes";
  });
  return details;
}

function changeText(change) {
  if (change.change === "added") return `added ${change.node} under ${change.parent_after}`;
  if (change.change === "removed") return `removed ${change.node} from ${change.parent_before}`;
  const moved = change.moved
    ? [`${change.node} moved ${change.parent_before} -> ${change.parent_after}`] : [];
  return moved.concat(change.fields.map((f) =>
    `${change.node} ${f.field}: ${JSON.stringify(f.old)} -> ${JSON.stringify(f.new)}`)).join("\n");
}

function route() {
  const [kind, value] = location.hash.slice(1).split("/");
  const show = kind === "node" ? showNode : kind === "iter" ? showIteration : null;
  if (show && value) show(decodeURIComponent(value)).catch((error) => {
    document.getElementById("detail").replaceChildren(el("p", { class: "hint" }, String(error)));
  });
}

// A history row is an iteration's meta.json: from /api/history, or an iteration_finished event.
const cost = (usd) => (usd === null || usd === undefined ? "-" : `$${usd.toFixed(4)}`);
// The guard's test figures as history shows them: passing/total, newly passing, regressed.
const testsText = (t) => (t ? `${t.passed}/${t.total} +${t.newly_passing} -${t.regressed}` : "-");
// Why an iteration did not pass (runner_core.views.charts.meta_reason): its error with its kind,
// else the ratchet's reasons.
function reason(r) {
  if (r.error_kind) return `${r.error_kind}: ${r.error || ""}`.replace(/: $/, "");
  if (r.error) return r.error;
  const reasons = (r.tests && r.tests.reasons) || [];
  if (!reasons.length) return "";
  return reasons[0] + (reasons.length > 1 ? ` (and ${reasons.length - 1} more)` : "");
}
// An iteration's backend; one whose limit made the loop switch (a `fallback` event) says to
// which, and until when (page.py's backend_cell draws the same).
function backendCell(iter, backend) {
  const cell = el("span", { class: "backend", "data-backend-iter": String(iter) }, backend || "-");
  const found = view.fallbacks.get(iter);
  if (found) {
    cell.classList.add("fallback");
    cell.textContent = `${backend} \u2192 ${found.to}`;
    cell.title = `${found.backend} hit its limit until ${found.until}; the loop ran ${found.to}`;
  }
  return cell;
}
function addFallback(found) {
  view.fallbacks.set(found.iter, found);
  for (const cell of document.querySelectorAll(`[data-backend-iter="${found.iter}"]`)) {
    cell.replaceWith(backendCell(found.iter, found.backend));
  }
}
const historyRow = (r) => el("tr", { "data-iter": String(r.iter) },
  ...[endedLink(r), r.node_id, r.role, backendCell(r.iter, r.backend), r.status, r.guard, testsText(r.tests),
    secs(r.duration_ms), tokens(r.tokens), cost(r.cost_usd)].map((c) => el("td", {}, c)),
  el("td", { class: "error", title: reason(r) }, reason(r)));

async function showHistory() {
  const history = await getJson("/api/history");
  const body = document.querySelector("#history tbody");
  body.replaceChildren(...history.iterations.slice().reverse().map(historyRow));
}

function addHistoryRow(meta) {
  const body = document.querySelector("#history tbody");
  if (body.querySelector(`tr[data-iter="${meta.iter}"]`)) return;
  body.prepend(historyRow(meta));
}

// ------------------------------------------------------------------ live

// The whole documents are read on opening the page, on (re)connecting the event stream and
// when the tree's shape changed; everything else arrives as `view` deltas and events.
async function refresh() {
  const [status, overview] = await Promise.all([getJson("/api/status"), getJson("/api/overview")]);
  view.rollups = overview.rollups;
  showOverview(status, overview);
  showTree(status.tree);
  if (status.run_id) showHistory().catch(() => {});
  if (view.chosen && location.hash.startsWith("#node/")) route();
  view.refreshes += 1;
}

// A `view` event: the server read the documents once for every page and sends what changed,
// each value whole (the head, changed rows with their roll-up), or that the tree was reshaped.
function applyView(delta) {
  if (delta.reshaped) { soon(); return; }
  if (delta.head) showOverview(delta.head.status, delta.head.overview);
  let chosenChanged = false;
  for (const row of delta.rows) {
    view.rollups[row.id] = row.rollup;
    view.byId.set(row.id, row);
    const line = view.elements.get(row.id);
    if (line) fillRow(line, row);
    chosenChanged ||= row.id === view.chosen;
  }
  if (chosenChanged && location.hash.startsWith("#node/")) route();
}

let pending = null;
function soon() {
  if (pending) return;
  pending = setTimeout(() => { pending = null; refresh().catch(() => {}); }, 150);
}

// A parallel run's jobs (the status document's `jobs`), each with its worker when it runs on
// one (`[executor] kind = "temporal"`) and its agent's live output,
// kept by iteration from the agent_output events (each names its iteration); while jobs are
// listed their panels stand in for the one agent output panel.
const jobOutput = new Map();
let jobsShown = false;

function showJobs(jobs) {
  jobsShown = jobs.length > 0;
  document.getElementById("live-jobs").hidden = !jobsShown;
  if (jobsShown) document.getElementById("live-output").hidden = true;
  document.getElementById("jobs").replaceChildren(...jobs.map((job) => {
    const badge = el("span", {});
    setBadge(badge, job.alive ? "running" : "interrupted");
    const output = el("pre", { class: "job-output" }, (jobOutput.get(job.iteration) || []).join("\n"));
    return el("div", { class: "job", "data-iter": String(job.iteration) },
      el("h3", {}, badge, ` iter ${job.iteration} `, iterNode(job.node_id),
        ` ${job.role} ${job.phase} `, since(job.started_at),
        job.worker ? ` on ${job.worker}` : ""), output);
  }));
  for (const output of document.querySelectorAll("#jobs pre")) output.scrollTop = output.scrollHeight;
}
const iterNode = (id) => el("a", { href: `#node/${encodeURIComponent(id)}` }, id);

function appendJobOutput(iteration, lines) {
  const kept = (jobOutput.get(iteration) || []).concat(lines).slice(-OUTPUT_LINES);
  jobOutput.set(iteration, kept);
  const output = document.querySelector(`.job[data-iter="${iteration}"] pre`);
  if (output) { output.textContent = kept.join("\n"); output.scrollTop = output.scrollHeight; }
}

// The guard's output has its own panel: it is not the agent's.
function appendOutput(event) {
  const body = JSON.parse(event.data);
  const guard = body.source === "guard";
  if (!guard) appendJobOutput(body.iter, body.lines || []);
  const output = document.getElementById(guard ? "guard-output" : "output");
  document.getElementById(guard ? "live-guard" : "live-output").hidden = guard ? false : jobsShown;
  const before = output.textContent ? output.textContent.split("\n") : [];
  const lines = before.concat(body.lines || []);
  output.textContent = lines.slice(-OUTPUT_LINES).join("\n");
  output.scrollTop = output.scrollHeight;
}

// The server's events follower stopped (it said why on its stderr too): the page still
// answers, but without live events, and says so until a new run's events are followed.
function showEventsFailure(why) {
  const node = document.getElementById("events-failure");
  node.hidden = !why;
  node.textContent = why ? `live events stopped: ${why}` : "";
}

function subscribe() {
  const source = new EventSource("/api/events");
  source.addEventListener("hello", (event) => showEventsFailure(JSON.parse(event.data).events_failure));
  source.addEventListener("events_failed", (event) => showEventsFailure(JSON.parse(event.data).error));
  source.onopen = () => { text("live", "live"); soon(); };
  source.onerror = () => text("live", "reconnecting…");
  source.addEventListener("agent_output", appendOutput);
  source.addEventListener("view", (event) => applyView(JSON.parse(event.data)));
  // The pictures, drawn by the server (SVG) and sent whole when they change.
  source.addEventListener("pictures", (event) => {
    document.getElementById("pictures").innerHTML = JSON.parse(event.data).html;
  });
  source.addEventListener("fallback", (event) => {
    const body = JSON.parse(event.data);
    addFallback({ iter: body.iter, backend: body.backend, to: body.to, until: body.until });
  });
  source.addEventListener("iteration_finished", (event) => {
    const body = JSON.parse(event.data);
    jobOutput.delete(body.iter);
    addHistoryRow(body.meta);
  });
  for (const name of ["iteration_started", "iteration_finished", "agent_started",
    "agent_finished", "guard_started", "guard_finished", "waiting", "runner_error", "stuck",
    "budget_exhausted", "limit_reached", "fallback", "complete", "operator", "hook_failed"]) {
    source.addEventListener(name, () => text("live", `live: ${name}`));
  }
}

window.addEventListener("hashchange", route);
refresh().then(route).catch((error) => text("run-id", String(error)));
subscribe();
