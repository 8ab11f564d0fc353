// cadmcp dashboard: renders what the daemon reports and sends the person's answers back.
// Everything shown is set as text (never as HTML); changes carry the page's CSRF token.
"use strict";

const CSRF = document.querySelector('meta[name="csrf"]').content;
const API = "/dashboard/api";
const state = { hosts: [], calls: [], approvals: [], checkpoints: [], machines: [], views: {} };
const MAX_ROWS = 300;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const $ = (id) => document.getElementById(id);

// A time that moves on the page: how long since a moment, or how long until one (seconds).
function ticking(at, kind) {
  const node = el("span", { "data-tick": kind, "data-at": String(at) });
  tick(node);
  return node;
}

function tick(node) {
  const seconds = (Date.now() / 1000 - Number(node.dataset.at)) * (node.dataset.tick === "until" ? -1 : 1);
  node.textContent = node.dataset.tick === "until" ? `${Math.max(0, Math.round(seconds))} s` : ago(seconds);
}

setInterval(() => document.querySelectorAll("[data-tick]").forEach(tick), 1000);

async function getJSON(path) {
  const response = await fetch(API + path, { credentials: "same-origin" });
  if (!response.ok) throw new Error(await response.text());
  return response.json();
}

async function post(path, body) {
  let response;
  try {
    response = await fetch(API + path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Cadmcp-Csrf": CSRF },
      body: JSON.stringify(body),
    });
  } catch {
    return { ok: false, error: `${GONE} Nothing was done.` };
  }
  const text = await response.text();
  try { return JSON.parse(text); } catch { return { ok: false, error: text }; }
}

function ago(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.max(0, Math.round(seconds));
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

// -- machines and hosts --------------------------------------------------------------------
function renderHosts(panel) {
  state.hosts = panel.hosts || [];
  state.machines = panel.machines || [];
  const me = state.machines.find((m) => m.local);
  $("machine").textContent = me ? `${me.name} · daemon pid ${panel.daemon.pid} · cadmcp ${panel.daemon.version}` : "";
  const machines = $("machine-list");
  machines.replaceChildren(
    ...state.machines.map((m) =>
      el("li", {}, `${m.local ? "This machine" : "Machine"} ${m.name}: `, el("span", { class: m.online ? "ok" : "error", text: m.online ? "online" : "offline" }),
        ` · ${m.connectedHosts ?? (m.hosts || []).length ?? 0} host(s)`)),
    ...(panel.gateway && panel.gateway.state === "not_configured" ? [el("li", { class: "muted", text: "No gateway: only this machine's hosts are shown." })] : []),
  );
  const list = $("host-list");
  list.replaceChildren(...state.hosts.map(hostCard));
  const filter = $("filter-host");
  const chosen = filter.value;
  filter.replaceChildren(el("option", { value: "", text: "all" }),
    ...state.hosts.filter((h) => h.logName).map((h) => el("option", { value: h.logName, text: `${h.hostApp} ${h.version} pid ${h.pid}` })));
  filter.value = chosen;
  renderViews();
}

// What a host's phase means beside its link's status ("connected · its server is down", not "connected · down").
const PHASES = { down: "its server is down", refused: "its server's catalog is refused", starting: "starting" };

function hostCard(h) {
  const status = h.status === "busy" && h.busySince ? `busy since ${ago(Date.now() / 1000 - h.busySince)}`
    : h.status === "wedged" && h.wedged ? `wedged running ${h.wedged.running || "a call"}` : h.status;
  const docs = (h.documents || []).map((d) => el("li", {}, d.title || d.path || "untitled", d.active ? " (active)" : "", d.modified ? " · modified" : ""));
  const toolsets = h.toolsets && h.toolsets.errors && h.toolsets.errors.length
    ? el("p", { class: "error" }, `Toolset errors: ${h.toolsets.errors.map((e) => `${e.path}: ${e.message || e.type}`).join("; ")}`) : null;
  return el("li", { "data-host": h.instanceId || "" },
    el("h3", {}, `${h.hostApp} ${h.version}`, h.machine ? ` on ${h.machine}` : ""),
    el("p", {}, `pid ${h.pid}`, ...(h.uptimeSeconds ? [" · up ", ticking(Date.now() / 1000 - h.uptimeSeconds, "since")] : []), " · ",
      el("span", { class: h.status, text: status }), h.phase && h.phase !== "ready" ? ` · ${PHASES[h.phase] || h.phase}` : "",
      h.capabilities !== undefined ? ` · ${h.capabilities} capabilities` : ""),
    h.problem ? el("p", { class: "error", text: h.problem }) : null,
    docs.length ? el("ul", { class: "plain", "aria-label": "Open documents" }, ...docs) : el("p", { class: "muted", text: "no document open" }),
    toolsets);
}

// -- live document views -------------------------------------------------------------------
function renderViews() {
  const box = $("view-list");
  const viewable = state.hosts.filter((h) => h.canView && h.instanceId);
  for (const node of [...box.children]) {
    if (!viewable.some((h) => h.instanceId === node.dataset.host)) node.remove();
  }
  for (const h of viewable) {
    let node = box.querySelector(`[data-host="${CSS.escape(h.instanceId)}"]`);
    if (!node) {
      node = viewCard(h);
      box.append(node);
      refreshView(h.instanceId);
    }
    const active = (h.documents || []).find((d) => d.active);
    node.querySelector("h3").textContent = `${h.hostApp} pid ${h.pid}: ${active ? active.title : "no document"}`;
  }
}

function viewCard(h) {
  const view = (state.views[h.instanceId] = { zoom: 1, x: 0, y: 0, options: {} });
  const img = el("img", { alt: `Picture of the active document of ${h.hostApp} pid ${h.pid}` });
  const frame = el("div", { class: "frame", tabindex: "0", role: "img", "aria-label": `${h.hostApp} view: drag or arrow keys pan, + and − zoom, 0 resets` }, img);
  const apply = () => { img.style.transform = `translate(${view.x}px, ${view.y}px) scale(${view.zoom})`; };
  const zoom = (factor) => { view.zoom = Math.min(20, Math.max(0.25, view.zoom * factor)); apply(); };
  frame.addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2); });
  frame.addEventListener("pointerdown", (e) => {
    const start = { x: e.clientX - view.x, y: e.clientY - view.y };
    frame.setPointerCapture(e.pointerId);
    const move = (m) => { view.x = m.clientX - start.x; view.y = m.clientY - start.y; apply(); };
    frame.addEventListener("pointermove", move);
    frame.addEventListener("pointerup", () => frame.removeEventListener("pointermove", move), { once: true });
  });
  frame.addEventListener("keydown", (e) => {
    const step = 40;
    const keys = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
    if (keys[e.key]) { view.x += keys[e.key][0]; view.y += keys[e.key][1]; apply(); e.preventDefault(); }
    else if (e.key === "+" || e.key === "=") zoom(1.25);
    else if (e.key === "-") zoom(0.8);
    else if (e.key === "0") { view.zoom = 1; view.x = 0; view.y = 0; apply(); }
  });
  const controls = el("div", { class: "row" },
    el("button", { type: "button", onclick: () => zoom(1.25), "aria-label": "Zoom in", text: "+" }),
    el("button", { type: "button", onclick: () => zoom(0.8), "aria-label": "Zoom out", text: "−" }),
    el("button", { type: "button", onclick: () => { view.zoom = 1; view.x = 0; view.y = 0; apply(); }, text: "Fit" }),
    ...(h.viewOptions || []).map((o) => {
      const select = el("select", { onchange: () => { view.options[o.name] = select.value; refreshView(h.instanceId); } },
        ...o.enum.map((v) => el("option", { value: v, text: v, selected: v === o.default })));
      return el("label", {}, `${o.name} `, select);
    }),
    h.canUndo ? el("button", { type: "button", onclick: () => history(h.instanceId, "back"), text: "Undo" }) : null,
    h.canUndo ? el("button", { type: "button", onclick: () => history(h.instanceId, "forward"), text: "Redo" }) : null);
  return el("article", { class: "view", "data-host": h.instanceId },
    el("h3", {}, h.hostApp), frame, controls,
    el("p", { class: "marks" }),
    el("p", { class: "said", role: "status", "aria-live": "polite" }),
    el("p", { class: "muted note", role: "status", "aria-live": "polite" }));
}

// What the host's last recorded change touched, as it reported it: marked in orange in the
// picture where the host can draw marks, else named by id.
function showMarks(v) {
  const node = $("view-list").querySelector(`[data-host="${CSS.escape(v.instanceId)}"] .marks`);
  if (!node) return;
  const t = v.touched;
  if (!t) { node.replaceChildren(); return; }
  const counts = ["created", "modified", "deleted"].map((k) => `${t[k].count} ${k}`).join(", ");
  const ids = [...t.created.ids, ...t.modified.ids];
  const shown = v.marked ? el("span", { class: "marked", text: `${v.marked.length} marked in orange` })
    : ids.length ? `ids ${ids.slice(0, 8).join(", ")}${ids.length > 8 ? ", …" : ""}` : null;
  node.replaceChildren(`Last change: ${counts}`, shown ? " · " : "", shown || "");
  node.dataset.marked = v.marked ? v.marked.join(" ") : "";
}

function refreshView(instanceId, revision) {
  const node = $("view-list").querySelector(`[data-host="${CSS.escape(instanceId)}"]`);
  if (!node) return;
  const view = state.views[instanceId];
  const query = new URLSearchParams({ ...view.options, r: String(revision ?? Date.now()) });
  const url = `${API}/view/${encodeURIComponent(instanceId)}?${query}`;
  const note = node.querySelector(".note");
  fetch(url, { credentials: "same-origin" }).then(async (response) => {
    if (response.status === 200) {
      const blob = await response.blob();
      const img = node.querySelector("img");
      if (img.src.startsWith("blob:")) URL.revokeObjectURL(img.src);
      img.src = URL.createObjectURL(blob);
      img.dataset.revision = response.headers.get("X-View-Revision") || "";
      note.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } else if (response.status === 202) {
      note.textContent = "drawing the first picture…";
    } else {
      note.textContent = await response.text();
    }
  }).catch(() => { note.textContent = "the picture could not be fetched"; });
}

async function history(instanceId, direction) {
  const answer = await post("/history", { instanceId, direction });
  // its own line: the note under the picture says when the next picture came
  const node = $("view-list").querySelector(`[data-host="${CSS.escape(instanceId)}"] .said`);
  if (node) node.textContent = answer.ok ? answer.message : `Not done: ${answer.error}`;
}

function markTouched(call) {
  const host = state.hosts.find((h) => h.logName && h.logName === call.host);
  if (!host) return;
  const node = $("view-list").querySelector(`[data-host="${CSS.escape(host.instanceId)}"] .frame`);
  if (!node) return;
  node.classList.add("touched");
  node.title = `last changed by ${call.hostTarget || call.target} at ${call.time}`;
  setTimeout(() => node.classList.remove("touched"), 4000);
}

// -- calls ---------------------------------------------------------------------------------
function callShown(call) {
  const host = $("filter-host").value, outcome = $("filter-outcome").value;
  if (!$("filter-side").checked && call.source !== "daemon") return false;
  if (host && call.host !== host) return false;
  if (outcome && call.outcome !== outcome) return false;
  return true;
}

// A log line's time (ISO, the machine's offset) in this browser's time zone, as every other time on
// the page is: a call and the change it made show the same clock.
function clock(iso) {
  const when = new Date(iso || "");
  if (Number.isNaN(when.getTime())) return (iso || "").slice(11, 23);
  return `${when.toLocaleTimeString([], { hour12: false })}.${String(when.getMilliseconds()).padStart(3, "0")}`;
}

function callRow(call) {
  const who = `${call.client || (call.source === "host" ? "host" : "daemon")} ${call.pid}${call.machine ? " via " + call.machine : ""}`;
  const what = call.hostTarget ? `${call.target} → ${call.hostTarget}` : call.target || call.method;
  const images = callImages(call, "thumb");
  const row = el("tr", { class: "call", tabindex: "0", "data-call": call.id, onclick: () => showCall(call.id),
    onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); showCall(call.id); } } },
    el("td", { text: clock(call.time), title: call.time || "" }),
    el("td", { text: who }),
    el("td", {}, what, call.document ? ` (${call.document})` : "", ...images),
    el("td", { text: call.host || "" }),
    el("td", { class: call.outcome, text: call.method.startsWith("policy/") ? `${call.method.slice(7)}: ${call.outcome}` : call.outcome }),
    el("td", { text: call.durationMs ?? "" }),
    el("td", { text: call.undoStep ? `${call.undoStep}${call.callId ? " (" + call.callId + ")" : ""}` : "" }));
  return row;
}

// The pictures of an answer, inline: the daemon keeps the last answers' ones (`imagesKey`); an
// image it no longer keeps, or one another daemon answered, is named by its type and size.
function callImages(call, kind) {
  return (call.images || []).map((i, n) => {
    const said = `[image ${i.mimeType || ""} ${Math.round((i.length || 0) / 1024)} KB]`;
    if (!call.imagesKey) return ` ${said}`;
    const img = el("img", { class: kind, loading: "lazy", src: `${API}/images/${encodeURIComponent(call.imagesKey)}/${n}`,
      alt: `Picture ${n + 1} of the answer (${i.mimeType || "image"}, ${Math.round((i.length || 0) / 1024)} KB)` });
    img.addEventListener("error", () => img.replaceWith(` ${said} no longer kept`), { once: true });
    return img;
  });
}

function renderCalls() {
  $("call-rows").replaceChildren(...state.calls.filter(callShown).slice(0, MAX_ROWS).map(callRow));
}

function addCall(call) {
  state.calls.unshift(call);
  state.calls.length = Math.min(state.calls.length, 1000);
  if (callShown(call)) {
    $("call-rows").prepend(callRow(call));
    const rows = $("call-rows");
    while (rows.children.length > MAX_ROWS) rows.lastChild.remove();
  }
  if (call.undoStep) markTouched(call);
}

async function showCall(id) {
  const dialog = $("call-dialog");
  $("call-dialog-body").textContent = "…";
  $("call-dialog-images").replaceChildren();
  dialog.showModal();
  try {
    const whole = await getJSON(`/calls/${id}`);
    $("call-dialog-title").textContent = `${whole.method} ${whole.outcome}: ${whole.hostTarget || whole.target || ""}`;
    $("call-dialog-body").textContent = JSON.stringify(whole.line, null, 2);
    $("call-dialog-images").replaceChildren(...callImages(whole, "whole"));
  } catch (err) {
    $("call-dialog-body").textContent = String(err.message || err);
  }
}

// -- approvals -----------------------------------------------------------------------------
function renderApprovals(items) {
  state.approvals = items;
  $("approvals-empty").hidden = items.length > 0;
  $("approval-count").textContent = items.length ? String(items.length) : "";
  $("approval-list").replaceChildren(...items.map((a) => {
    const call = a.call || {};
    const preview = call.preview || {};
    const changes = ["created", "modified", "deleted"].filter((k) => preview[k]).map((k) => `${k} ${preview[k].count || 0}`);
    const pictures = (a.pictures || []).map((data, i) => el("figure", {},
      el("img", { src: `data:image/png;base64,${data}`, alt: i === 0 ? "Before the change" : "After the change (previewed)" }),
      el("figcaption", { text: i === 0 ? "before" : "after" })));
    const what = `${call.capability || "the call"} on ${call.hostApp || "its host"}${call.document ? ` (${call.document})` : ""}`;
    const answer = async (verdict) => {
      $("approval-message").textContent = verdict === "accept" ? `Approved ${what}: it runs now…` : "";
      const done = await post("/approvals/answer", { approvalId: a.approvalId, answer: verdict });
      if (!done.ok) { $("approval-message").textContent = ""; alert(done.error); return; }
      $("approval-message").textContent = verdict === "decline" ? `Rejected ${what}: it did not run.`
        : done.outcome ? `Approved ${what}: it ${done.outcome}`
        : "outcome" in done ? `Approved ${what}: still running; its outcome shows in Calls when it ends.`
        : `Approved ${what}: it runs on its machine, its answer going to the agent that asked.`;
    };
    return el("li", { class: "approval", "data-approval": a.approvalId },
      el("h3", {}, `${call.capability || "a call"} on ${call.hostApp || ""} ${call.version || ""}`, call.document ? ` (${call.document})` : ""),
      changes.length ? el("p", { text: `Preview: ${changes.join(", ")}` }) : null,
      pictures.length ? el("div", { class: "pictures" }, ...pictures) : null,
      ...(preview.notes || []).map((note) => el("p", { class: "warn", text: note })),
      el("pre", { text: a.message }),
      el("p", { class: "muted" }, `daemon pid ${a.daemonPid} · `, ticking(Date.now() / 1000 + a.secondsLeft, "until"), " left, then it counts as no"),
      el("div", { class: "row" },
        el("button", { type: "button", class: "yes", onclick: () => answer("accept"), text: "Approve" }),
        el("button", { type: "button", class: "no", onclick: () => answer("decline"), text: "Reject" })));
  }));
}

// -- history -------------------------------------------------------------------------------
function renderCheckpoints(items) {
  state.checkpoints = items;
  $("history-empty").hidden = items.length > 0;
  $("checkpoint-table").hidden = items.length === 0;
  $("checkpoint-rows").replaceChildren(...items.slice().reverse().map((c) => el("tr", { "data-checkpoint": c.callId },
    el("td", { text: c.callId }), el("td", { text: c.at ? new Date(c.at * 1000).toLocaleString() : "" }),
    el("td", { text: c.client || "" }), el("td", { text: c.host }), el("td", { text: c.document }),
    el("td", { text: `${c.step || ""}${c.reverted ? " (reverted)" : ""}${c.hostRunning === false ? " (host gone)" : ""}` }),
    el("td", {}, c.reverted || c.hostRunning === false ? "" : el("div", { class: "row" },
      el("button", { type: "button", onclick: () => revert(c.callId, false), text: "Revert", "aria-label": `Revert ${c.callId}` }),
      el("button", { type: "button", onclick: () => revert(c.callId, true), text: "Revert since", "aria-label": `Revert ${c.callId} and every later call` }))))));
}

async function revert(callId, since) {
  const list = state.checkpoints || [];
  const at = list.findIndex((item) => item.callId === callId);
  const c = list[at] || {};
  const agent = callId.split("-")[0];  // the daemon the call went through: a since takes its later calls
  const calls = since ? list.slice(Math.max(at, 0)).filter((x) => !x.reverted && x.callId.split("-")[0] === agent) : [c];
  const places = [...new Set(calls.map((x) => `${x.document || "its document"} (${x.host || "its host"})`))];
  const what = since
    ? `${callId} and every later call through the same agent, ${calls.length} call(s),`
    : `${callId} (${c.step || c.target || "its change"})`;
  const where = places.length > 1 ? `in each of ${places.length} documents: ${places.join("; ")}` : `in ${places[0]}`;
  if (!window.confirm(`Revert ${what} ${where}? Its steps are undone there.`)) return;
  const answer = await post("/revert", { callId, since });
  $("history-message").textContent = answer.ok
    ? `Reverted ${answer.reverted.join(", ")}: ${answer.undone.map((u) => `${u.document} back ${u.steps} step(s)${u.note ? ` (${u.note})` : ""}`).join("; ")}`
    : `Nothing was reverted: ${answer.error}`;
}

// -- catalog -------------------------------------------------------------------------------
async function searchCatalog(event) {
  event.preventDefault();
  const q = $("catalog-query").value;
  const answer = await getJSON(`/catalog?q=${encodeURIComponent(q)}`);
  const items = answer.items || [];
  $("catalog-list").replaceChildren(...(items.length ? items.map((i) => el("li", {},
    el("strong", { text: i.title || i.target }), ` · ${i.kind} · ${i.hostApp} ${i.version}`,
    el("br"), el("span", { text: i.description }),
    i.why ? el("p", { class: "muted", text: `why: ${i.why}` }) : null,
    i.argsHint ? el("code", { text: i.argsHint }) : null))
    : [el("li", { class: "muted", text: (answer.guidance && answer.guidance.message) || answer.error || "Nothing matched." })]));
}

// -- live ----------------------------------------------------------------------------------
async function reload() {
  const all = await getJSON("/state");
  renderHosts(all);
  state.calls = all.calls || [];
  renderCalls();
  renderApprovals(all.approvals || []);
  renderCheckpoints(all.checkpoints || []);
}

const GONE = "No daemon serves this page now (the one that did has exited): what it shows may be out of date, "
  + "and its buttons are off. It comes back by itself when another daemon takes the page over, or run `cadmcp dashboard`.";

const RETRY_MS = 3000;

// The page while no daemon answers: its buttons off (an approval clicked then would do nothing).
function offline(on) {
  document.body.classList.toggle("offline", on);
  for (const button of document.querySelectorAll("button:not(#call-dialog-close)")) {
    if (on && !button.disabled) { button.disabled = true; button.dataset.offline = "1"; }
    if (!on && button.dataset.offline) { button.disabled = false; delete button.dataset.offline; }
  }
}

// A hidden page lets go of its live stream a while after it is hidden, and takes it up again when
// shown: a browser opens at most six connections to one address, each open page's stream holds one,
// so with six pages a seventh one, or an Approve clicked, would wait for one to free.
const HIDDEN_GRACE_MS = 5000;
let stream = null;
let hiddenTimer = null;

document.addEventListener("visibilitychange", () => {
  clearTimeout(hiddenTimer);
  if (document.hidden) {
    hiddenTimer = setTimeout(() => {
      if (stream) { stream.close(); stream = null; $("live").textContent = "paused while this page is hidden"; }
    }, HIDDEN_GRACE_MS);
  } else if (!stream) {
    connect();
  }
});

function connect() {
  const events = new EventSource(`${API}/events`);
  stream = events;
  events.addEventListener("hello", () => { $("live").textContent = "live"; offline(false); reload(); });
  events.addEventListener("resync", reload);
  events.addEventListener("call", (e) => addCall(JSON.parse(e.data)));
  events.addEventListener("hosts", (e) => renderHosts(JSON.parse(e.data)));
  events.addEventListener("approvals", (e) => renderApprovals(JSON.parse(e.data)));
  events.addEventListener("checkpoints", (e) => renderCheckpoints(JSON.parse(e.data)));
  events.addEventListener("view", (e) => { const v = JSON.parse(e.data); refreshView(v.instanceId, v.revision); showMarks(v); });
  events.onerror = async () => {
    $("live").textContent = "reconnecting…";
    const answer = await fetch(`${API}/state`, { credentials: "same-origin" }).catch(() => null);
    if (!answer || (answer.status !== 200 && answer.status !== 401 && answer.status !== 403)) {
      // nobody listens, or something else does (another program took the port): what the page shows
      // is as it was, and its buttons would do nothing. A stream answered by another program is
      // not retried by the browser: try again now and then until a daemon serves the page.
      $("live").textContent = GONE;
      offline(true);
      if (events.readyState === EventSource.CLOSED && stream === events) setTimeout(connect, RETRY_MS);
      return;
    }
    if (answer && (answer.status === 401 || answer.status === 403)) {  // the daemon restarted, or the login ended
      events.close();
      $("live").textContent = "Not logged in any more (the daemon restarted?): run `cadmcp dashboard` and open the new link it prints.";
      $("host-list").replaceChildren();
      $("view-list").replaceChildren();
    }
  };
}

document.addEventListener("DOMContentLoaded", () => {
  for (const id of ["filter-host", "filter-outcome", "filter-side"]) $(id).addEventListener("change", renderCalls);
  $("catalog-form").addEventListener("submit", searchCatalog);
  $("call-dialog-close").addEventListener("click", () => $("call-dialog").close());
  reload().catch((err) => { $("live").textContent = String(err.message || err); });
  connect();
});
