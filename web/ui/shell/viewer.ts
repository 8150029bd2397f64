// The viewer: canvasd's own page around a host session's pages, at
// /host/{session}/~{ticket}/__canvas__/. It shows the session's page (an
// agent-written file, or the built-in A2UI page when the session has no
// index.html) in a sandboxed frame, follows the session's stream
// (GET /sse/host/{session}: present, reload, a2ui, invoke), hands invokes to
// the page's runtime and returns its answers, and carries the page's bridge
// calls (sendAgentMessage, A2UI userActions, canvasd://agent links) to the
// API.
//
// It authenticates with the session's bridge capability, which the server
// put in this page's HTML (never in a URL): the capability opens only this
// session's stream, messages, userActions, agent links and the answers to
// its invokes. The page in the frame runs in an opaque origin and cannot
// read it.

import { TAG, isMsg, type A2UIMsg, type InvokeMsg, type ToPage, type ToViewer, type Untagged } from "./protocol";

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
const session = meta("canvasd-session");
const base = meta("canvasd-base"); // /host/{session}/~{ticket}/: the session's files, read with the page ticket
const cap = meta("canvasd-cap");
const maxImageBytes = Number(meta("canvasd-max-image")) || 10 << 20;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const frame = $<HTMLIFrameElement>("page");
const statusEl = $("status");
const titleEl = $("title");
const confirmDlg = $<HTMLDialogElement>("confirm");

function setStatus(state: string, text: string): void {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}

/** A toast at the bottom of the viewer. */
function note(text: string, kind: "ok" | "bad" | "" = "", ms = 6000): void {
  const box = $("notes");
  const el = document.createElement("div");
  el.className = "note " + kind;
  el.setAttribute("role", "status");
  el.textContent = text;
  box.append(el);
  if (ms > 0) setTimeout(() => el.remove(), ms);
}

// ---- API calls with the capability ----

interface Problem { status: number; title?: string; detail?: string; type?: string }

async function api(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(path, {
    method,
    headers: { Authorization: "Bearer " + cap, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
    credentials: "omit",
  });
  const text = await res.text();
  let data: unknown = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!res.ok) {
    const p = (data && typeof data === "object" ? data : {}) as Problem;
    const err = new Error(p.detail || p.title || `HTTP ${res.status}`) as Error & { problem?: Problem };
    err.problem = { ...p, status: res.status };
    throw err;
  }
  return data;
}

const enc = encodeURIComponent;

// ---- the page in the frame ----

let pagePath = ""; // the session path shown ("" = the session root)
let pageReady = false;
let pageIsA2UI = false;
const waiting: InvokeMsg[] = []; // invokes for the page until its runtime is ready
let generation = 0; // counts the documents that said ready in the frame
const forwarded = new Map<string, number>(); // invoke id → the generation of the document it went to

function toPage(msg: Untagged<ToPage>): void {
  frame.contentWindow?.postMessage({ ...msg, tag: TAG }, "*");
}

/** A session path as a URL path under the ticket ("" and "/" are the root). */
function pathURL(p: string): string {
  const [path, query] = splitQuery(p.replace(/^\/+/, ""));
  return base + path.split("/").map((s) => enc(s).replace(/%2F/gi, "/")).join("/") + query;
}

function splitQuery(p: string): [string, string] {
  const i = p.search(/[?#]/);
  return i < 0 ? [p, ""] : [p.slice(0, i), p.slice(i)];
}

/** Refuses paths that are not inside the session (the server refuses them too). */
function validPath(p: string): boolean {
  const [path] = splitQuery(p.replace(/^\/+/, ""));
  return !path.split("/").some((s) => s === ".." || s === "." || s.startsWith("~") && path.indexOf(s) === 0) && !/[\\\x00-\x1f]/.test(path);
}

function show(p: string): void {
  if (!validPath(p)) {
    note(`not a path of this session: ${p}`, "bad");
    return;
  }
  pagePath = p.replace(/^\/+/, "");
  pageReady = false;
  clearTimeout(reloadTimer); // this load shows the files as they are now
  frame.src = pathURL(pagePath);
  remember();
}

/** Records the page shown in the address bar (without any ticket), so a reload shows it again. */
function remember(): void {
  const u = new URL(location.href);
  if (pagePath) u.searchParams.set("page", pagePath);
  else u.searchParams.delete("page");
  history.replaceState(null, "", u.pathname + u.search);
}

window.addEventListener("message", (e) => {
  if (e.source !== frame.contentWindow || !isMsg(e.data)) return;
  const msg = e.data as ToViewer;
  switch (msg.type) {
    case "ready": {
      // The agent-link page passes its link on and the page comes back: it
      // is never the page shown.
      if (typeof msg.href === "string" && msg.href.startsWith(location.origin + base + "__canvas__/agent.html")) return;
      // A new document: what went to the one before it is lost.
      generation++;
      for (const [id, g] of forwarded) {
        if (g < generation) {
          forwarded.delete(id);
          void answerInvoke(id, false, "the page navigated away before it answered");
        }
      }
      pageReady = true;
      const origin = location.origin + base;
      if (typeof msg.href === "string" && msg.href.startsWith(origin)) {
        let p = msg.href.slice(origin.length).replace(/#.*$/, "");
        try { p = decodeURI(p); } catch { /* keep it encoded */ }
        if (!p.startsWith("__canvas__/")) pagePath = p;
        remember();
      }
      pageIsA2UI = msg.a2ui === true;
      titleEl.textContent = msg.title ? `${session} · ${msg.title}` : session;
      document.body.dataset.page = pageIsA2UI ? "a2ui" : "file";
      toPage({ type: "hello", session, maxImageBytes });
      if (pageIsA2UI) toPage({ type: "a2ui", reset: true, messages: a2uiLog.slice() });
      for (const inv of waiting.splice(0)) forward(inv);
      break;
    }
    case "answer":
      if (!forwarded.delete(msg.invokeId)) return; // not an invoke this page was given
      void answerInvoke(msg.invokeId, msg.ok, msg.ok ? msg.result : msg.error);
      break;
    case "call":
      void bridgeCall(msg.id, msg.method, msg.args);
      break;
  }
});

async function bridgeCall(id: number, method: string, args: Record<string, unknown>): Promise<void> {
  const reply = (ok: boolean, v: unknown) => toPage(ok ? { type: "reply", id, ok, result: v } : { type: "reply", id, ok, error: String(v) });
  try {
    switch (method) {
      case "message": {
        const body: Record<string, unknown> = { prompt: args.prompt, source: "applet" };
        if (typeof args.imageData === "string") body.imageData = args.imageData;
        if (typeof args.appletSlug === "string" && args.appletSlug) body.appletSlug = args.appletSlug;
        reply(true, await api("POST", `/api/host/${enc(session)}/messages`, body));
        break;
      }
      case "action":
        reply(true, await api("POST", `/api/host/${enc(session)}/actions`, { userAction: args.userAction }));
        break;
      case "deeplink":
        if (args.restore === true) show(pagePath); // the agent-link page: the page that followed the link comes back
        reply(true, await deepLink(String(args.url ?? "")));
        break;
      default:
        reply(false, `unknown bridge call ${method}`);
    }
  } catch (err) {
    reply(false, (err as Error).message);
  }
}

// ---- canvasd://agent?message=...&key=... ----

async function deepLink(raw: string): Promise<unknown> {
  let u: URL;
  try { u = new URL(raw); } catch { throw new Error(`not a URL: ${raw}`); }
  if (u.protocol !== "canvasd:" || u.host !== "agent") throw new Error("only canvasd://agent?message=... links start the agent");
  const message = u.searchParams.get("message") ?? "";
  if (!message.trim()) throw new Error("the link has no message (canvasd://agent?message=...)");
  const key = u.searchParams.get("key") ?? "";
  const path = `/api/host/${enc(session)}/agent-link`;
  try {
    const out = await api("POST", path, key ? { message, key } : { message });
    note("The agent is on it: " + message.slice(0, 120), "ok");
    return out;
  } catch (err) {
    if ((err as { problem?: Problem }).problem?.status !== 428) throw err;
  }
  // Without a valid key the person decides.
  if (!(await confirmRun(message))) throw new Error("the person declined to run the agent");
  const out = await api("POST", path, { message, confirmed: true });
  note("The agent is on it: " + message.slice(0, 120), "ok");
  return out;
}

function confirmRun(message: string): Promise<boolean> {
  $("confirm-message").textContent = message;
  document.body.dataset.confirming = "1";
  confirmDlg.showModal();
  return new Promise((resolve) => {
    confirmDlg.addEventListener("close", () => {
      delete document.body.dataset.confirming;
      resolve(confirmDlg.returnValue === "run");
    }, { once: true });
  });
}

// ---- invokes ----

function forward(inv: InvokeMsg): void {
  forwarded.set(inv.invokeId, generation);
  toPage({ type: "invoke", invokeId: inv.invokeId, action: inv.action, payload: inv.payload, timeoutMs: inv.timeoutMs });
  setTimeout(() => forwarded.delete(inv.invokeId), inv.timeoutMs + 1000);
}

async function answerInvoke(id: string, ok: boolean, value: unknown): Promise<void> {
  try {
    await api("POST", `/api/invoke/${enc(id)}`, ok ? { ok: true, result: value ?? null } : { ok: false, error: value ?? "failed" });
  } catch (err) {
    console.warn("canvasd viewer: answering invoke", id, err);
  }
}

function onInvoke(req: { invoke_id: string; action: string; payload?: unknown; timeout_ms?: number }): void {
  const inv: InvokeMsg = { tag: TAG, type: "invoke", invokeId: req.invoke_id, action: req.action, payload: req.payload ?? null, timeoutMs: req.timeout_ms ?? 10000 };
  if (pageReady) forward(inv);
  else {
    waiting.push(inv);
    setTimeout(() => {
      const i = waiting.indexOf(inv);
      if (i >= 0) waiting.splice(i, 1);
    }, inv.timeoutMs);
  }
}

// ---- present and reload ----

function present(p: { action: string; path?: string }): void {
  if (p.action === "hide") {
    document.body.classList.add("hidden-by-agent");
    return;
  }
  document.body.classList.remove("hidden-by-agent");
  if (p.action === "navigate" || (p.path !== undefined && p.path !== "")) show(p.path === "/" ? "" : p.path ?? "");
}

let reloadTimer = 0;
function reload(ev: { path?: string }): void {
  const changed = ev.path ?? "";
  // The A2UI page stands for a session without index.html; one appeared.
  if (pageIsA2UI && pagePath === "" && !/^index\.html?$/.test(changed)) return;
  clearTimeout(reloadTimer);
  reloadTimer = window.setTimeout(() => {
    pageReady = false;
    frame.src = pathURL(pagePath);
  }, 50);
}

// ---- the stream ----

let a2uiLog: unknown[] = [];

function onEvent(name: string, data: string): void {
  let v: unknown;
  try { v = JSON.parse(data); } catch { return; }
  switch (name) {
    case "a2ui":
      a2uiLog.push(v);
      if (pageReady && pageIsA2UI) toPage({ type: "a2ui", reset: false, messages: [v] });
      break;
    case "present":
      present(v as { action: string; path?: string });
      break;
    case "reload":
      reload(v as { path?: string });
      break;
    case "invoke":
      onInvoke(v as { invoke_id: string; action: string });
      break;
    case "reset":
      throw new Error("reset"); // reconnect: the server replays the surfaces
  }
}

async function follow(): Promise<void> {
  let failures = 0;
  for (;;) {
    try {
      const res = await fetch(`/sse/host/${enc(session)}`, {
        headers: { Authorization: "Bearer " + cap, Accept: "text/event-stream" },
        cache: "no-store",
        credentials: "omit",
      });
      if (res.status === 401 || res.status === 403) {
        const p = (await res.json().catch(() => ({}))) as Problem;
        setStatus("error", `not allowed: ${p.detail || res.status}; reopen /host/${session}/ with a token`);
        return;
      }
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      a2uiLog = [];
      if (pageReady && pageIsA2UI) toPage({ type: "a2ui", reset: true, messages: [] });
      setStatus("open", "connected");
      failures = 0;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "", name = "", data: string[] = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let nl: number;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, "");
          buf = buf.slice(nl + 1);
          if (line === "") {
            if (data.length) onEvent(name || "message", data.join("\n"));
            name = "";
            data = [];
          } else if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
      }
    } catch (err) {
      if ((err as Error).message !== "reset") failures++;
    }
    setStatus("reconnecting", "disconnected, retrying…");
    await new Promise((r) => setTimeout(r, Math.min(10000, 250 * 2 ** Math.min(failures, 6))));
  }
}

// ---- navigations the frame's policy refused ----

// A page that tries to take the frame out of its session's files (to the
// API, another session, another site) gets an error page in the frame; the
// viewer shows the page again and says why.
// The refused navigation still ends in that error page; the page is loaded
// again once it has (or after a moment, should its load event not come).
let restoring = 0;
let refused = 0;
document.addEventListener("securitypolicyviolation", (e) => {
  if (e.effectiveDirective !== "frame-src") return;
  refused++;
  note(`the page tried to leave its session${e.blockedURI ? " for " + e.blockedURI : ""}; links to other sites open in a new tab`, "bad");
  pageReady = false;
  clearTimeout(restoring);
  restoring = window.setTimeout(() => { restoring = 0; show(pagePath); }, 1000);
});
frame.addEventListener("load", () => {
  if (!restoring) return;
  clearTimeout(restoring);
  restoring = 0;
  show(pagePath);
});

// ---- start ----

confirmDlg.addEventListener("cancel", () => { confirmDlg.returnValue = "cancel"; });
if (!cap) {
  setStatus("error", `no access: open /host/${session}/?access_token=<token> to view this session`);
} else {
  const start = new URLSearchParams(location.search).get("page") ?? "";
  show(start);
  void follow();
}
// For tests and the web UI's pages panel: what the viewer shows.
(window as unknown as { canvasdViewer: unknown }).canvasdViewer = {
  session,
  get page() { return pagePath; },
  get ready() { return pageReady; },
  /** How many navigations out of the session the frame's policy refused. */
  get refused() { return refused; },
};
