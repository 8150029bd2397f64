// canvasd web UI. Plain JavaScript, no build step, no external network.
// It is a client of the public API like any other: it reads the snapshot,
// follows /sse/canvas/{id} (EventSource resumes with Last-Event-ID by
// itself), applies each commit's changes to its model, and writes only by
// sending commands with base_rev = the last revision it applied.
//
// All user text reaches the page through textContent or setAttribute: data
// is never parsed as HTML.

import { Model, nodeBounds, nodeCenter, exitPoint } from "./model.js";
import { renderPNG, validBox } from "./capture.js";

const SVG = "http://www.w3.org/2000/svg";
const XHTML = "http://www.w3.org/1999/xhtml";
const TOKEN_KEY = "canvasd.token";

const $ = (id) => document.getElementById(id);

/** Creates an HTML element; children that are strings become text nodes. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c);
  return el;
}

/** Creates an SVG element with attributes. */
function s(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    el.setAttribute(k, String(v));
  }
  return el;
}

/** An HTML block inside SVG (wrapped text). */
function fo(x, y, w, hgt, child) {
  const f = s("foreignObject", { x, y, width: Math.max(w, 1), height: Math.max(hgt, 1) });
  f.append(child);
  return f;
}

function xdiv(cls, text) {
  const d = document.createElementNS(XHTML, "div");
  d.setAttribute("class", cls);
  if (text !== undefined) d.textContent = text;
  return d;
}

// TLDraw's palette; unknown colors fall back to black (never passed through).
const COLORS = {
  black: "#1d1d1d", grey: "#9fa8b2", "light-violet": "#e085f4", violet: "#ae3ec9", blue: "#4465e9",
  "light-blue": "#4ba1f1", yellow: "#f1ac4b", orange: "#e16919", green: "#099268", "light-green": "#4cb05e",
  "light-red": "#f87777", red: "#e03131", white: "#ffffff",
};
const NOTE_FILLS = {
  black: "#e8e8e8", grey: "#e9ecef", "light-violet": "#f5d9fb", violet: "#ead7f3", blue: "#d9e1fb",
  "light-blue": "#d8ebfc", yellow: "#fde9a8", orange: "#fbdcc8", green: "#c9ecdf", "light-green": "#d6efd9",
  "light-red": "#fddcdc", red: "#f9d2d2", white: "#ffffff",
};
const STROKES = { s: 2, m: 3.5, l: 5, xl: 10 };
const FONT_SIZES = { s: 14, m: 18, l: 24, xl: 32 };

const color = (p, def = "black") => COLORS[p && p.color] || COLORS[def];
const strokeW = (p) => STROKES[p && p.size] || 2;
const fontSize = (p, def = 16) => FONT_SIZES[p && p.size] || def;
const num = (v, d = 0) => (typeof v === "number" && isFinite(v) ? v : d);
const str = (v) => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v));

function fillFor(p) {
  const c = color(p);
  switch (p && p.fill) {
    case "solid": return { fill: NOTE_FILLS[p.color] || "#e8e8e8", opacity: 1 };
    case "semi": return { fill: NOTE_FILLS[p.color] || "#e8e8e8", opacity: 0.6 };
    case "pattern": return { fill: c, opacity: 0.15 };
    case "fill": return { fill: c, opacity: 1 };
    default: return { fill: "none", opacity: 1 };
  }
}

/** A stable colour per actor, for cursors. */
function actorColor(id) {
  let x = 0;
  for (const ch of id) x = (x * 31 + ch.charCodeAt(0)) >>> 0;
  return `hsl(${x % 360} 70% 45%)`;
}

function randomId() {
  const b = new Uint8Array(9);
  crypto.getRandomValues(b);
  return Array.from(b, (v) => v.toString(16).padStart(2, "0")).join("");
}

// ---------------------------------------------------------------- state

const state = {
  token: "",
  canvases: [],
  canvasId: "",
  model: null,
  loading: false, // a snapshot read is in flight: commits are queued
  queue: [],
  es: null,
  esGen: 0,
  retry: 0,
  retryTimer: 0,
  conn: "idle",
  view: { x: 0, y: 0, z: 1 },
  fitted: false,
  selection: new Set(),
  overrides: new Map(), // id → {x, y, until}: local positions of dragged nodes until the commit arrives
  drag: null,
  pan: null,
  editing: null,
  cursors: new Map(), // actor_id → {x, y, t, selection}
  me: "", // our actor id, learnt from our own commits or gestures
  myCmds: new Set(),
  sentCursors: [],
  cursorOut: null,
  cursorTimer: 0,
  renderQueued: false,
  agentSession: "", // the agent session this page started and that has not ended
  endedSessions: new Set(), // sessions whose terminal agent:status this page saw
};

// ---------------------------------------------------------------- API

class HTTPError extends Error {
  constructor(status, body) {
    super((body && (body.detail || body.title)) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + state.token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new HTTPError(0, { detail: "network error: " + err.message });
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { detail: text.slice(0, 200) }; }
  if (res.status === 401) {
    localStorage.removeItem(TOKEN_KEY);
    askToken((data && data.detail) || "The token was refused.");
  }
  return { status: res.status, data };
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------- token

function askToken(message) {
  const dlg = $("token-dialog");
  $("token-error").hidden = !message;
  $("token-error").textContent = message || "";
  $("token-input").value = "";
  if (!dlg.open) dlg.showModal();
}

$("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  $("token-dialog").close();
  const tok = $("token-input").value.trim();
  if (!tok) return;
  localStorage.setItem(TOKEN_KEY, tok);
  state.token = tok;
  start();
});

$("signout").addEventListener("click", () => {
  localStorage.removeItem(TOKEN_KEY);
  state.token = "";
  closeStream();
  askToken("");
});

// ---------------------------------------------------------------- canvases

async function refreshCanvases() {
  const r = await api("GET", "/api/canvases");
  if (r.status !== 200) {
    if (r.status !== 401) toast("Could not list canvases: " + ((r.data && r.data.detail) || r.status), "bad");
    return;
  }
  state.canvases = (r.data && r.data.canvases) || [];
  renderCanvasList();
}

function renderCanvasList() {
  const ul = $("canvas-list");
  ul.replaceChildren();
  for (const c of state.canvases) {
    const li = h("li", { "data-canvas-id": c.canvas_id, class: c.canvas_id === state.canvasId ? "active" : "" },
      h("span", { class: "ctitle", text: c.title || c.canvas_id }),
      h("span", { class: "cmeta", text: `${c.canvas_id} · rev ${c.head_rev}` }));
    li.addEventListener("click", () => { location.hash = "#/c/" + enc(c.canvas_id); });
    ul.append(li);
  }
  $("canvas-list-empty").hidden = state.canvases.length > 0;
}

$("new-canvas").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const title = $("new-canvas-title").value.trim();
  const r = await api("POST", "/api/canvases", { title: title || "Untitled canvas" });
  if (r.status !== 201) {
    toast("Could not create the canvas: " + ((r.data && r.data.detail) || r.status), "bad");
    return;
  }
  $("new-canvas-title").value = "";
  await refreshCanvases();
  location.hash = "#/c/" + enc(r.data.canvas_id);
});

function route() {
  const m = /^#\/c\/(.+)$/.exec(location.hash);
  const id = m ? decodeURIComponent(m[1]) : "";
  if (id !== state.canvasId) openCanvas(id);
}

window.addEventListener("hashchange", route);

// ---------------------------------------------------------------- canvas

async function openCanvas(id) {
  closeStream();
  cancelEdit();
  state.canvasId = id;
  state.model = null;
  state.selection.clear();
  state.overrides.clear();
  state.cursors.clear();
  state.fitted = false;
  $("activity").replaceChildren();
  $("agent-log").replaceChildren();
  $("agent-empty").hidden = false;
  setAgentRunning("");
  renderCanvasList();
  const c = state.canvases.find((x) => x.canvas_id === id);
  $("canvas-title").textContent = id ? (c && c.title) || id : "no canvas open";
  $("empty-hint").hidden = !!id;
  for (const l of ["layer-nodes", "layer-edges", "layer-selection", "layer-cursors"]) $(l).replaceChildren();
  nodeEls.clear();
  updateStatus();
  renderInspector();
  if (!id) return;
  if (await loadSnapshot()) connectStream();
}

/** Re-reads the snapshot; commits arriving meanwhile are queued and applied after. */
async function loadSnapshot() {
  const id = state.canvasId;
  state.loading = true;
  state.queue = [];
  let r;
  try {
    r = await api("GET", "/canvas_commands/snapshot/" + enc(id));
  } catch (err) {
    r = { status: 0, data: { detail: err.message } };
  }
  if (id !== state.canvasId) return false;
  state.loading = false;
  if (r.status !== 200) {
    toast("Could not read the canvas: " + ((r.data && r.data.detail) || r.status), "bad");
    return false;
  }
  const reloaded = !!state.model;
  state.model = new Model(r.data);
  state.overrides.clear();
  if (reloaded) {
    $("activity").prepend(h("li", {}, h("span", { class: "badge", text: "rev " + state.model.rev }), "snapshot re-read"));
  }
  for (const sel of [...state.selection]) if (!state.model.nodes.has(sel)) state.selection.delete(sel);
  const queued = state.queue;
  state.queue = [];
  for (const c of queued) onCommit(c);
  if (!state.fitted) {
    fitView();
    state.fitted = true;
  }
  scheduleRender();
  return true;
}

function closeStream() {
  state.esGen++;
  clearTimeout(state.retryTimer);
  if (state.es) state.es.close();
  state.es = null;
  setConn(state.canvasId ? "offline" : "idle");
}

function connectStream() {
  closeStream();
  const gen = state.esGen;
  const id = state.canvasId;
  const url = `/sse/canvas/${enc(id)}?access_token=${enc(state.token)}&last_event_id=${enc(state.model.resumeId())}`;
  const es = new EventSource(url);
  state.es = es;
  setConn("connecting");
  const live = (fn) => (ev) => { if (gen === state.esGen) fn(ev); };
  es.onopen = live(() => setConn("syncing"));
  es.addEventListener("canvas_commit", live((ev) => onCommit(JSON.parse(ev.data))));
  es.addEventListener("caught_up", live(() => { state.retry = 0; setConn("live"); }));
  es.addEventListener("reset", live(async () => {
    // The stream cannot be resumed: re-read the snapshot and start over from its head.
    closeStream();
    setConn("resyncing");
    if (await loadSnapshot()) connectStream();
  }));
  es.addEventListener("gesture", live((ev) => onGesture(JSON.parse(ev.data))));
  es.addEventListener("invoke", live((ev) => onInvoke(JSON.parse(ev.data))));
  for (const topic of ["agent:status", "agent:chat", "agent:action", "agent:screenshot_request"]) {
    es.addEventListener(topic, live((ev) => onAgent(topic, JSON.parse(ev.data))));
  }
  es.onerror = live(() => {
    if (es.readyState === EventSource.CLOSED) {
      // The browser gave up (e.g. an HTTP error): retry with backoff from where we are.
      setConn("offline");
      const delay = Math.min(30000, 1000 * 2 ** state.retry++);
      state.retryTimer = setTimeout(() => { if (gen === state.esGen && state.model) connectStream(); }, delay);
    } else {
      setConn("reconnecting"); // EventSource reconnects by itself, sending Last-Event-ID
    }
  });
}

function setConn(c) {
  state.conn = c;
  const el = $("conn");
  el.textContent = c;
  el.className = "conn conn-" + c;
}

function onCommit(c) {
  if (!state.model || c.canvas_id && c.canvas_id !== state.canvasId) return;
  if (state.loading) {
    state.queue.push(c);
    return;
  }
  let res;
  try {
    res = state.model.apply(c);
  } catch (err) {
    console.error("canvasd: commit did not apply", c.rev, err);
    res = "gap";
  }
  if (res === "old") return;
  if (res === "gap") {
    // A revision is missing: re-read (the stream keeps running; older commits are skipped).
    loadSnapshot();
    return;
  }
  if (state.myCmds.has(c.cmd_id)) state.me = c.actor_id;
  for (const [id, o] of state.overrides) if (o.until <= state.model.rev) state.overrides.delete(id);
  for (const ch of c.changes || []) if (ch.op === "delete" && ch.kind === "node") state.selection.delete(ch.id);
  logActivity(c);
  scheduleRender();
}

function logActivity(c) {
  const ul = $("activity");
  const who = c.actor_id === state.me ? "you" : c.actor_id;
  ul.prepend(h("li", {}, h("span", { class: "badge", text: "rev " + c.rev }), str(c.type) + " ",
    h("span", { class: "who", text: `by ${who} · ${(c.changes || []).length} change(s)` })));
  while (ul.children.length > 60) ul.lastChild.remove();
}

function onAgent(topic, d) {
  const ul = $("agent-log");
  const sid = str(d.sessionId).slice(0, 8);
  let li;
  if (topic === "agent:status") {
    const detail = typeof d.detail === "string" ? d.detail : d.detail ? JSON.stringify(d.detail) : "";
    li = h("li", {}, h("span", { class: "badge " + str(d.state), text: str(d.state) }),
      h("span", { class: "who", text: sid ? `session ${sid} ` : "" }), detail);
  } else if (topic === "agent:chat") {
    const m = d.message || {};
    li = h("li", {}, h("span", { class: "who", text: `${str(m.role) || "agent"}${sid ? " · " + sid : ""}: ` }), str(m.text));
  } else if (topic === "agent:screenshot_request") {
    li = h("li", {}, h("span", { class: "badge", text: "screenshot" }),
      h("span", { class: "who", text: sid ? `session ${sid} ` : "" }), "requested a picture of the view");
  } else {
    if (d.partial) return; // previews; the complete envelope follows
    const names = (d.actions || []).map((a) => str(a.name)).join(", ");
    li = h("li", {}, h("span", { class: "badge", text: "actions" }), names || "(none)");
  }
  ul.prepend(li);
  while (ul.children.length > 200) ul.lastChild.remove();
  $("agent-empty").hidden = true;
  if (topic === "agent:status" && d.sessionId && TERMINAL.has(d.state)) {
    state.endedSessions.add(d.sessionId);
    if (state.endedSessions.size > 100) state.endedSessions.delete(state.endedSessions.values().next().value);
    if (d.sessionId === state.agentSession) setAgentRunning("");
  }
}

// ---------------------------------------------------------------- agent prompt

const TERMINAL = new Set(["done", "canceled", "error"]);

/** The part of the canvas on screen, in canvas coordinates. */
function currentViewport() {
  const r = stageRect(), v = state.view;
  const round = (x) => Math.round(x * 100) / 100;
  return { x: round(-v.x / v.z), y: round(-v.y / v.z), w: round(Math.max(1, r.width) / v.z), h: round(Math.max(1, r.height) / v.z) };
}

/** The selected ids that exist on the canvas. */
function currentSelection() {
  return [...state.selection].filter((id) => state.model && state.model.nodes.has(id)).slice(0, 1000);
}

/** Marks sid as this page's running agent session ("" when none). */
function setAgentRunning(sid) {
  state.agentSession = sid;
  const form = $("agent-form");
  form.dataset.sessionId = sid || form.dataset.sessionId || "";
  form.classList.toggle("running", !!sid);
  $("agent-run").disabled = !!sid;
  $("agent-stop").hidden = !sid;
}

$("agent-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $("agent-prompt");
  const message = input.value.trim();
  if (!message || !state.model || state.agentSession) return;
  const canvasId = state.canvasId;
  const body = { roomId: canvasId, message, viewport: currentViewport(), selection: currentSelection() };
  $("agent-run").disabled = true;
  // Shown before the request: the run's first events may arrive before its 202.
  const mine = h("li", { class: "mine" }, h("span", { class: "who", text: "you: " }), message);
  $("agent-log").prepend(mine);
  $("agent-empty").hidden = true;
  const r = await api("POST", "/api/canvas-agent/run", body);
  if (canvasId !== state.canvasId) return;
  if (r.status !== 202 || !r.data || !r.data.session_id) {
    mine.remove();
    $("agent-empty").hidden = $("agent-log").children.length > 0;
    $("agent-run").disabled = false;
    if (r.status !== 401) toast("The agent did not start: " + ((r.data && r.data.detail) || r.status), "bad");
    return;
  }
  input.value = "";
  setAgentRunning(r.data.session_id);
  if (state.endedSessions.has(r.data.session_id)) setAgentRunning(""); // it ended before its 202 arrived
});

$("agent-prompt").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
    ev.preventDefault();
    $("agent-form").requestSubmit();
  }
});

$("agent-stop").addEventListener("click", async () => {
  const sid = state.agentSession;
  if (!sid) return;
  const r = await api("POST", `/api/canvas-agent/sessions/${enc(sid)}/cancel`, {});
  if (r.status === 200 || r.status === 404) setAgentRunning("");
  else if (r.status !== 401) toast("Could not stop the agent: " + ((r.data && r.data.detail) || r.status), "bad");
});

// ---------------------------------------------------------------- server→browser calls

/**
 * Answers an invoke from the server (POST /api/invoke/{invoke_id}). Only a
 * fixed set of actions is supported; nothing in the payload is evaluated.
 */
async function onInvoke(inv) {
  if (!inv || typeof inv.invoke_id !== "string" || !inv.invoke_id) return;
  const canvasId = state.canvasId;
  let answer;
  try {
    answer = { ok: true, result: await invokeAction(str(inv.action), inv.payload || {}) };
  } catch (err) {
    answer = { ok: false, error: str(err && err.message) || "the page could not run the action" };
  }
  if (canvasId !== state.canvasId) return;
  try {
    await fetch(`/api/invoke/${enc(inv.invoke_id)}`, {
      method: "POST", headers: { Authorization: "Bearer " + state.token, "Content-Type": "application/json" },
      body: JSON.stringify(answer),
    });
  } catch (err) {
    console.warn("canvasd: invoke answer not sent", err); // the server times the invoke out
  }
}

async function invokeAction(action, payload) {
  if (!state.model) throw new Error("no canvas is loaded in this page");
  switch (action) {
    case "agent:screenshot":
    case "screenshot":
      return screenshot(payload);
    case "viewport":
      return { viewport: currentViewport(), zoom: state.view.z, docVersion: String(state.model.rev) };
    case "selection":
      return { selection: currentSelection(), docVersion: String(state.model.rev) };
    default:
      throw new Error(`unsupported action ${action}`);
  }
}

/**
 * A picture of the requested bounds (canvas coordinates; default: the
 * viewport), at most maxSize pixels (default 800 on the long side), as the
 * agent's Screenshot: {dataUrl, bounds, viewport, selection, docVersion}.
 */
async function screenshot(req) {
  const docVersion = String(state.model.rev);
  const viewport = currentViewport();
  const bounds = validBox(req.bounds) || viewport;
  render(); // the scene as of the model's revision
  const shot = await renderPNG($("stage"), ["layer-nodes", "layer-edges"], bounds, req.maxSize, "#fafaf8");
  return { dataUrl: shot.dataUrl, bounds, viewport, selection: currentSelection(), docVersion };
}

// ---------------------------------------------------------------- commands

/**
 * Sends one command with base_rev = the last revision applied. On 409 it
 * shows "conflict — reloaded" and re-reads the snapshot. Returns the 200
 * body or null.
 */
async function send(type, args) {
  if (!state.model) return null;
  const id = "cmd_ui_" + randomId();
  state.myCmds.add(id);
  if (state.myCmds.size > 500) state.myCmds.delete(state.myCmds.values().next().value);
  const canvasId = state.canvasId;
  const r = await api("POST", `/canvas_commands/${enc(canvasId)}/command`,
    { id, type, base_rev: state.model.rev, idempotency_key: id, args });
  if (canvasId !== state.canvasId) return null;
  if (r.status === 200) return r.data;
  if (r.status === 409) {
    toast("conflict — reloaded", "warn");
    await loadSnapshot();
    return null;
  }
  if (r.status !== 401) toast(`${type} failed: ${(r.data && r.data.detail) || r.status}`, "bad");
  // Undo any optimistic state for this command.
  state.overrides.clear();
  scheduleRender();
  return null;
}

async function createNote(wx, wy) {
  const res = await send("create_shape", { type: "note", x: Math.round(wx - 100), y: Math.round(wy - 100), props: { text: "", color: "yellow" } });
  if (!res || !res.created_ids || !res.created_ids.length) return;
  const nid = res.created_ids[0];
  state.selection = new Set([nid]);
  await waitForRev(res.current_rev);
  if (state.model && state.model.nodes.has(nid)) startEdit(nid);
}

/** Resolves once the model reached rev (the commit arrives over SSE), or after 3 s. */
function waitForRev(rev) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const tick = () => {
      if (!state.model || state.model.rev >= rev || performance.now() - t0 > 3000) resolve();
      else setTimeout(tick, 30);
    };
    tick();
  });
}

async function deleteSelection() {
  const ids = [...state.selection].filter((id) => state.model && state.model.nodes.has(id));
  if (!ids.length) return;
  state.selection.clear();
  scheduleRender();
  await send("delete_shape", { ids });
}

// ---------------------------------------------------------------- text editing

const EDITABLE = new Set(["note", "text", "geo", "doc"]);

function startEdit(id) {
  cancelEdit();
  const n = state.model && state.model.nodes.get(id);
  if (!n || !EDITABLE.has(n.type)) return;
  const ta = h("textarea", { id: "note-editor", "data-node-id": id, spellcheck: "false" });
  ta.value = str(n.props && n.props.text);
  const original = ta.value;
  state.editing = { id, ta, original };
  positionEditor();
  ta.addEventListener("keydown", (ev) => {
    ev.stopPropagation();
    if (ev.key === "Escape") { cancelEdit(); $("stage").focus(); }
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) ta.blur();
  });
  ta.addEventListener("blur", () => commitEdit());
  $("overlay").append(ta);
  ta.focus();
}

function positionEditor() {
  const ed = state.editing;
  if (!ed || !state.model) return;
  const n = state.model.nodes.get(ed.id);
  if (!n) { cancelEdit(); return; }
  const { x, y, z } = state.view;
  const w = Math.max(n.w || 0, 160), hh = Math.max(n.h || 0, 60);
  ed.ta.style.left = `${x + n.x * z}px`;
  ed.ta.style.top = `${y + n.y * z}px`;
  ed.ta.style.width = `${w * z}px`;
  ed.ta.style.height = `${hh * z}px`;
  ed.ta.style.fontSize = `${Math.max(10, fontSize(n.props, n.type === "doc" ? 12 : 18) * z)}px`;
}

function cancelEdit() {
  const ed = state.editing;
  if (!ed) return;
  state.editing = null;
  ed.ta.remove();
}

async function commitEdit() {
  const ed = state.editing;
  if (!ed) return;
  const text = ed.ta.value;
  cancelEdit();
  if (text === ed.original || !state.model || !state.model.nodes.has(ed.id)) return;
  await send("update_shape", { id: ed.id, props: { text } });
}

// ---------------------------------------------------------------- view

function stageRect() {
  return $("stage").getBoundingClientRect();
}

function toWorld(clientX, clientY) {
  const r = stageRect();
  const { x, y, z } = state.view;
  return { x: (clientX - r.left - x) / z, y: (clientY - r.top - y) / z };
}

function zoomAt(factor, cx, cy) {
  const v = state.view;
  const z = Math.min(8, Math.max(0.05, v.z * factor));
  const f = z / v.z;
  v.x = cx - (cx - v.x) * f;
  v.y = cy - (cy - v.y) * f;
  v.z = z;
  scheduleRender();
}

function fitView() {
  const r = stageRect();
  const nodes = state.model ? state.model.sorted() : [];
  if (!nodes.length || r.width < 10) {
    state.view = { x: r.width / 2 - 200, y: r.height / 2 - 150, z: 1 };
    scheduleRender();
    return;
  }
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const n of nodes) {
    const b = nodeBounds(n);
    minX = Math.min(minX, b.minX); minY = Math.min(minY, b.minY);
    maxX = Math.max(maxX, b.maxX); maxY = Math.max(maxY, b.maxY);
  }
  const pad = 60;
  const z = Math.min(1, Math.max(0.05, Math.min((r.width - 2 * pad) / Math.max(1, maxX - minX), (r.height - 2 * pad) / Math.max(1, maxY - minY))));
  state.view = { z, x: (r.width - (maxX - minX) * z) / 2 - minX * z, y: (r.height - (maxY - minY) * z) / 2 - minY * z };
  scheduleRender();
}

$("zoom-in").addEventListener("click", () => { const r = stageRect(); zoomAt(1.25, r.width / 2, r.height / 2); });
$("zoom-out").addEventListener("click", () => { const r = stageRect(); zoomAt(0.8, r.width / 2, r.height / 2); });
$("zoom-fit").addEventListener("click", () => fitView());
$("reload").addEventListener("click", async () => {
  if (state.canvasId && await loadSnapshot()) connectStream();
  refreshCanvases();
});

// ---------------------------------------------------------------- rendering

const nodeEls = new Map(); // id → {el, key}

function scheduleRender() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  requestAnimationFrame(() => {
    state.renderQueued = false;
    render();
  });
}

/** The node as displayed: with a local drag position when there is one. */
function shown(n) {
  const o = state.overrides.get(n.id);
  return o ? Object.assign({}, n, { x: o.x, y: o.y }) : n;
}

function render() {
  const { x, y, z } = state.view;
  $("world").setAttribute("transform", `translate(${x} ${y}) scale(${z})`);
  const wrap = $("stage-wrap");
  wrap.style.backgroundSize = `${24 * z}px ${24 * z}px`;
  wrap.style.backgroundPosition = `${x}px ${y}px`;
  const stage = $("stage");
  stage.dataset.zoom = String(z);
  stage.dataset.viewX = String(x);
  stage.dataset.viewY = String(y);
  $("zoom-label").textContent = Math.round(z * 100) + "%";
  updateStatus();
  positionEditor();
  if (!state.model) return;

  // Nodes, keyed, in z-order.
  const layer = $("layer-nodes");
  const seen = new Set();
  let prev = null;
  for (const n0 of state.model.sorted()) {
    const n = shown(n0);
    seen.add(n.id);
    const key = `${n.updated_rev}|${n.x}|${n.y}|${n.w}|${n.h}|${n.rotation}`;
    let rec = nodeEls.get(n.id);
    if (!rec || rec.key !== key) {
      const el = buildNode(n);
      if (rec) rec.el.replaceWith(el);
      rec = { el, key };
      nodeEls.set(n.id, rec);
    }
    const want = prev ? prev.nextSibling : layer.firstChild;
    if (want !== rec.el) layer.insertBefore(rec.el, want);
    prev = rec.el;
  }
  for (const [id, rec] of nodeEls) {
    if (!seen.has(id)) {
      rec.el.remove();
      nodeEls.delete(id);
    }
  }

  renderEdges();
  renderSelection();
  renderCursors();
  renderInspector();
}

function updateStatus() {
  $("rev").textContent = state.model ? String(state.model.rev) : "–";
  if (state.model) {
    const c = state.canvases.find((x) => x.canvas_id === state.canvasId);
    const li = c && [...$("canvas-list").children].find((el) => el.getAttribute("data-canvas-id") === c.canvas_id);
    if (li && c.head_rev !== state.model.rev) {
      c.head_rev = state.model.rev;
      li.querySelector(".cmeta").textContent = `${c.canvas_id} · rev ${c.head_rev}`;
    }
  }
  $("node-count").textContent = state.model ? String(state.model.nodes.size) : "0";
}

function buildNode(n) {
  const p = n.props || {};
  const w = Math.max(0, num(n.w)), hh = Math.max(0, num(n.h));
  const g = s("g", {
    class: `node node-${n.type}`, "data-id": n.id, "data-type": n.type,
    transform: `translate(${num(n.x)} ${num(n.y)})` + (n.rotation ? ` rotate(${(n.rotation * 180) / Math.PI})` : ""),
  });
  g.append(s("rect", { class: "hit", x: 0, y: 0, width: Math.max(w, 8), height: Math.max(hh, 8) }));
  switch (n.type) {
    case "note": {
      g.append(s("rect", { x: 0, y: 0, width: w, height: hh, rx: 4, fill: NOTE_FILLS[p.color] || NOTE_FILLS.yellow, filter: "url(#note-shadow)" }));
      const d = xdiv("label note", str(p.text));
      d.style.fontSize = fontSize(p, 18) + "px";
      g.append(fo(0, 0, w, hh, d));
      break;
    }
    case "text": {
      const d = xdiv("label text", str(p.text) || str(n.name));
      d.style.fontSize = fontSize(p, 20) + "px";
      d.style.color = color(p);
      g.append(fo(0, 0, Math.max(w, 20), Math.max(hh, 24), d));
      break;
    }
    case "frame": {
      g.append(s("rect", { x: 0, y: 0, width: w, height: hh, fill: "#ffffff", stroke: "#9fa8b2", "stroke-width": 1.5, rx: 2 }));
      const t = s("text", { class: "frame-label", x: 2, y: -6 });
      t.textContent = str(n.name) || "Frame";
      g.append(t);
      break;
    }
    case "group":
      g.append(s("rect", { x: -4, y: -4, width: w + 8, height: hh + 8, fill: "none", stroke: "#9fa8b2", "stroke-width": 1, "stroke-dasharray": "6 4", rx: 4 }));
      break;
    case "doc": {
      const card = xdiv("doc-card");
      const head = xdiv("doc-head", str(n.name) || "document");
      if (p.language) head.append(Object.assign(document.createElementNS(XHTML, "span"), { className: "doc-lang", textContent: str(p.language) }));
      const pre = document.createElementNS(XHTML, "pre");
      const lines = str(p.text).split("\n");
      const max = Math.max(1, Math.floor((hh - 34) / 15));
      lines.slice(0, max).forEach((line, i) => {
        const ln = document.createElementNS(XHTML, "span");
        ln.className = "ln";
        ln.textContent = String(i + 1);
        pre.append(ln, line.slice(0, 400) + "\n");
      });
      if (lines.length > max) pre.append("…");
      card.append(head, pre);
      g.append(fo(0, 0, w, hh, card));
      break;
    }
    case "arrow": {
      const a = pointOf(p.start, 0, 0), b = pointOf(p.end, w, hh);
      g.append(s("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, stroke: color(p), "stroke-width": strokeW(p), "stroke-linecap": "round" }));
      g.append(arrowHead(a, b, color(p), strokeW(p)));
      if (p.text) g.append(fo((a.x + b.x) / 2 - 80, (a.y + b.y) / 2 - 12, 160, 24, xdiv("label edge", str(p.text))));
      break;
    }
    case "line": {
      const pts = linePoints(p.points, w, hh);
      g.append(s("polyline", { points: pts.map((q) => `${q.x},${q.y}`).join(" "), fill: "none", stroke: color(p), "stroke-width": strokeW(p), "stroke-linecap": "round", "stroke-linejoin": "round" }));
      break;
    }
    case "draw": {
      const segs = Array.isArray(p.segments) ? p.segments : [];
      let drawn = 0;
      for (const seg of segs) {
        const pts = (seg && Array.isArray(seg.points) ? seg.points : []).filter((q) => q && isFinite(q.x) && isFinite(q.y));
        if (!pts.length) continue;
        drawn++;
        g.append(s("polyline", { points: pts.map((q) => `${q.x},${q.y}`).join(" "), fill: "none", stroke: color(p), "stroke-width": strokeW(p), "stroke-linecap": "round", "stroke-linejoin": "round" }));
      }
      if (!drawn) g.append(s("rect", { x: 0, y: 0, width: w, height: hh, fill: "none", stroke: "#c9ccd2", "stroke-dasharray": "4 4" }));
      break;
    }
    case "image": {
      const url = str(p.url || p.src);
      if (/^data:image\/(png|jpeg|gif|webp);base64,/.test(url)) {
        g.append(s("image", { href: url, x: 0, y: 0, width: w, height: hh, preserveAspectRatio: "xMidYMid meet" }));
      } else {
        g.append(s("rect", { x: 0, y: 0, width: w, height: hh, fill: "#eef0f3", stroke: "#c9ccd2" }));
        const t = s("text", { class: "placeholder", x: 8, y: 18 });
        t.textContent = "🖼 " + (str(n.name) || "image");
        g.append(t);
      }
      break;
    }
    default: // geo and anything unknown
      g.append(geoShape(str(p.geo) || "rectangle", w, hh, p));
      if (p.text || (n.type !== "geo" && n.name)) {
        const d = xdiv("label", str(p.text) || str(n.name));
        d.style.fontSize = fontSize(p, 18) + "px";
        g.append(fo(0, 0, w, hh, d));
      }
  }
  return g;
}

function pointOf(v, dx, dy) {
  if (v && typeof v === "object" && isFinite(v.x) && isFinite(v.y)) return { x: v.x, y: v.y };
  return { x: dx, y: dy };
}

function linePoints(points, w, hh) {
  let pts = [];
  if (Array.isArray(points)) pts = points;
  else if (points && typeof points === "object") {
    pts = Object.values(points).sort((a, b) => (str(a && a.index) < str(b && b.index) ? -1 : 1));
  }
  pts = pts.filter((q) => q && isFinite(q.x) && isFinite(q.y));
  return pts.length >= 2 ? pts : [{ x: 0, y: 0 }, { x: w, y: hh }];
}

function arrowHead(a, b, col, sw) {
  const ang = Math.atan2(b.y - a.y, b.x - a.x);
  const len = 8 + sw * 2.2;
  const p1 = { x: b.x - len * Math.cos(ang - 0.45), y: b.y - len * Math.sin(ang - 0.45) };
  const p2 = { x: b.x - len * Math.cos(ang + 0.45), y: b.y - len * Math.sin(ang + 0.45) };
  return s("path", { d: `M${p1.x},${p1.y} L${b.x},${b.y} L${p2.x},${p2.y}`, fill: "none", stroke: col, "stroke-width": sw, "stroke-linecap": "round", "stroke-linejoin": "round" });
}

function geoShape(geo, w, hh, p) {
  const f = fillFor(p);
  const attrs = { fill: f.fill, "fill-opacity": f.opacity, stroke: color(p), "stroke-width": strokeW(p), "stroke-linejoin": "round" };
  if (p.dash === "dashed") attrs["stroke-dasharray"] = `${strokeW(p) * 4} ${strokeW(p) * 3}`;
  if (p.dash === "dotted") attrs["stroke-dasharray"] = `0.1 ${strokeW(p) * 3}`, attrs["stroke-linecap"] = "round";
  const poly = (pts) => s("polygon", Object.assign({ points: pts.map(([x, y]) => `${x},${y}`).join(" ") }, attrs));
  switch (geo) {
    case "ellipse":
    case "oval":
      return s("ellipse", Object.assign({ cx: w / 2, cy: hh / 2, rx: w / 2, ry: hh / 2 }, attrs));
    case "triangle":
      return poly([[w / 2, 0], [w, hh], [0, hh]]);
    case "diamond":
    case "rhombus":
      return poly([[w / 2, 0], [w, hh / 2], [w / 2, hh], [0, hh / 2]]);
    case "hexagon":
      return poly([[w * 0.25, 0], [w * 0.75, 0], [w, hh / 2], [w * 0.75, hh], [w * 0.25, hh], [0, hh / 2]]);
    case "star": {
      const pts = [];
      for (let i = 0; i < 10; i++) {
        const r = i % 2 ? 0.4 : 1, a = -Math.PI / 2 + (i * Math.PI) / 5;
        pts.push([w / 2 + (w / 2) * r * Math.cos(a), hh / 2 + (hh / 2) * r * Math.sin(a)]);
      }
      return poly(pts);
    }
    default:
      return s("rect", Object.assign({ x: 0, y: 0, width: w, height: hh, rx: 3 }, attrs));
  }
}

function renderEdges() {
  const layer = $("layer-edges");
  layer.replaceChildren();
  const m = state.model;
  for (const e of m.edges.values()) {
    const a = m.nodes.get(e.from), b = m.nodes.get(e.to);
    if (!a || !b) continue;
    const na = shown(a), nb = shown(b);
    const ca = nodeCenter(na), cb = nodeCenter(nb);
    const p1 = exitPoint(nodeBounds(na), cb), p2 = exitPoint(nodeBounds(nb), ca);
    const p = e.props || {};
    const col = COLORS[p.color] || "#6b6f76";
    const g = s("g", { class: "edge", "data-edge-id": e.id });
    g.append(s("line", { x1: p1.x, y1: p1.y, x2: p2.x, y2: p2.y, stroke: col, "stroke-width": 2, "stroke-linecap": "round" }));
    g.append(arrowHead(p1, p2, col, 2));
    const label = str(p.label || p.text);
    if (label) g.append(fo((p1.x + p2.x) / 2 - 80, (p1.y + p2.y) / 2 - 11, 160, 22, xdiv("label edge", label)));
    layer.append(g);
  }
}

function renderSelection() {
  const layer = $("layer-selection");
  layer.replaceChildren();
  const z = state.view.z;
  for (const id of state.selection) {
    const n = state.model.nodes.get(id);
    if (!n) continue;
    const b = nodeBounds(shown(n));
    const pad = 4 / z;
    layer.append(s("rect", { x: b.minX - pad, y: b.minY - pad, width: b.maxX - b.minX + 2 * pad, height: b.maxY - b.minY + 2 * pad,
      fill: "none", stroke: "#4465e9", "stroke-width": 1.5 / z, "pointer-events": "none" }));
  }
  // Other people's selections, in their colour.
  for (const [actor, c] of state.cursors) {
    for (const id of c.selection || []) {
      const n = state.model.nodes.get(id);
      if (!n) continue;
      const b = nodeBounds(shown(n));
      const pad = 7 / z;
      layer.append(s("rect", { x: b.minX - pad, y: b.minY - pad, width: b.maxX - b.minX + 2 * pad, height: b.maxY - b.minY + 2 * pad,
        fill: "none", stroke: actorColor(actor), "stroke-width": 1.5 / z, "stroke-dasharray": `${4 / z} ${3 / z}`, "pointer-events": "none" }));
    }
  }
}

function renderCursors() {
  const layer = $("layer-cursors");
  layer.replaceChildren();
  const z = state.view.z;
  const now = performance.now();
  for (const [actor, c] of state.cursors) {
    if (now - c.t > 15000) {
      state.cursors.delete(actor);
      continue;
    }
    const col = actorColor(actor);
    const g = s("g", { class: "cursor", "data-actor": actor, transform: `translate(${c.x} ${c.y}) scale(${1 / z})`, "pointer-events": "none" });
    g.append(s("path", { d: "M0,0 L0,17 L4.5,13 L8,21 L11,19.5 L7.5,12 L13,12 Z", fill: col, stroke: "#fff", "stroke-width": 1.2 }));
    const label = actor.length > 24 ? actor.slice(0, 23) + "…" : actor;
    const bg = s("rect", { x: 12, y: 20, rx: 4, height: 17, width: 8 + label.length * 7, fill: col });
    const t = s("text", { class: "cursor-label", x: 16, y: 32 });
    t.textContent = label;
    g.append(bg, t);
    layer.append(g);
    const tw = t.getComputedTextLength();
    if (tw > 0) bg.setAttribute("width", String(tw + 8));
  }
}

setInterval(() => { if (state.cursors.size) scheduleRender(); }, 2000);

function renderInspector() {
  const box = $("inspector");
  const ids = [...state.selection].filter((id) => state.model && state.model.nodes.has(id));
  if (!ids.length) {
    box.className = "muted";
    box.replaceChildren("Nothing selected.");
    return;
  }
  box.className = "";
  if (ids.length > 1) {
    box.replaceChildren(`${ids.length} shapes selected. Delete removes them; drag moves them.`);
    return;
  }
  const n = state.model.nodes.get(ids[0]);
  const dl = h("dl");
  const row = (k, v) => dl.append(h("dt", { text: k }), h("dd", { text: v }));
  row("id", n.id);
  row("type", n.type);
  if (n.name) row("name", n.name);
  row("position", `${Math.round(n.x)}, ${Math.round(n.y)}`);
  row("size", `${Math.round(n.w)} × ${Math.round(n.h)}`);
  if (n.rotation) row("rotation", `${Math.round((n.rotation * 180) / Math.PI)}°`);
  if (n.parent_id) row("parent", n.parent_id);
  row("created", `rev ${n.created_rev} by ${n.created_by}`);
  row("updated", `rev ${n.updated_rev} by ${n.updated_by}`);
  let props = JSON.stringify(n.props || {}, null, 1);
  if (props.length > 2000) props = props.slice(0, 2000) + "…";
  box.replaceChildren(dl, h("pre", { text: props }));
}

// ---------------------------------------------------------------- gestures

function onGesture(g) {
  if (!g || !g.actor_id || !g.cursor) return;
  if (g.actor_id === state.me) return;
  // Our own cursor coming back: learn our actor id from it.
  const mine = state.sentCursors.find((c) => c.x === g.cursor.x && c.y === g.cursor.y);
  if (mine && !state.cursors.has(g.actor_id)) {
    state.me = g.actor_id;
    return;
  }
  state.cursors.set(g.actor_id, { x: num(g.cursor.x), y: num(g.cursor.y), t: performance.now(), selection: Array.isArray(g.selection) ? g.selection.slice(0, 200) : [] });
  scheduleRender();
}

/** Posts our cursor at most every 60 ms (the server throttles at 30 ms per actor). */
function postCursor(wx, wy) {
  if (!state.model || state.conn !== "live") return;
  state.cursorOut = { x: Math.round(wx * 10) / 10, y: Math.round(wy * 10) / 10 };
  if (state.cursorTimer) return;
  state.cursorTimer = setTimeout(flushCursor, 60);
}

function flushCursor() {
  state.cursorTimer = 0;
  const c = state.cursorOut;
  if (!c || !state.model) return;
  state.cursorOut = null;
  state.sentCursors.push(c);
  if (state.sentCursors.length > 20) state.sentCursors.shift();
  const r = stageRect(), v = state.view;
  const body = { cursor: c, selection: [...state.selection].slice(0, 1000),
    viewport: { x: -v.x / v.z, y: -v.y / v.z, w: r.width / v.z, h: r.height / v.z } };
  fetch(`/canvas_commands/${enc(state.canvasId)}/gesture`, {
    method: "POST", headers: { Authorization: "Bearer " + state.token, "Content-Type": "application/json" }, body: JSON.stringify(body),
  }).catch(() => {});
}

// ---------------------------------------------------------------- pointer and keyboard

const stage = $("stage");

function nodeAt(target) {
  const g = target && target.closest && target.closest("g.node");
  return g ? g.getAttribute("data-id") : "";
}

stage.addEventListener("pointerdown", (ev) => {
  if (!state.model || ev.button !== 0) return;
  if (state.editing) commitEdit();
  stage.focus();
  const id = nodeAt(ev.target);
  const w = toWorld(ev.clientX, ev.clientY);
  if (id) {
    if (ev.shiftKey) {
      if (state.selection.has(id)) state.selection.delete(id);
      else state.selection.add(id);
    } else if (!state.selection.has(id)) {
      state.selection = new Set([id]);
    }
    const ids = state.selection.has(id) ? [...state.selection] : [id];
    const orig = new Map();
    for (const i of ids) {
      const n = state.model.nodes.get(i);
      if (n) orig.set(i, shown(n));
    }
    state.drag = { start: w, sx: ev.clientX, sy: ev.clientY, orig, moved: false };
  } else {
    if (!ev.shiftKey) state.selection.clear();
    state.pan = { sx: ev.clientX, sy: ev.clientY, vx: state.view.x, vy: state.view.y };
    stage.classList.add("panning");
  }
  stage.setPointerCapture(ev.pointerId);
  scheduleRender();
});

stage.addEventListener("pointermove", (ev) => {
  const w = toWorld(ev.clientX, ev.clientY);
  postCursor(w.x, w.y);
  if (state.drag) {
    const d = state.drag;
    if (!d.moved && Math.hypot(ev.clientX - d.sx, ev.clientY - d.sy) < 3) return;
    d.moved = true;
    const dx = w.x - d.start.x, dy = w.y - d.start.y;
    for (const [id, n] of d.orig) state.overrides.set(id, { x: n.x + dx, y: n.y + dy, until: Infinity });
    scheduleRender();
  } else if (state.pan) {
    state.view.x = state.pan.vx + ev.clientX - state.pan.sx;
    state.view.y = state.pan.vy + ev.clientY - state.pan.sy;
    scheduleRender();
  }
});

async function endPointer(ev) {
  stage.classList.remove("panning");
  state.pan = null;
  const d = state.drag;
  state.drag = null;
  if (!d || !d.moved) return;
  const w = toWorld(ev.clientX, ev.clientY);
  const dx = Math.round(w.x - d.start.x), dy = Math.round(w.y - d.start.y);
  const ids = [...d.orig.keys()];
  for (const [id, n] of d.orig) state.overrides.set(id, { x: n.x + dx, y: n.y + dy, until: Infinity });
  scheduleRender();
  if (dx === 0 && dy === 0) {
    state.overrides.clear();
    return;
  }
  let res;
  if (ids.length === 1) {
    const n = d.orig.get(ids[0]);
    res = await send("move", { id: ids[0], x: n.x + dx, y: n.y + dy });
  } else {
    res = await send("move", { ids, dx, dy });
  }
  if (res) {
    // Keep the local position until the commit has been applied.
    for (const id of ids) {
      const o = state.overrides.get(id);
      if (o) o.until = res.current_rev;
    }
    if (state.model && state.model.rev >= res.current_rev) for (const id of ids) state.overrides.delete(id);
    scheduleRender();
  }
}

stage.addEventListener("pointerup", endPointer);
stage.addEventListener("pointercancel", endPointer);

stage.addEventListener("dblclick", (ev) => {
  if (!state.model) return;
  const id = nodeAt(ev.target);
  if (id) {
    startEdit(id);
    return;
  }
  const w = toWorld(ev.clientX, ev.clientY);
  createNote(w.x, w.y);
});

stage.addEventListener("wheel", (ev) => {
  ev.preventDefault();
  const r = stageRect();
  if (ev.ctrlKey || ev.metaKey) {
    zoomAt(Math.exp(-ev.deltaY * 0.0025), ev.clientX - r.left, ev.clientY - r.top);
  } else {
    state.view.x -= ev.deltaX;
    state.view.y -= ev.deltaY;
    scheduleRender();
  }
}, { passive: false });

document.addEventListener("keydown", (ev) => {
  const t = ev.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA") || $("token-dialog").open) return;
  const r = stageRect();
  switch (ev.key) {
    case "Delete":
    case "Backspace":
      ev.preventDefault();
      deleteSelection();
      break;
    case "Escape":
      state.selection.clear();
      scheduleRender();
      break;
    case "Enter": {
      const [id] = state.selection;
      if (id && state.selection.size === 1) { ev.preventDefault(); startEdit(id); }
      break;
    }
    case "+":
    case "=":
      zoomAt(1.25, r.width / 2, r.height / 2);
      break;
    case "-":
      zoomAt(0.8, r.width / 2, r.height / 2);
      break;
    case "0":
      fitView();
      break;
  }
});

window.addEventListener("resize", () => scheduleRender());

// ---------------------------------------------------------------- toasts

function toast(msg, kind = "") {
  const el = h("div", { class: "toast " + kind, role: "status", text: msg });
  $("toasts").append(el);
  setTimeout(() => el.remove(), 4500);
}

// ---------------------------------------------------------------- start

async function start() {
  if (!state.token) {
    askToken("");
    return;
  }
  await refreshCanvases();
  route();
}

(function boot() {
  const params = new URLSearchParams(location.search);
  const fromURL = params.get("access_token");
  if (fromURL) {
    localStorage.setItem(TOKEN_KEY, fromURL);
    // Do not leave the token in the address bar or the history.
    params.delete("access_token");
    const q = params.toString();
    history.replaceState(null, "", location.pathname + (q ? "?" + q : "") + location.hash);
  }
  state.token = localStorage.getItem(TOKEN_KEY) || "";
  start();
})();
