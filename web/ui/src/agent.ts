// The agent panel: prompt, status, chat, todos, stop, the review of what a
// run changed (accept, or revert a turn or the whole run as one command),
// "Send to agent" of the canvas or the selection as an image, and the host
// pages / A2UI surfaces of a host session in a frame.

import type { AgentSession, CanvasClient } from "@canvasd/client";
import { h, toast, why } from "./dom";

const TERMINAL = new Set(["done", "canceled", "error"]);

export interface AgentContext {
  canvasId(): string;
  viewport(): { x: number; y: number; w: number; h: number } | null;
  selection(): string[];
  picture(selectionOnly: boolean): Promise<string | null>;
  token(): string;
}

export class AgentPanel {
  el: HTMLElement;
  session = ""; // the session this page talks to
  private running = false;
  private prompt: HTMLTextAreaElement;
  private log: HTMLElement;
  private status: HTMLElement;
  private todos: HTMLElement;
  private review: HTMLElement;
  private runBtn: HTMLButtonElement;
  private stopBtn: HTMLButtonElement;
  private frame: HTMLIFrameElement;
  private hostName: HTMLInputElement;
  private ended = new Set<string>();
  private reverted = new Map<string, Set<number>>(); // session → turns reverted from the review
  private refreshTimer = 0;

  constructor(private client: CanvasClient, private ctx: AgentContext) {
    this.prompt = h("textarea", { id: "agent-prompt", rows: 4, maxlength: 20000, placeholder: "Ask the agent, e.g. Draft a brutalist poster concept" });
    this.prompt.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); this.run(); }
    });
    this.runBtn = h("button", { type: "button", id: "agent-run", text: "Run", onclick: () => this.run() });
    this.stopBtn = h("button", { type: "button", id: "agent-stop", text: "Stop", hidden: true, onclick: () => this.stop() });
    this.status = h("span", { id: "agent-status", class: "badge", text: "idle" });
    this.log = h("ul", { id: "agent-log", class: "log" });
    this.todos = h("ul", { id: "agent-todos" });
    this.review = h("div", { id: "agent-review" });
    this.hostName = h("input", { id: "host-session", type: "text", maxlength: 128, placeholder: "host session" });
    this.frame = h("iframe", { id: "host-frame", title: "Host page" });
    const sendImg = (sel: boolean) => h("button", { type: "button", id: sel ? "send-selection" : "send-canvas", text: sel ? "Send selection" : "Send canvas",
      title: `Send ${sel ? "the selected shapes" : "the visible canvas"} to the agent as an image, with the prompt`, onclick: () => this.sendImage(sel) });
    this.el = h("aside", { id: "agent-panel" },
      h("div", { class: "tabs" },
        h("button", { type: "button", class: "tab active", "data-tab": "chat", text: "Agent", onclick: () => this.tab("chat") }),
        h("button", { type: "button", class: "tab", "data-tab": "pages", id: "tab-pages", text: "Pages", onclick: () => this.tab("pages") })),
      h("section", { class: "pane", "data-pane": "chat" },
        h("div", { class: "row" }, h("b", { text: "Agent" }), this.status),
        this.prompt,
        h("div", { class: "row" }, sendImg(false), sendImg(true), h("span", { class: "spacer" }), this.stopBtn, this.runBtn),
        this.review,
        h("h3", { text: "Todos" }), this.todos,
        h("h3", { text: "Chat" }), this.log),
      h("section", { class: "pane", "data-pane": "pages", hidden: true },
        h("form", { class: "row", onsubmit: (ev: Event) => { ev.preventDefault(); this.showHost(); } }, this.hostName, h("button", { type: "submit", text: "Open" })),
        h("p", { class: "muted", text: "Agent-written pages and A2UI surfaces of a host session." }),
        this.frame));
  }

  private tab(name: string): void {
    for (const b of this.el.querySelectorAll<HTMLElement>(".tab")) b.classList.toggle("active", b.dataset.tab === name);
    for (const p of this.el.querySelectorAll<HTMLElement>(".pane")) p.hidden = p.dataset.pane !== name;
    if (name === "pages" && !this.frame.src) this.showHost();
  }

  /** Shows a host session's page; the server swaps the token for a page ticket (303) at once. */
  private showHost(): void {
    const s = this.hostName.value.trim() || this.ctx.canvasId().replace(/[^A-Za-z0-9_.-]/g, "-");
    this.hostName.value = s;
    this.frame.src = `/host/${encodeURIComponent(s)}/?access_token=${encodeURIComponent(this.ctx.token())}`;
  }

  /** Starts over for another canvas. */
  reset(): void {
    this.session = "";
    this.running = false;
    this.log.replaceChildren();
    this.todos.replaceChildren();
    this.review.replaceChildren();
    this.status.textContent = "idle";
    this.setRunning(false);
    this.hostName.value = "";
    this.frame.removeAttribute("src");
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

  private line(cls: string, who: string, text: string): void {
    this.log.prepend(h("li", { class: cls }, h("span", { class: "who", text: who }), text));
    while (this.log.children.length > 300) this.log.lastChild!.remove();
  }

  /** Runs the prompt: a new session, or the next turn of this page's session. */
  async run(): Promise<void> {
    const message = this.prompt.value.trim();
    if (!message || this.running) return;
    this.setRunning(true);
    this.line("mine", "you: ", message);
    const sid = await this.start(message);
    if (!sid) {
      this.setRunning(false);
      return;
    }
    this.prompt.value = "";
    this.started(sid);
  }

  /** Starts a run with the page's viewport and selection; "" when it did not start. */
  private async start(message: string): Promise<string> {
    try {
      const r = await this.client.runAgent({ roomId: this.ctx.canvasId(), message, viewport: this.ctx.viewport() || undefined, selection: this.ctx.selection() });
      return r.session_id;
    } catch (err) {
      toast(`the agent did not start: ${why(err)}`, "bad");
      return "";
    }
  }

  private started(sid: string): void {
    this.session = sid;
    this.el.dataset.sessionId = sid;
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
    let sid = this.session;
    if (!sid) {
      sid = await this.start(prompt);
      if (!sid) return;
      this.started(sid);
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
    this.line("mine image", "you: ", `${prompt} [image of the ${selectionOnly ? "selection" : "canvas"}, ${Math.round(imageData.length / 1024)} KiB]`);
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
    const short = sid.slice(0, 8);
    if (topic === "agent:status") {
      // A page without a run of its own follows the one going on on the canvas: its todos, then its review.
      if (sid && !this.session && !TERMINAL.has(d.state)) {
        this.session = sid;
        this.el.dataset.sessionId = sid;
      }
      this.status.textContent = String(d.state);
      this.status.className = "badge " + String(d.state);
      const detail = typeof d.detail === "string" ? d.detail : d.detail ? JSON.stringify(d.detail) : "";
      this.line("status", `${d.state}${short ? " · " + short : ""} `, detail);
      if (sid && TERMINAL.has(d.state)) {
        this.ended.add(sid);
        if (sid === this.session) this.finished(sid);
      }
      if (sid && sid === this.session) this.refreshSoon();
    } else if (topic === "agent:chat") {
      this.line("chat", `${d.message?.role || "agent"}: `, String(d.message?.text ?? ""));
      if (sid === this.session) this.refreshSoon();
    } else if (topic === "agent:action") {
      if (d.partial) return;
      this.line("actions", "actions: ", (d.actions || []).map((a: any) => a.name).join(", ") || "(none)");
    } else if (topic === "agent:screenshot_request") {
      this.line("shot", "screenshot: ", "the agent asked for a picture of the view");
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
    this.todos.replaceChildren(...(s.todos || []).map((t: any) => h("li", { class: "todo " + t.status, "data-status": t.status },
      h("span", { class: "check", text: t.status === "done" ? "✓" : t.status === "skipped" ? "–" : "○" }), " " + t.text)));
    return s;
  }

  /** A run of this page ended: show what it changed, to accept or revert. */
  private async finished(sid: string): Promise<void> {
    this.setRunning(false);
    const s = await this.refresh();
    if (!s || sid !== this.session) return;
    const turns = ((s as any).turns || []) as any[];
    const revsOf = (t: any): number[] => (Array.isArray(t.revs) ? t.revs : []).filter((x: any) => typeof x === "number");
    const all = turns.flatMap(revsOf);
    const applied = s.stats?.actions_applied ?? all.length;
    if (!all.length && !applied) {
      this.review.replaceChildren();
      return;
    }
    // Turns already reverted from this review: a turn is reverted once, and
    // "Revert all" then takes back the turns that are left.
    let reverted = this.reverted.get(sid);
    if (!reverted) this.reverted.set(sid, (reverted = new Set<number>()));
    const done = reverted;
    const changing = turns.filter((t) => revsOf(t).length).map((t, i) => ({ n: typeof t.turn === "number" ? t.turn : i + 1, revs: revsOf(t) }));
    let whole = false; // the whole run was reverted (also when the session lists no turns)
    const render = () => {
      if (whole || (changing.length && changing.every((t) => done.has(t.n)))) {
        this.review.replaceChildren(h("p", { class: "muted", text: "Reverted." }));
        return;
      }
      const rows = changing.map(({ n, revs }) => h("li", { "data-turn": String(n), class: done.has(n) ? "reverted" : "" },
        `turn ${n}: ${revs.length} revision${revs.length === 1 ? ` (rev ${revs[0]}) ` : `s (rev ${Math.min(...revs)}–${Math.max(...revs)}) `}`,
        done.has(n) ? h("span", { class: "muted", text: "reverted" }) : h("button", { type: "button", class: "revert-turn", text: "Revert", onclick: () => revert(n) })));
      this.review.replaceChildren(h("div", { class: "review" },
        h("b", { text: "Review: " }), `the agent made ${all.length || applied} change${(all.length || applied) === 1 ? "" : "s"}. `,
        h("button", { type: "button", id: "agent-accept", text: "Accept", onclick: () => this.review.replaceChildren(h("p", { class: "muted", text: "Accepted." })) }),
        h("button", { type: "button", id: "agent-revert", text: done.size ? "Revert the rest" : "Revert all", onclick: () => revert() }),
        rows.length ? h("ul", {}, ...rows) : null));
    };
    const revert = async (turn?: number) => {
      try {
        if (turn !== undefined) {
          await this.client.revertAgent(sid, { turn });
          done.add(turn);
          toast(`turn ${turn} was reverted`, "ok");
        } else if (!done.size) {
          await this.client.revertAgent(sid, {});
          for (const t of changing) done.add(t.n);
          whole = true;
          toast("the agent's changes were reverted", "ok");
        } else {
          // The whole run would revert the reverted turns again: the turns left, as one command.
          const left = changing.filter((t) => !done.has(t.n)).map((t) => t.n);
          await this.client.revertAgent(sid, { turns: left });
          for (const n of left) done.add(n);
          toast("the agent's other changes were reverted", "ok");
        }
      } catch (err: any) {
        toast(`revert: ${why(err)}`, err?.status === 409 ? "warn" : "bad", 8000);
      }
      if (sid === this.session) render();
    };
    render();
  }
}
