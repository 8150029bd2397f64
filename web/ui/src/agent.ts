// The agent panel: prompt, status, chat, todos, stop, the review of what a
// run changed (accept, or revert a turn or the whole run as one command),
// "Send to agent" of the canvas or the selection as an image, and the host
// pages / A2UI surfaces of a host session in a frame.

import type { AgentSession, AgentTurn, CanvasClient, HostPresentNotice } from "@canvasd/client";
import { byRecord, Rank, recordTime, type RecordLine } from "./chatorder";
import { h, toast, why } from "./dom";
import { PagesPanel } from "./pages";

const TERMINAL = new Set(["done", "canceled", "error"]);

export interface AgentContext {
  canvasId(): string;
  viewport(): { x: number; y: number; w: number; h: number } | null;
  selection(): string[];
  picture(selectionOnly: boolean): Promise<string | null>;
  token(): string;
  /** The document open in the document panel, with the lines the person selected in it (null: none), or null when none is open: then the agent works on the canvas. */
  document(): Promise<{ nodeId: string; name: string; lines: [number, number] | null } | null>;
  /** The name of node id once the open canvas is on screen (id itself when the node has none, or is not on the canvas). */
  nodeName(id: string): Promise<string>;
  /** Brings into view the nodes the commits at revs made or last changed; false when none is on the canvas. */
  show(revs: number[]): boolean;
  /** Whether the nodes the commits at revs made or last changed are all in view, once the page has those commits; null when none is on the canvas. */
  inView(revs: number[]): Promise<boolean | null>;
}

/**
 * One run in the chat, top to bottom: the person's request (ask), then
 * what the agent did (lines), in the order it happened. own: this page
 * started it ("you", "your agent"); others' are "asked elsewhere".
 */
interface ChatRun {
  sid: string;
  own: boolean;
  el: HTMLElement;
  ask: HTMLElement;
  lines: HTMLElement;
}

/** How many runs the chat keeps (and rebuilds after a reload). */
const CHAT_RUNS = 20;

export class AgentPanel {
  el: HTMLElement;
  session = ""; // the session this page talks to
  private own = false; // the session is one this page started (not one it follows)
  private running = false;
  private prompt: HTMLTextAreaElement;
  private log: HTMLElement;
  private status: HTMLElement;
  private todos: HTMLElement;
  private review: HTMLElement;
  private runBtn: HTMLButtonElement;
  private stopBtn: HTMLButtonElement;
  /** The Pages tab: a host session's pages in the canvas host's viewer. */
  readonly pages: PagesPanel;
  private hostName: HTMLInputElement;
  private ended = new Set<string>();
  private refreshTimer = 0;
  /** The chat's runs by session id. */
  private runs = new Map<string, ChatRun>();
  /** A run of this page is being started: events of sessions not in the chat wait (held) until its id is known. */
  private starting = false;
  private held: [string, any][] = [];
  /** Where events of no session go. */
  private loose: ChatRun | null = null;
  /** The runs (session/turns) whose work was looked for in the view when they ended. */
  private looked = new Set<string>();
  /** The chat follows its newest line (the person has not scrolled up). */
  private stick = true;
  private lastTop = 0; // the chat's scrollTop as last seen
  private scrollFrame = 0; // the frame that scrolls the chat to its end (scroll), 0 when none is due
  private addressTimer = 0; // the task that puts addressSession in the address (remember), 0 when none is due
  private addressSession = "";

  constructor(private client: CanvasClient, private ctx: AgentContext) {
    this.prompt = h("textarea", { id: "agent-prompt", rows: 2, maxlength: 20000, placeholder: "Ask the agent, e.g. Draft a brutalist poster concept" });
    // Enter sends, as in any chat (Shift+Enter: a new line).
    this.prompt.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); this.run(); }
    });
    this.runBtn = h("button", { type: "button", id: "agent-run", text: "Run", onclick: () => this.run() });
    this.stopBtn = h("button", { type: "button", id: "agent-stop", text: "Stop", hidden: true, onclick: () => this.stop() });
    this.status = h("span", { id: "agent-status", class: "badge", text: "idle" });
    this.log = h("ol", { id: "agent-log", class: "log", "aria-live": "polite" });
    // The chat sticks to its end (the newest line) unless the person scrolled up, also when it shrinks (a review shows under it).
    // Only a scroll up (the person's) lets go of the end; one back to the end takes it again.
    this.log.addEventListener("scroll", () => {
      const top = this.log.scrollTop;
      if (top < this.lastTop) this.stick = this.atEnd();
      else if (this.atEnd()) this.stick = true;
      this.lastTop = top;
    });
    new ResizeObserver(() => this.scroll()).observe(this.log);
    this.todos = h("ul", { id: "agent-todos" });
    this.review = h("div", { id: "agent-review" });
    this.hostName = h("input", { id: "host-session", type: "text", maxlength: 128, placeholder: "host session" });
    this.pages = new PagesPanel(client);
    const sendImg = (sel: boolean) => h("button", { type: "button", id: sel ? "send-selection" : "send-canvas", text: sel ? "Send selection" : "Send canvas",
      title: `Send ${sel ? "the selected shapes" : "the visible canvas"} to the agent as an image, with the prompt`, onclick: () => this.sendImage(sel) });
    this.el = h("aside", { id: "agent-panel" },
      h("div", { class: "tabs" },
        h("button", { type: "button", class: "tab active", "data-tab": "chat", text: "Agent", onclick: () => this.tab("chat") }),
        h("button", { type: "button", class: "tab", "data-tab": "pages", id: "tab-pages", text: "Pages", onclick: () => this.tab("pages") }),
        h("span", { class: "spacer" }), this.status),
      h("section", { class: "pane", "data-pane": "chat" },
        this.log,
        h("h3", { id: "agent-todos-head", text: "Todos", hidden: true }), this.todos,
        this.review,
        this.prompt,
        h("div", { class: "row" }, sendImg(false), sendImg(true), h("span", { class: "spacer" }), this.stopBtn, this.runBtn)),
      h("section", { class: "pane", "data-pane": "pages", hidden: true },
        h("form", { class: "row", onsubmit: (ev: Event) => { ev.preventDefault(); this.showHost(); } }, this.hostName, h("button", { type: "submit", text: "Open" })),
        h("p", { class: "muted", text: "Agent-written pages and A2UI surfaces of a host session (by default the canvas's, whose pages talk to its agent)." }),
        this.pages.el));
  }

  private tab(name: string, open = true): void {
    for (const b of this.el.querySelectorAll<HTMLElement>(".tab")) b.classList.toggle("active", b.dataset.tab === name);
    for (const p of this.el.querySelectorAll<HTMLElement>(".pane")) p.hidden = p.dataset.pane !== name;
    if (name === "pages" && open && !this.pages.shown) this.showHost();
  }

  /** Shows the host session named in the tab (default: the canvas's) in the viewer. */
  private showHost(): void {
    const s = this.hostName.value.trim() || this.ctx.canvasId().replace(/[^A-Za-z0-9_.-]/g, "-");
    this.hostName.value = s;
    if (this.pages.shown !== s) this.pages.close();
    void this.pages.open(s);
  }

  /**
   * Follows the agent's present of the canvas's host session: show and
   * navigate open the Pages tab on it (an open viewer navigates itself),
   * hide closes the viewer and goes back to the chat.
   */
  present(p: HostPresentNotice): void {
    if (p.action === "hide") {
      this.pages.close();
      this.tab("chat");
      return;
    }
    this.tab("pages", false);
    if (this.pages.shown !== p.session) {
      this.pages.close();
      this.hostName.value = p.session;
      void this.pages.open(p.session, p.path && p.path !== "/" ? p.path : "");
    }
  }

  /**
   * Follows session sid again after a reload (its id is kept in the address):
   * its todos, and its review once it has ended, with the turns the server
   * records as reverted. A session that is gone (404) or of another canvas
   * is forgotten; one that cannot be read now (the server away) is kept.
   */
  async resume(sid: string): Promise<void> {
    this.follow(sid);
    if (!this.runs.has(sid)) void this.fill(this.chatRun(sid, this.remembered().some((r) => r.id === sid && r.own), false));
    let s: AgentSession | null = null;
    try {
      s = await this.client.agentSession(sid);
    } catch (err: any) {
      if (err?.status !== 404) { // not known to be gone: kept (in the address too) for the next try
        toast(`could not read agent session ${sid.slice(0, 8)}: ${why(err)}`, "warn");
        return;
      }
    }
    if (sid !== this.session) return;
    if (s) this.showTodos(s);
    if (!s || s.canvas_id !== this.ctx.canvasId()) {
      this.session = "";
      delete this.el.dataset.sessionId;
      this.remember("");
      return;
    }
    this.badge(s.state);
    if (TERMINAL.has(s.state)) {
      this.ended.add(sid);
      this.finished(sid);
    } else this.setRunning(true);
  }

  /** Shows the session's state in the status badge. */
  private badge(state: string): void {
    this.status.textContent = state;
    this.status.className = "badge " + state;
  }

  /** Makes sid the session this page talks to, kept in the address for a reload. */
  private follow(sid: string): void {
    this.session = sid;
    this.own = false;
    this.el.dataset.sessionId = sid;
    this.remember(sid);
  }

  /**
   * Puts the session in the address (?agent=…), or takes it out (""), in a
   * task of its own (the last call's session): changing the address takes
   * the page milliseconds, which the canvas stream's events handled after
   * the agent:status that calls this (a screenshot asked of this page) must
   * not wait for. reset() drops an address change not made yet.
   */
  private remember(sid: string): void {
    this.addressSession = sid;
    this.addressTimer ||= window.setTimeout(() => {
      this.addressTimer = 0;
      const u = new URL(location.href);
      if (this.addressSession) u.searchParams.set("agent", this.addressSession);
      else u.searchParams.delete("agent");
      history.replaceState(null, "", u.pathname + u.search + u.hash);
    });
  }

  /** Accepts the reviewed run: the review goes, and so does the session from
   *  the address, so a reload does not review it again (a next turn puts it back). */
  private accept(): void {
    this.review.replaceChildren(h("p", { class: "muted", text: "Accepted." }));
    this.remember("");
  }

  /** Starts over for another canvas. */
  reset(): void {
    clearTimeout(this.addressTimer); // (another canvas's address is not this run's)
    this.addressTimer = 0;
    this.session = "";
    this.own = false;
    this.running = false;
    this.log.replaceChildren();
    this.stick = true;
    this.lastTop = 0;
    this.runs.clear();
    this.loose = null;
    this.starting = false;
    this.held = [];
    this.todos.replaceChildren();
    this.review.replaceChildren();
    this.badge("idle");
    this.setRunning(false);
    this.hostName.value = "";
    this.pages.close();
    void this.rebuild();
  }

  /**
   * Rebuilds the chat of the canvas just opened from the server's list of
   * its latest runs, whoever started them (the ones this browser started
   * shown as its own); from the runs this browser remembers when the server
   * cannot list them. Runs the page started meanwhile stay after them.
   */
  private async rebuild(): Promise<void> {
    const canvasId = this.ctx.canvasId();
    if (!canvasId) return;
    const own = new Map(this.remembered().map((r) => [r.id, r.own]));
    let sessions: AgentSession[] | null = null;
    try {
      sessions = (await this.client.agentSessions(canvasId, { limit: CHAT_RUNS })).sessions.reverse(); // oldest first
    } catch { /* an older server, or none: what this browser remembers */ }
    if (this.ctx.canvasId() !== canvasId) return;
    const listed = sessions ?? this.remembered().map((r) => ({ session_id: r.id }) as AgentSession);
    for (const s of listed) {
      if (!this.runs.has(s.session_id)) void this.fill(this.chatRun(s.session_id, own.get(s.session_id) ?? false, false), false, sessions ? s : undefined);
    }
    // In the list's order; the runs started or resumed meanwhile in theirs.
    const at = new Map(listed.map((s, i) => [s.session_id, i]));
    const runs = [...this.log.children] as HTMLElement[];
    const place = (el: HTMLElement) => at.get(el.dataset.session || "") ?? listed.length + runs.indexOf(el);
    this.log.replaceChildren(...runs.sort((a, b) => place(a) - place(b)));
    this.scroll(true);
  }

  /** Puts text (e.g. a selection formatted for chat) into the prompt. */
  addToPrompt(text: string): void {
    this.tab("chat");
    this.prompt.value = this.prompt.value ? this.prompt.value + "\n\n" + text : text;
    this.prompt.focus();
    this.prompt.setSelectionRange(this.prompt.value.length, this.prompt.value.length);
  }

  private setRunning(on: boolean): void {
    this.running = on;
    this.runBtn.disabled = on;
    this.stopBtn.hidden = !on;
    this.el.classList.toggle("running", on);
  }

  // ---------------------------------------------------------------- the chat

  /** The runs the chat shows on this canvas (kept in this browser, so a reload rebuilds the chat from the server's sessions). */
  private remembered(): { id: string; own: boolean }[] {
    try {
      const v = JSON.parse(localStorage.getItem(this.chatKey()) || "[]");
      return Array.isArray(v) ? v.filter((r) => typeof r?.id === "string").slice(-CHAT_RUNS) : [];
    } catch {
      return [];
    }
  }

  private chatKey(): string {
    return "canvasd.chat." + this.ctx.canvasId();
  }

  /** Keeps run sid in the chat's list (own: this page started it). */
  private keep(sid: string, own: boolean): void {
    if (!this.ctx.canvasId()) return;
    const list = this.remembered();
    const had = list.find((r) => r.id === sid);
    if (had) { // in place: the chat's order
      had.own ||= own;
    } else list.push({ id: sid, own });
    try {
      localStorage.setItem(this.chatKey(), JSON.stringify(list.slice(-CHAT_RUNS)));
    } catch { /* storage full or off: the chat is not kept */ }
  }

  private forget(sid: string): void {
    try {
      localStorage.setItem(this.chatKey(), JSON.stringify(this.remembered().filter((r) => r.id !== sid)));
    } catch { /* as above */ }
  }

  /**
   * Run sid's place in the chat, added at the end when it has none (a run
   * started elsewhere: its request is read from the server, unless
   * describe is false, for a caller that fills it itself).
   */
  private chatRun(sid: string, own = false, describe = true): ChatRun {
    let run = sid ? this.runs.get(sid) : undefined;
    if (run) return run;
    const ask = h("div", { class: own ? "ask mine" : "ask" }, h("span", { class: "who", text: own ? "you: " : "asked elsewhere: " }));
    const lines = h("ul", { class: "lines" });
    const el = h("li", { class: own ? "run own" : "run" }, ask, lines);
    if (sid) el.dataset.session = sid;
    run = { sid, own, el, ask, lines };
    if (sid) {
      this.runs.set(sid, run);
      this.keep(sid, own);
    }
    this.log.append(el);
    while (this.log.children.length > CHAT_RUNS) {
      const first = this.log.firstElementChild as HTMLElement;
      this.runs.delete(first.dataset.session || "");
      first.remove();
    }
    this.scroll();
    if (sid && describe) void this.fill(run, true);
    return run;
  }

  /** Sets run's request: who asked (you, or elsewhere) and what. */
  private asked(run: ChatRun, text: string, on = ""): void {
    run.ask.replaceChildren(h("span", { class: "who", text: `${run.own ? "you" : "asked elsewhere"}${on ? ", on " + on : ""}: ` }), text);
  }

  /** Adds a line to run: who said what (the agent by default: "your agent" on this page's runs). */
  private say(run: ChatRun, cls: string, text: string, who = "", ...extra: Node[]): HTMLElement {
    const li = h("li", { class: cls }, h("span", { class: "who", text: who || (run.own ? "your agent: " : "agent: ") }), text, ...extra);
    run.lines.append(li);
    while (run.lines.children.length > 300) run.lines.firstChild!.remove();
    this.scroll();
    return li;
  }

  /** Whether the chat is scrolled to its end (or near it). */
  private atEnd(): boolean {
    return this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 40;
  }

  /**
   * Keeps the chat at its end, the newest line in view, unless the person
   * scrolled up (or always, with force): at the next frame, once for all the
   * lines added meanwhile. Reading the chat's height lays the page out, which
   * the chat's lines, added as the canvas stream's events are handled, must
   * not do: the events after them (a screenshot asked of this page) would
   * wait for it.
   */
  private scroll(force = false): void {
    if (force) this.stick = true;
    if (!this.stick || this.scrollFrame) return;
    this.scrollFrame = requestAnimationFrame(() => {
      this.scrollFrame = 0;
      if (!this.stick) return;
      this.log.scrollTop = this.log.scrollHeight;
      this.lastTop = this.log.scrollTop;
    });
  }

  /**
   * Fills run from the server's record of its session: the request, then
   * the transcript (messages, the agent's notes), each turn with the
   * changes it made, and how the run ended, in time order. live: only the
   * request (the lines come from the stream). Lines that came from the
   * stream while it was read stay after them, unless the record has them.
   * A session that is gone leaves the chat. known: the record, already
   * read.
   */
  private async fill(run: ChatRun, live = false, known?: AgentSession): Promise<void> {
    let s: AgentSession;
    try {
      s = known ?? await this.client.agentSession(run.sid);
    } catch (err: any) {
      if (err?.status === 404 && this.runs.get(run.sid) === run && !run.lines.children.length) {
        run.el.remove();
        this.runs.delete(run.sid);
        this.forget(run.sid);
      }
      if (err?.status === 404 || live) return;
      this.say(run, "status warn", `Could not read this run: ${why(err)}`);
      return;
    }
    if (this.runs.get(run.sid) !== run) return;
    if (s.canvas_id !== this.ctx.canvasId()) {
      run.el.remove();
      this.runs.delete(run.sid);
      this.forget(run.sid);
      return;
    }
    const ds = s.document_selection, ask = s.message || s.transcript?.[0]?.text || "", span = ds ? ` (${lineSpan([ds.start_line, ds.end_line])})` : "";
    this.asked(run, ask, s.document ? s.document + span : "");
    // The document by its name, once the canvas that names it is on screen.
    if (s.document) void this.ctx.nodeName(s.document).then((name) => this.runs.get(run.sid) === run && this.asked(run, ask, name + span));
    if (live) return;
    const items: (RecordLine & { cls: string; who: string; text: string })[] = [];
    (s.transcript || []).slice(1).forEach((e) => {
      if (e.role === "user") items.push({ t: recordTime(e.ts), rank: Rank.said, cls: "mine", who: run.own ? "you: " : "asked: ", text: e.text });
      else items.push({ t: recordTime(e.ts), rank: Rank.said, cls: e.role === "assistant" ? "chat" : "status", who: "", text: e.text });
    });
    for (const tn of s.turns || []) {
      const kind = TURN_KINDS[tn.kind] ?? tn.kind;
      items.push({ t: recordTime(tn.started_at), rank: Rank.turnStart, cls: "status", who: "", text: `Turn ${tn.turn} started${kind ? ` (${kind})` : ""}.` });
      const n = (tn.revs || []).length;
      if (tn.ended_at && n) {
        items.push({ t: recordTime(tn.ended_at), rank: Rank.turnChanges, cls: "actions", who: "", text: `Turn ${tn.turn} made ${n} change${n === 1 ? "" : "s"}${tn.reverted_rev != null ? " (reverted)" : ""}.` });
      }
    }
    if (TERMINAL.has(s.state)) {
      const end = statusText(s.state, s.detail);
      if (end) items.push({ t: recordTime(s.updated_at), rank: Rank.end, cls: end.warn ? "status warn" : "status", who: "", text: end.text });
    }
    items.sort(byRecord); // stable: the record's order for equal times and ranks
    const streamed = [...run.lines.children] as HTMLElement[];
    run.lines.replaceChildren();
    for (const it of items) this.say(run, it.cls, it.text, it.who);
    const have = new Set(items.map((it) => it.text));
    for (const li of streamed) if (!have.has(li.lastChild?.textContent || "")) run.lines.append(li);
    this.scroll(true);
  }

  /** Runs the prompt: a new session, or the next turn of this page's session. */
  async run(): Promise<void> {
    const message = this.prompt.value.trim();
    if (!message || this.running) return;
    this.setRunning(true);
    this.starting = true;
    const doc = await this.ctx.document();
    const run = this.chatRun("", true);
    this.asked(run, message, doc ? doc.name + (doc.lines ? ` (${lineSpan(doc.lines)})` : "") : "");
    this.scroll(true);
    this.prompt.value = "";
    const sid = await this.start(message, doc);
    this.adopt(run, sid);
    if (!sid) {
      this.prompt.value ||= message; // to try again
      this.setRunning(false);
      return;
    }
    this.started(sid);
  }

  /**
   * run, this page's new run, has its session id (or "" when it did not
   * start): the events that waited for it are shown now, in its place or
   * in their runs'.
   */
  private adopt(run: ChatRun, sid: string): void {
    this.starting = false;
    if (sid) {
      run.sid = sid;
      run.el.dataset.session = sid;
      this.runs.set(sid, run);
      this.keep(sid, true);
    } else this.say(run, "status warn", "The agent did not start.");
    const held = this.held;
    this.held = [];
    for (const [topic, d] of held) this.event(topic, d);
  }

  /**
   * Starts a run with the page's viewport and selection, on the document
   * open in the panel (doc) with the person's selection in it when there
   * is one; "" when it did not start.
   */
  private async start(message: string, doc: Awaited<ReturnType<AgentContext["document"]>> = null): Promise<string> {
    try {
      const r = await this.client.runAgent({ roomId: this.ctx.canvasId(), message, viewport: this.ctx.viewport() || undefined, selection: this.ctx.selection(),
        ...(doc ? { document: doc.nodeId, ...(doc.lines ? { document_selection: { start_line: doc.lines[0], end_line: doc.lines[1] } } : {}) } : {}) });
      return r.session_id;
    } catch (err) {
      toast(`the agent did not start: ${why(err)}`, "bad");
      return "";
    }
  }

  private started(sid: string): void {
    this.follow(sid);
    this.own = true;
    this.review.replaceChildren();
    if (this.ended.has(sid)) this.finished(sid);
    else this.setRunning(true);
  }

  /** Sends the canvas (or the selection) as an image with the prompt (POST /api/sessions/{id}/messages with imageData). */
  async sendImage(selectionOnly: boolean): Promise<void> {
    const prompt = this.prompt.value.trim() || (selectionOnly ? "What do you see in these shapes?" : "What do you see on this canvas?");
    const imageData = await this.ctx.picture(selectionOnly);
    if (!imageData) {
      toast(selectionOnly ? "select some shapes first" : "open a canvas first", "warn");
      return;
    }
    const said = `${prompt} [image of the ${selectionOnly ? "selection" : "canvas"}, ${Math.round(imageData.length / 1024)} KiB]`;
    let sid = this.session;
    if (!sid) {
      this.starting = true;
      const run = this.chatRun("", true);
      this.asked(run, said);
      sid = await this.start(prompt);
      this.adopt(run, sid);
      if (!sid) return;
      this.started(sid);
    } else {
      this.remember(sid); // a next turn: back in the address if accepted before
      this.say(this.chatRun(sid), "mine image", said, "you: ");
    }
    // Running before the request: the turn it starts may end (agent:status
    // on the stream) before the request's answer is read here.
    this.setRunning(true);
    try {
      const r = await this.client.sendMessage(sid, { prompt, imageData, source: selectionOnly ? "selection" : "canvas" });
      if (!r.delivered) {
        toast("the image was stored, but no agent on this server takes messages", "warn", 8000);
        this.setRunning(false);
      }
    } catch (err) {
      toast(`the image was not sent: ${why(err)}`, "bad");
      this.setRunning(false);
      return;
    }
    this.prompt.value = "";
  }

  private async stop(): Promise<void> {
    if (!this.session) return;
    try {
      await this.client.cancelAgent(this.session);
      this.setRunning(false);
    } catch (err: any) {
      if (err?.status === 404) this.setRunning(false);
      else toast(`could not stop the agent: ${why(err)}`, "bad");
    }
  }

  /** An agent topic from the canvas stream. */
  event(topic: string, d: any): void {
    const sid = String(d?.sessionId || "");
    if (sid && this.starting && !this.runs.has(sid)) { // perhaps the run this page is starting: shown once its id is known
      this.held.push([topic, d]);
      return;
    }
    const run = sid ? this.chatRun(sid) : (this.loose ||= this.chatRun("", false, false));
    if (topic === "agent:status") {
      // A page without a run of its own follows the one going on on the canvas
      // (its todos, then its review), and the next one once that one ended.
      const free = !this.session || (!this.own && this.ended.has(this.session));
      if (sid && sid !== this.session && free && !TERMINAL.has(d.state)) {
        this.follow(sid);
        this.review.replaceChildren();
      }
      if (!this.session || sid === this.session) this.badge(String(d.state)); // not another run's state
      const say = statusText(String(d.state), d.detail);
      if (say) this.say(run, say.warn ? "status warn" : "status", say.text);
      if (sid && TERMINAL.has(d.state)) {
        this.ended.add(sid);
        if (sid === this.session) this.finished(sid);
        void this.outOfView(sid);
      }
      if (sid && sid === this.session) this.refreshSoon();
    } else if (topic === "agent:chat") {
      const role = String(d.message?.role || "assistant");
      this.say(run, role === "user" ? "mine" : "chat", String(d.message?.text ?? ""), role === "assistant" ? "" : role === "user" ? (run.own ? "you: " : "asked: ") : `${role}: `);
      if (sid === this.session) this.refreshSoon();
    } else if (topic === "agent:action") {
      if (d.partial) return;
      this.say(run, "actions", (d.actions || []).map((a: any) => a.name).join(", ") || "(none)", "actions: ");
    } else if (topic === "agent:screenshot_request") {
      this.say(run, "shot", "the agent asked for a picture of the view", "screenshot: ");
    }
  }

  private refreshSoon(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => this.refresh(), 150);
  }

  /** Re-reads the session: todos and turns. */
  private async refresh(): Promise<AgentSession | null> {
    if (!this.session) return null;
    let s: AgentSession;
    try {
      s = await this.client.agentSession(this.session);
    } catch {
      return null;
    }
    this.showTodos(s);
    return s;
  }

  /** Shows session s's todos with their status. */
  private showTodos(s: AgentSession): void {
    (this.el.querySelector("#agent-todos-head") as HTMLElement).hidden = !(s.todos || []).length;
    this.todos.replaceChildren(...(s.todos || []).map((t: any) => h("li", { class: "todo " + t.status, "data-status": t.status },
      h("span", { class: "check", text: t.status === "done" ? "✓" : t.status === "skipped" ? "–" : "○" }), " " + t.text)));
  }

  /**
   * The run the page follows ended: show what it changed, to accept or
   * revert.
   */
  private async finished(sid: string): Promise<void> {
    this.setRunning(false);
    const s = await this.refresh();
    if (!s || sid !== this.session) return;
    this.showReview(sid, s);
  }

  /**
   * Run sid ended while the page watched: its work that is out of view is
   * brought into view when this page started the run; for a run started
   * elsewhere the chat says so, with a Show button.
   */
  private async outOfView(sid: string): Promise<void> {
    let s: AgentSession;
    try {
      s = await this.client.agentSession(sid);
    } catch {
      return;
    }
    const revs = (s.turns || []).filter((t) => t.reverted_rev == null).flatMap((t) => (Array.isArray(t.revs) ? t.revs : []));
    if (!revs.length || s.document || s.canvas_id !== this.ctx.canvasId()) return; // a document's edits show in its panel
    const run = this.runs.get(sid), once = `${sid}/${s.turns.length}`;
    if (!run || this.looked.has(once)) return; // an end told twice
    this.looked.add(once);
    if ((await this.ctx.inView(revs)) !== false || this.runs.get(sid) !== run) return;
    if (run.own) {
      this.ctx.show(revs);
      this.say(run, "status", "Its work was out of view: brought into view.");
    } else {
      this.say(run, "status", "Its work is out of view. ", "", h("button", { type: "button", class: "show-work", text: "Show",
        onclick: () => { if (!this.ctx.show(revs)) toast("none of the agent's shapes is on the canvas now", "warn"); } }));
    }
  }

  /**
   * The review of session s: its turns that changed something, each with
   * Revert or, when the server records it reverted (reverted_rev), marked
   * reverted with "Revert again" (for a turn whose revert was undone: the
   * server refuses it when its changes are not on the canvas); "Revert all"
   * (no body: every turn not reverted yet) or, once some are reverted,
   * "Revert the rest"; "Show" brings what the run made into view; once all
   * are reverted, "Reverted." over the turns. After a
   * revert, and after a refused one, the session is read again and the
   * review shows what the server recorded.
   */
  private showReview(sid: string, s: AgentSession): void {
    const turns = s.turns || [];
    const revsOf = (t: AgentTurn): number[] => (Array.isArray(t.revs) ? t.revs : []).filter((x) => typeof x === "number");
    const all = turns.flatMap(revsOf);
    const applied = s.stats?.actions_applied ?? all.length;
    if (!all.length && !applied) {
      this.review.replaceChildren();
      return;
    }
    const changing = turns.filter((t) => revsOf(t).length).map((t) => ({ n: t.turn, revs: revsOf(t), reverted: t.reverted_rev }));
    const some = changing.some((t) => t.reverted !== undefined);
    const revert = async (turn?: number) => {
      try {
        await this.client.revertAgent(sid, turn !== undefined ? { turn } : {});
        toast(turn !== undefined ? `turn ${turn} was reverted` : some ? "the agent's other changes were reverted" : "the agent's changes were reverted", "ok");
      } catch (err: any) {
        toast(`revert: ${why(err)}`, err?.status === 409 || err?.status === 422 ? "warn" : "bad", 8000);
      }
      if (sid !== this.session) return;
      const fresh = await this.refresh();
      if (fresh && sid === this.session) this.showReview(sid, fresh);
    };
    const revertButton = (n: number, text: string) => h("button", { type: "button", class: "revert-turn", text, onclick: () => revert(n) });
    const rows = changing.map(({ n, revs, reverted }) => h("li", { "data-turn": String(n), class: reverted !== undefined ? "reverted" : "" },
      `turn ${n}: ${revs.length} revision${revs.length === 1 ? ` (rev ${revs[0]}) ` : `s (rev ${Math.min(...revs)}–${Math.max(...revs)}) `}`,
      ...(reverted !== undefined ? [h("span", { class: "muted", text: `reverted (rev ${reverted}) ` }), revertButton(n, "Revert again")]
        : [revertButton(n, "Revert")])));
    const list = rows.length ? h("ul", {}, ...rows) : null;
    if (some && changing.every((t) => t.reverted !== undefined)) {
      this.review.replaceChildren(h("div", { class: "review" }, h("p", { class: "muted", text: "Reverted." }), list));
      return;
    }
    const made = all.length || applied;
    const undone = changing.filter((t) => t.reverted !== undefined).reduce((n, t) => n + t.revs.length, 0);
    this.review.replaceChildren(h("div", { class: "review" },
      h("b", { text: "Review: " }), `the agent made ${made} change${made === 1 ? "" : "s"}` +
        (undone ? `: ${undone} reverted, ${made - undone} left. ` : ". "),
      h("button", { type: "button", id: "agent-accept", text: "Accept", onclick: () => this.accept() }),
      h("button", { type: "button", id: "agent-revert", text: some ? "Revert the rest" : "Revert all", onclick: () => revert() }),
      h("button", { type: "button", id: "agent-show", text: "Show", title: "Bring what the agent made into view",
        onclick: () => { if (!this.ctx.show(all)) toast("none of the agent's shapes is on the canvas now", "warn"); } }),
      list));
    this.scroll(); // the chat, shorter now, at its end still
  }
}

/** What a turn kind (agent:status waiting_context) means, for the chat. */
const TURN_KINDS: Record<string, string> = {
  initial: "",
  followup: "a follow-up",
  low_action: "a follow-up: few actions so far",
  lint: "a layout check",
  replan: "a replan after a conflict",
  message: "a new message",
};

/**
 * The chat line of an agent:status event: a short sentence a person can
 * read, null when the event says nothing the status badge does not (the
 * model streaming). warn marks what a person should notice: an action the
 * host browser never confirmed, a failed run.
 */
export function statusText(state: string, detail: unknown): { text: string; warn?: boolean } | null {
  const d = detail && typeof detail === "object" && !Array.isArray(detail) ? (detail as Record<string, any>) : null;
  const note = typeof detail === "string" ? detail.trim() : "";
  const missed = d?.ack_missed;
  if (missed && typeof missed === "object") {
    if (missed.reason === "no_host") {
      return { warn: true, text: "No host browser was there to confirm one of the agent's actions (its host left and none came back in time): the canvas may be missing it." };
    }
    const resends = Number(missed.resends) || 0;
    return {
      warn: true,
      text: `The host browser never confirmed one of the agent's actions${resends ? ` (sent again ${resends} time${resends === 1 ? "" : "s"})` : ""}: the canvas may be missing it.`,
    };
  }
  const waiting = d?.ack_waiting_host;
  if (waiting && typeof waiting === "object") {
    const n = Array.isArray(waiting.seqs) ? Math.max(waiting.seqs.length, 1) : 1;
    const secs = Math.round((Number(waiting.wait_ms) || 0) / 1000);
    return {
      warn: true,
      text: `The host browser left before confirming ${n === 1 ? "one of the agent's actions" : `${n} of the agent's actions`}: ` +
        `waiting${secs ? ` up to ${secs} s` : ""} for a browser to show ${n === 1 ? "it" : "them"}.`,
    };
  }
  switch (state) {
    case "scheduled":
      if (typeof d?.queue === "number") return { text: `${d.queue} more message${d.queue === 1 ? "" : "s"} waiting: the next turn starts soon.` };
      return { text: note ? `Waiting: ${sentence(note)}` : "Waiting for an agent." };
    case "waiting_context":
      if (typeof d?.turn === "number") {
        const kind = TURN_KINDS[String(d.kind)] ?? String(d.kind ?? "");
        return { text: `Turn ${d.turn} started${kind ? ` (${kind})` : ""}.` };
      }
      return note ? { text: note } : null;
    case "calling_model":
      return { text: typeof d?.model === "string" && d.model ? `Asking the model (${d.model}).` : "Asking the model." };
    case "streaming":
      return note ? { text: note } : null;
    case "done":
      return { text: note ? `Done: ${sentence(note)}` : "Done." };
    case "canceled":
      return { text: note && note !== "canceled" ? `Stopped: ${sentence(note)}` : "Stopped." };
    case "error":
      return { warn: true, text: note ? `Failed: ${sentence(note)}` : "Failed." };
  }
  if (note) return { text: note };
  // An unknown detail: its fields as words, never raw JSON.
  const parts = d ? Object.entries(d).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => `${k.replace(/_/g, " ")} ${v}`) : [];
  return parts.length ? { text: parts.join(", ") + "." } : null;
}

/** Lines a–b of a document, in words. */
function lineSpan([a, b]: [number, number]): string {
  return a === b ? `line ${a}` : `lines ${a}–${b}`;
}

/** text ending as a sentence (a full stop added unless it has one). */
function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : text + ".";
}
