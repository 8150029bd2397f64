// canvasd's built-in UI: sign-in, the live canvas list, the canvas
// (Excalidraw), the document panel (CodeMirror) and the agent panel, all on
// the public API. The document panel and CodeMirror are loaded when a
// document is first opened (or about to be: a document card selected, the
// new-document dialog shown), not with the page: opening a canvas neither
// downloads, compiles nor runs them. Addresses: /?canvas={id} opens a canvas, &doc={node_id}
// opens a document; a token handed over once as #access_token=... is kept
// like one typed at sign-in and removed from the address bar.

import { CanvasClient, SCREENSHOT_ACTION, viewportBox, type ApplyResult, type CanvasModel, type Commit, type Gesture, type LiveCanvas, type ScreenshotRequest, type Screenshot } from "@canvasd/client";
import { $, h, toast, why } from "./dom";
import { CanvasView, touched } from "./canvas";
import type { DocPanel } from "./doc";
import { AgentPanel } from "./agent";
import { Files } from "./files";
import { Outbox, sendCommand } from "./outbox";
import { askNewDoc, confirmSignOut, starterText } from "./newdoc";
import { earlyFetch, tokenInAddress, TOKEN_KEY } from "./early";

interface CanvasInfo { canvas_id: string; title?: string; head_rev?: number }

class App {
  token = "";
  client = new CanvasClient({ baseUrl: location.origin, token: () => this.token, fetch: earlyFetch });
  canvasId = "";
  model: CanvasModel | null = null;
  live: LiveCanvas | null = null;
  private canvases: CanvasInfo[] = [];
  private gestures: { send(g: any): void; close(): void } | null = null;
  private me = "";
  private sentCursors: { x: number; y: number }[] = [];
  private conn = "idle";
  /** The edits waiting for the server while it is unreachable. */
  readonly outbox = new Outbox();
  view: CanvasView;
  /** The document panel, null until a document is first opened (openDoc loads it). */
  doc: DocPanel | null = null;
  private docLoad: Promise<DocPanel> | null = null;
  agent: AgentPanel;
  /**
   * How long opening the canvas took (ms): from open() to its first frame
   * (loadedAt), and since navigation start (openedAt); timing holds the
   * steps (performance.now() when the snapshot was read, when the scene
   * was built and put on stage), for the browser benchmark.
   */
  loadedAt = 0;
  openedAt = 0;
  /** Settles once the open canvas's first snapshot is on screen, or another canvas is opened. */
  private staged: Promise<void> = Promise.resolve();
  private stagedNow = () => {};
  timing: Record<string, number> = {};
  /** The last screenshots' times (ms): waiting for the scene, the picture drawn, encoded; for the browser benchmark. */
  shotTimes: { wait: number; draw: number; encode: number; total: number; from: string }[] = [];
  /** A picture of the view kept ready while this page is host and an agent asked for one lately, by screenKey(). */
  readyShot: { key: string; dataUrl: string; bounds: { x: number; y: number; w: number; h: number } } | null = null;
  private lastShotAsked = -Infinity;
  private preparing = false;
  private lastKey = ""; // the screenKey() prepareShot saw last

  constructor() {
    const app = $("app");
    const list = h("ul", { id: "canvas-list" });
    const newTitle = h("input", { id: "new-canvas-title", type: "text", maxlength: 500, placeholder: "New canvas title" });
    const openDoc = h("button", { type: "button", id: "open-doc", text: "Open document", hidden: true });
    const stage = h("main", { id: "stage" }, h("p", { id: "stage-hint", class: "muted", text: "Open a canvas from the list, or create one." }));
    app.append(
      h("header", { id: "topbar" },
        h("button", { type: "button", id: "toggle-sidebar", text: "Canvases", title: "Show or hide the list of canvases (hidden while a document is open)",
          onclick: () => document.body.classList.toggle("show-sidebar") }),
        h("span", { class: "brand", text: "canvasd" }),
        h("span", { id: "canvas-title", class: "title", text: "no canvas open" }),
        h("span", { class: "stat" }, "rev ", h("b", { id: "rev", text: "–" })),
        h("span", { class: "stat" }, h("b", { id: "node-count", text: "0" }), " shapes"),
        h("span", { id: "conn", class: "conn conn-idle", text: "idle" }),
        h("span", { id: "unsaved", class: "conn conn-offline", hidden: true,
          title: "The server is unreachable: your changes are kept in this page and sent when it answers again (closing the page loses them)" }),
        h("span", { id: "people", class: "people" }),
        h("span", { id: "host", class: "badge", hidden: true, text: "host", title: "This page is the agent's eyes: its screenshots and set_viewport" }),
        h("span", { class: "spacer" }),
        openDoc,
        h("button", { type: "button", id: "undo", text: "Undo", title: "Undo your last change (the server keeps each person's history)", onclick: () => this.history("undo") }),
        h("button", { type: "button", id: "redo", text: "Redo", onclick: () => this.history("redo") }),
        h("button", { type: "button", id: "new-note", text: "Note", title: "A sticky note in the middle of the view", onclick: () => this.newNote() }),
        h("button", { type: "button", id: "new-doc", text: "New document", onclick: () => this.newDoc() }),
        h("button", { type: "button", id: "signout", text: "Sign out", title: "Sign out: this browser forgets your token (asks first)", onclick: () => this.signOut() })),
      h("div", { id: "layout" },
        h("aside", { id: "sidebar" }, h("h2", { text: "Canvases" }),
          h("form", { id: "new-canvas", autocomplete: "off", onsubmit: (ev: Event) => { ev.preventDefault(); this.createCanvas(newTitle); } },
            newTitle, h("button", { type: "submit", text: "Create" })),
          list, h("p", { id: "canvas-list-empty", class: "muted", hidden: true, text: "No canvases yet. Create one above." })),
        stage,
        h("div", { id: "right" })),
      h("dialog", { id: "token-dialog" },
        h("form", { id: "token-form", autocomplete: "off", onsubmit: (ev: Event) => { ev.preventDefault(); this.signIn(($("token-input") as HTMLInputElement).value.trim()); } },
          h("h2", { text: "Sign in to canvasd" }),
          h("p", { text: "Paste an API token: the admin token printed by make run, or one from bin/canvasd token create --role editor. It is kept in this browser's local storage." }),
          h("input", { id: "token-input", type: "password", placeholder: "cvd_…", required: true }),
          h("p", { id: "token-error", class: "error", hidden: true }),
          h("div", { class: "row" }, h("button", { type: "submit", text: "Use token" })))));
    const files = new Files(this.client, () => this.canvasId, stage);
    this.view = new CanvasView(stage, this.client, () => this.canvasId, this.outbox, () => files.menu());
    this.outbox.onChange = (queued, stalled) => {
      const el = $("unsaved");
      el.hidden = stalled === 0;
      el.textContent = `${queued} unsaved`;
    };
    this.agent = new AgentPanel(this.client, {
      canvasId: () => this.canvasId,
      viewport: () => (this.model ? this.view.viewport() : null),
      selection: () => (this.model ? this.view.selection() : []),
      picture: async (sel) => {
        if (!this.model) return null;
        const ids = sel ? this.view.selection() : undefined;
        if (sel && !ids!.length) return null;
        return (await this.view.picture(null, null, ids)).dataUrl;
      },
      token: () => this.token,
      document: async () => (this.doc ? this.doc.agentTarget() : null),
      nodeName: async (id) => {
        await this.staged;
        return String(this.model?.nodes.get(id)?.name || id);
      },
      show: (revs) => this.view.showNodes(this.nodesAt(revs)),
      inView: async (revs) => {
        await this.view.caughtUp(Math.max(...revs));
        const v = this.view.viewport(), ns = [...this.nodesAt(revs)].map((id) => this.model?.nodes.get(id)).filter((n) => n && typeof n.x === "number");
        return ns.length ? ns.every((n) => n!.x! >= v.x && n!.y! >= v.y && n!.x! + (n!.w || 0) <= v.x + v.w && n!.y! + (n!.h || 0) <= v.y + v.h) : null;
      },
    });
    $("right").append(this.agent.el);
    this.view.onOpenDoc = (id) => void this.openDoc(id);
    this.view.onSelection = (ids) => {
      const one = ids.length === 1 && this.model?.nodes.get(ids[0]);
      openDoc.hidden = !(one && one.type === "doc");
      openDoc.onclick = () => one && void this.openDoc(one.id);
      if (one && one.type === "doc") void this.docPanel().catch(() => {}); // likely opened next (openDoc says when it fails)
    };
    this.view.onPointer = (x, y) => this.postCursor(x, y);
    setInterval(() => this.view.expireCursors(), 2000);
    setInterval(() => { if (this.token && document.visibilityState === "visible") this.refreshCanvases(); }, 4000);
    window.addEventListener("popstate", () => this.route());
    // Ctrl+Z, Ctrl+Shift+Z and Ctrl+Y on the canvas (or the bar) are the server's undo and redo, as the bar's buttons, not Excalidraw's local history.
    window.addEventListener("keydown", (ev) => {
      const k = ev.key.toLowerCase();
      if (!(ev.ctrlKey || ev.metaKey) || ev.altKey || (k !== "z" && k !== "y") || !this.model) return;
      const t = ev.target as HTMLElement | null;
      if (t?.closest?.("input, textarea, select, [contenteditable], dialog")) return; // text being typed keeps its own undo (the document's editor: the server's too)
      ev.preventDefault();
      ev.stopImmediatePropagation();
      void this.history(k === "y" || ev.shiftKey ? "redo" : "undo");
    }, true);
    // A token handed over on a page already open (a fragment-only navigation does not reload it).
    window.addEventListener("hashchange", () => {
      const tok = this.tokenFromHash();
      if (tok) this.signIn(tok);
    });
  }

  /** The ids of the nodes the commits at revs made or last changed. */
  private nodesAt(revs: number[]): Set<string> {
    const at = new Set(revs), ids = new Set<string>();
    for (const n of this.model?.nodes.values() || []) if (at.has(n.created_rev!) || at.has(n.updated_rev!)) ids.add(n.id);
    return ids;
  }

  /**
   * The document panel, loaded (doc.ts and CodeMirror, a chunk of their
   * own) and put in the right-hand column the first time it is asked for.
   */
  docPanel(): Promise<DocPanel> {
    this.docLoad ??= import("./doc").then(({ DocPanel }) => {
      const d = new DocPanel(this.client, () => this.canvasId, () => this.model, () => this.me, this.view.myCommands, (rev) => this.view.caughtUp(rev), this.outbox);
      d.onAddToChat = (text) => this.agent.addToPrompt(text);
      $("right").prepend(d.el);
      return (this.doc = d);
    }, (err) => {
      this.docLoad = null; // asked again next time
      throw err;
    });
    return this.docLoad;
  }

  /**
   * Opens document node id of the open canvas in the panel (loading the
   * panel first); resolves once it is open, or was not opened: the canvas
   * changed meanwhile, or the panel could not be loaded (said in a toast).
   */
  async openDoc(id: string): Promise<void> {
    const cid = this.canvasId;
    let d: DocPanel;
    try {
      d = await this.docPanel();
    } catch (err) {
      toast(`the document panel could not be loaded: ${why(err)}`, "bad");
      return;
    }
    if (this.canvasId === cid && this.model) d.open(id);
  }

  // ---------------------------------------------------------------- token and routing

  boot(): void {
    const tok = this.tokenFromHash();
    if (tok) localStorage.setItem(TOKEN_KEY, tok);
    this.token = localStorage.getItem(TOKEN_KEY) || "";
    if (!this.token) this.askToken("");
    else this.start();
  }

  /** The token handed over in the address's fragment (#access_token=...), taken off the address bar and history; "" when none. */
  private tokenFromHash(): string {
    const tok = tokenInAddress();
    if (tok) history.replaceState(null, "", location.pathname + location.search);
    return tok;
  }

  /** Shows the sign-in dialog with msg; what the user is typing in it stays. */
  private askToken(msg: string): void {
    const dlg = $("token-dialog") as HTMLDialogElement;
    $("token-error").hidden = !msg;
    $("token-error").textContent = msg;
    if (!dlg.open) {
      ($("token-input") as HTMLInputElement).value = "";
      dlg.showModal();
    }
  }

  private signIn(tok: string): void {
    ($("token-dialog") as HTMLDialogElement).close();
    if (!tok) return;
    localStorage.setItem(TOKEN_KEY, tok);
    this.token = tok;
    this.start();
  }

  private async signOut(): Promise<void> {
    if (!(await confirmSignOut())) return;
    localStorage.removeItem(TOKEN_KEY);
    this.token = "";
    this.closeLive();
    this.askToken("");
  }

  /** Starts with the current token: the canvas list, and the canvas of the address opened anew (a sign-in after a 401 reconnects it). */
  private async start(): Promise<void> {
    // The canvas opens while the list loads (its title follows).
    const list = this.refreshCanvases();
    this.route(true);
    await list;
  }

  /** Opens what the address names: its canvas when it is another one (or always, with reopen), else its document. */
  private route(reopen = false): void {
    const q = new URLSearchParams(location.search);
    const id = q.get("canvas") || "";
    if (reopen || id !== this.canvasId) this.open(id, q.get("doc") || "", q.get("agent") || "");
    else if (q.get("doc") && q.get("doc") !== this.doc?.nodeId && this.model) void this.openDoc(q.get("doc")!);
  }

  private go(id: string): void {
    history.pushState(null, "", "/?canvas=" + encodeURIComponent(id));
    this.route();
  }

  // ---------------------------------------------------------------- canvases

  private async refreshCanvases(): Promise<void> {
    try {
      this.canvases = await this.client.listCanvases();
    } catch (err) {
      this.failed("Could not list canvases", err);
      return;
    }
    const ul = $("canvas-list");
    const items = this.canvases.map((c) => {
      const rev = c.canvas_id === this.canvasId && this.model ? this.model.rev : c.head_rev;
      return h("li", { "data-canvas-id": c.canvas_id, class: c.canvas_id === this.canvasId ? "active" : "", onclick: () => this.go(c.canvas_id) },
        h("span", { class: "ctitle", text: c.title || c.canvas_id }), h("span", { class: "cmeta", text: listMeta(c.canvas_id, rev) }));
    });
    ul.replaceChildren(...items);
    $("canvas-list-empty").hidden = this.canvases.length > 0;
    const cur = this.canvases.find((c) => c.canvas_id === this.canvasId);
    if (cur) $("canvas-title").textContent = cur.title || cur.canvas_id;
  }

  private async createCanvas(input: HTMLInputElement): Promise<void> {
    let id: string;
    try {
      id = (await this.client.createCanvas({ title: input.value.trim() || "Untitled canvas" })).canvas_id;
    } catch (err) {
      this.failed("Could not create the canvas", err);
      return;
    }
    input.value = "";
    await this.refreshCanvases();
    this.go(id);
  }

  /** A 401 asks for a token again; anything else is shown. */
  private failed(what: string, err: unknown): void {
    if ((err as { status?: number })?.status === 401) {
      localStorage.removeItem(TOKEN_KEY);
      this.token = ""; // nothing more is sent with it (the canvas list's refresh stops)
      this.closeLive();
      this.askToken(why(err));
    } else toast(`${what}: ${why(err)}`, "bad");
  }

  private closeLive(): void {
    this.live?.close();
    this.live = null;
    this.gestures?.close();
    this.gestures = null;
    this.setConn(this.canvasId ? "offline" : "idle");
  }

  /** Opens canvas id, then its document docId and the review of agent session agentId when given (a reload). */
  private async open(id: string, docId: string, agentId = ""): Promise<void> {
    this.closeLive();
    if (this.doc?.nodeId) this.doc.close();
    this.canvasId = id;
    this.model = null;
    this.view.leave();
    this.agent.reset();
    this.timing = {};
    this.stagedNow();
    if (id) this.staged = new Promise((res) => (this.stagedNow = res));
    delete document.body.dataset.loaded;
    for (const li of $("canvas-list").children) li.classList.toggle("active", (li as HTMLElement).dataset.canvasId === id);
    const c = this.canvases.find((x) => x.canvas_id === id);
    $("canvas-title").textContent = id ? c?.title || id : "no canvas open";
    document.body.classList.toggle("no-canvas", !id);
    this.status();
    if (!id) return;
    if (agentId) this.agent.resume(agentId);
    const t0 = performance.now();
    this.timing.open = t0;
    let first = true;
    this.setConn("connecting");
    // The canvas followed live by @canvasd/client: model, stream, host election, acks, views.
    const live = this.client.live(id, {
      capabilities: ["screenshot", "viewport"],
      hooks: {
        setViewport: (box) => this.view.setViewport(box),
        view: () => (this.model ? { viewport: this.view.viewport(), selection: this.view.selection() } : null),
      },
    });
    this.live = live;
    this.gestures = live.gestures(60);
    const mine = () => this.live === live;
    // Screenshots: the elected host answers; on a server that elects no host, any page does.
    // While this page is host and an agent asked it for a screenshot in the
    // last two minutes, a picture of the view is kept ready (drawn again
    // once what is on screen changed and then stayed the same for a 250 ms
    // tick): a screenshot of an unchanged view is then answered at once.
    const prepare = window.setInterval(() => {
      if (!mine()) return window.clearInterval(prepare);
      if (live.isHost && !document.hidden && performance.now() - this.lastShotAsked < 120000) void this.prepareShot();
    }, 250);
    live.handle(SCREENSHOT_ACTION, (req) => {
      if (live.hostId !== "" && !live.isHost) throw new Error(`this page is not the host of canvas ${id}`);
      return this.screenshot(req as ScreenshotRequest);
    });
    live.handle("viewport", () => ({ viewport: this.view.viewport(), docVersion: String(this.model?.rev ?? 0) }));
    live.handle("selection", () => ({ selection: this.view.selection(), docVersion: String(this.model?.rev ?? 0) }));
    live.on("state", async (model, commit) => {
      if (!mine()) return;
      if (!commit) { // a snapshot: the first one, or a re-read after a reset or a gap
        this.model = model;
        if (first) this.timing.snapshot = performance.now();
        await this.view.load(model, first);
        if (first) this.timing.staged = performance.now();
        if (!mine()) return;
        if (first) {
          first = false;
          await new Promise((res) => requestAnimationFrame(() => res(null)));
          this.openedAt = performance.now();
          this.loadedAt = this.openedAt - t0;
          document.body.dataset.loaded = id;
          this.stagedNow();
          if (docId) void this.openDoc(docId);
        } else {
          this.doc?.sync(); // the open document follows the text read anew
          toast("re-read the canvas (the stream could not resume)", "", 3000);
        }
      } else this.onCommit(commit);
      this.status();
    });
    live.on("ready", () => mine() && this.setConn("live"));
    live.on("connection", (st) => {
      if (st === "open") this.outbox.retryNow(); // the server answers again: what waits goes now
      if (mine()) this.setConn(st === "open" ? "syncing" : st === "closed" ? "offline" : st);
    });
    live.on("host", (_id, isHost) => { if (mine()) $("host").hidden = !isHost; });
    live.on("gesture", (g) => mine() && this.onGesture(g));
    live.on("agent:action", ({ envelope, actions }) => {
      if (!mine()) return;
      this.agent.event("agent:action", envelope);
      if (live.hostId !== "") return; // an elected host gets set_viewport through its hook
      for (const a of actions) {
        const box = a.name === "set_viewport" ? viewportBox(a.params) : null;
        if (box) this.view.setViewport(box);
      }
    });
    live.on("agent:chat", (d) => mine() && this.agent.event("agent:chat", d));
    live.on("agent:status", (d) => mine() && this.agent.event("agent:status", d));
    live.on("agent:screenshot_request", (d) => mine() && this.agent.event("agent:screenshot_request", d));
    live.on("host:present", (p) => { if (mine() && p.session === id) this.agent.present(p); });
    live.on("error", (err) => {
      if (!mine()) return;
      if ((err as { status?: number })?.status === 401) this.failed("", err);
      else console.warn("canvasd:", err);
    });
  }

  private setConn(c: string): void {
    this.conn = c;
    const el = $("conn");
    el.textContent = c;
    el.className = "conn conn-" + c;
  }

  private onCommit(c: Commit): void {
    if (this.view.myCommands.has(c.cmd_id)) this.me = c.actor_id;
    this.view.me = this.me;
    this.view.applied(c, touched(c));
    this.doc?.applied(c);
  }

  /** Shows the open canvas's revision and shape count, in the top bar and in its entry of the list. */
  private status(): void {
    $("rev").textContent = this.model ? String(this.model.rev) : "–";
    $("node-count").textContent = this.model ? String(this.model.nodes.size) : "0";
    const meta = this.model && $("canvas-list").querySelector(`li[data-canvas-id="${CSS.escape(this.canvasId)}"] .cmeta`);
    if (meta) meta.textContent = listMeta(this.canvasId, this.model!.rev);
  }

  // ---------------------------------------------------------------- people

  private onGesture(g: Gesture): void {
    if (!g?.actor_id || !g.cursor || g.actor_id === this.me) return;
    const mine = this.sentCursors.find((c) => c.x === g.cursor.x && c.y === g.cursor.y);
    if (mine && !this.view.people().includes(g.actor_id)) { this.me = g.actor_id; return; }
    this.view.gesture(g.actor_id, g.cursor as { x: number; y: number }, Array.isArray(g.selection) ? g.selection.slice(0, 500) : []);
    $("people").textContent = this.view.people().length ? `${this.view.people().length} here` : "";
    $("people").dataset.actors = this.view.people().join(" ");
  }

  /** Publishes the pointer (the client's throttle sends the newest at most every 60 ms). */
  private postCursor(x: number, y: number): void {
    if (!this.model || this.conn !== "live" || !this.gestures) return;
    const c = { x: Math.round(x * 10) / 10, y: Math.round(y * 10) / 10 };
    this.sentCursors.push(c);
    if (this.sentCursors.length > 20) this.sentCursors.shift();
    this.gestures.send({ cursor: c, selection: this.view.selection().slice(0, 1000), viewport: this.view.viewport() });
  }

  // ---------------------------------------------------------------- agent protocol

  /** The agent's screenshot (asked of the host only): Excalidraw's export of the requested bounds. */
  private async screenshot(req: ScreenshotRequest): Promise<Screenshot> {
    if (!this.model) throw new Error("no canvas is loaded in this page");
    this.lastShotAsked = performance.now();
    const ready = this.readyShot;
    const key = this.view.screenKey(); // "" while Excalidraw starts or the scene is not drawn
    const view = key ? this.view.viewport() : null;
    const isView = (b: { x: number; y: number; w: number; h: number }) =>
      !!view && Math.abs(b.x - view.x) <= 0.5 && Math.abs(b.y - view.y) <= 0.5 && Math.abs(b.w - view.w) <= 0.5 && Math.abs(b.h - view.h) <= 0.5;
    if (view && ready && ready.key === key && (!req.bounds || isView(req.bounds)) && (!req.maxSize || (req.maxSize.w === 800 && req.maxSize.h === 800))) {
      this.shotTimes.push({ wait: 0, draw: 0, encode: 0, total: 0, from: "ready" });
      if (this.shotTimes.length > 50) this.shotTimes.shift();
      return { dataUrl: ready.dataUrl, bounds: ready.bounds, viewport: view, selection: this.view.selection(), docVersion: String(this.model.rev) } as Screenshot;
    }
    // Answered once the scene of the version it reports is on screen (a host
    // just elected may still be starting Excalidraw or staging the canvas).
    const t0 = performance.now();
    const rev = await this.view.drawn();
    const t1 = performance.now();
    const b = req.bounds && [req.bounds.x, req.bounds.y, req.bounds.w, req.bounds.h].every((v) => typeof v === "number" && isFinite(v)) && req.bounds.w > 0 && req.bounds.h > 0 ? req.bounds : null;
    const docVersion = String(rev);
    const max = req.maxSize?.w && req.maxSize?.h ? { w: req.maxSize.w, h: req.maxSize.h } : null;
    const shot = await this.view.picture(b, max);
    this.shotTimes.push({ wait: t1 - t0, draw: shot.drawMs, encode: shot.encodeMs, total: performance.now() - t0, from: shot.from });
    if (this.shotTimes.length > 50) this.shotTimes.shift();
    return { dataUrl: shot.dataUrl, bounds: shot.bounds, viewport: this.view.viewport(), selection: this.view.selection(), docVersion } as Screenshot;
  }

  /**
   * Draws the ready picture of the view again when what is on screen
   * changed and has stayed the same since the last tick (see readyShot):
   * not while an agent's commits keep coming (its next screenshot would
   * not be this picture), when it only takes the main thread (7-28 ms a
   * picture at load) from the commits and the screenshot asked after them.
   */
  private async prepareShot(): Promise<void> {
    const key = this.view.screenKey(), steady = key === this.lastKey;
    this.lastKey = key;
    if (this.preparing || !key || !steady || this.readyShot?.key === key) return;
    this.preparing = true;
    try {
      const shot = await this.view.picture(null, { w: 800, h: 800 });
      if (this.view.screenKey() === key) this.readyShot = { key, dataUrl: shot.dataUrl, bounds: shot.bounds };
      if (shot.from !== "screen") this.lastShotAsked = -Infinity; // a view too small to copy: an export each change costs too much
    } catch {
      // (the next tick tries again)
    } finally {
      this.preparing = false;
    }
  }

  // ---------------------------------------------------------------- commands from the bar

  /** Sends one command of the bar to the open canvas (sendCommand: kept through an outage, never applied twice). */
  private command(type: string, args: Record<string, unknown>): Promise<ApplyResult> {
    return sendCommand(this.outbox, this.client, this.view.myCommands, this.canvasId, type, args, this.model?.rev);
  }

  private async history(kind: "undo" | "redo"): Promise<void> {
    if (!this.model) return;
    try {
      await this.command(kind, {});
    } catch (err) {
      toast(`${kind}: ${why(err)}`, (err as { status?: number })?.status === 422 ? "warn" : "bad");
    }
  }

  private async newNote(): Promise<void> {
    if (!this.model) return;
    const v = this.view.viewport();
    try {
      await this.command("create_shape", { type: "note", x: Math.round(v.x + v.w / 2 - 100), y: Math.round(v.y + v.h / 2 - 100), w: 200, h: 200,
        props: { color: "yellow", text: "" } });
    } catch (err) {
      toast(`new note: ${why(err)}`, "bad");
    }
  }

  /**
   * Asks the new document's name and language, and puts its card in free
   * room in the view (clear of shapes and arrows), else right of everything
   * and shown; then opens it.
   */
  private async newDoc(): Promise<void> {
    if (!this.model) return;
    void this.docPanel().catch(() => {}); // loads while the dialog asks (openDoc says when it fails)
    const cid = this.canvasId, d = await askNewDoc(new Set([...this.model.nodes.values()].filter((n) => n.type === "doc").map((n) => n.name || "")));
    if (!d || !this.model || this.canvasId !== cid) return;
    const w = 400, ht = 300, v = this.view.viewport();
    const right = this.view.contentRight();
    const at = this.view.freeSpot(w, ht) ?? { x: Math.round(right === null ? v.x + v.w / 2 - w / 2 : right + 80), y: Math.round(v.y + v.h / 2 - ht / 2) };
    let r;
    try {
      r = await this.command("create_shape", { type: "doc", name: d.name, x: at.x, y: at.y, w, h: ht,
        props: { language: d.language, text: starterText(d.name, d.language) } });
    } catch (err) {
      toast(`new document: ${why(err)}`, "bad");
      return;
    }
    const id = r.createdIds[0];
    await this.view.caughtUp(r.rev);
    if (!id || !this.model?.nodes.has(id)) return;
    await this.openDoc(id);
    // The panel opened beside the canvas: the card is shown if it is not in the view now.
    requestAnimationFrame(() => {
      const nv = this.view.viewport();
      if (at.x < nv.x || at.y < nv.y || at.x + w > nv.x + nv.w || at.y + ht > nv.y + nv.h) this.view.showNodes(new Set([id]));
    });
  }
}

/** A canvas's line under its title in the list: the revision first, since a long id is cut off. */
function listMeta(id: string, rev: number | undefined): string {
  return `rev ${rev ?? 0} · ${id}`;
}

const app = new App();
(window as any).canvasd = app; // for tests and the browser benchmark (read-only use)
app.boot();
