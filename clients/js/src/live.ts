// LiveCanvas: one canvas followed live, with the browser protocol
// (declaration, host election, ordered and acknowledged agent envelopes,
// screenshots, set_viewport, viewport/selection publishing).

import { backoff, sleep, type ApplyOptions, type ApplyResult, type CanvasClient, type CanvasStream } from "./client.js";
import { CanvasError } from "./errors.js";
import { randomHex } from "./ids.js";
import { TERMINAL_AGENT_STATES } from "./events.js";
import { CanvasModel } from "./model.js";
import type {
  AgentAction, AgentActionEnvelope, AgentChat, AgentStatus, ArgsOf, CommandType, Commit, Gesture, GestureRequest, InvokeEvent, Rect,
  Screenshot, ScreenshotRequest, AgentHost, HostPresentNotice,
} from "./types.js";

/** Browser capabilities a client can declare on its stream. */
export type Capability = "screenshot" | "viewport";

/** What the page gives LiveCanvas so that it can act as the agent's eyes and hands. All optional. */
export interface BrowserHooks {
  /**
   * Takes a screenshot for the agent. Called only while this client is the
   * canvas's host (the server sends screenshot requests to the host alone).
   * req.bounds is the region in canvas coordinates, req.maxSize the largest
   * picture; resolve with a data:image/... URL and what it shows.
   */
  screenshot?: (req: ScreenshotRequest) => Promise<Screenshot>;
  /**
   * Pans and zooms the view smoothly so that box (canvas coordinates) is
   * shown: the agent's set_viewport. Called only while this client is the host.
   */
  setViewport?: (box: Rect, action: AgentAction) => void | Promise<void>;
  /**
   * The current viewport (canvas coordinates) and selected shape ids. While an
   * agent session runs on the canvas it is read at most every viewIntervalMs
   * (80 ms) and published to each running session that has not received this
   * very view yet (a session that starts later gets it too), whose next turn
   * uses it. A publication that failed is sent again at the next read, unless
   * the server refused it with a 4xx other than 408 and 429 (then the view is
   * sent again only once it changes).
   */
  view?: () => { viewport?: Rect; selection?: string[] } | null | undefined;
}

/** Options of CanvasClient.live (LiveCanvas). */
export interface LiveCanvasOptions {
  /**
   * This browser's id on the canvas (default: random). It names the host and signs acks and views,
   * which the server takes only from the token whose stream declared it; a stream declaring an id
   * another token's open stream holds is refused (409).
   */
  clientId?: string;
  /**
   * Declared capabilities. Default: "screenshot" when hooks.screenshot is
   * given, "viewport" when hooks.setViewport is. Only a client declaring
   * "screenshot" can be elected host.
   */
  capabilities?: Capability[];
  hooks?: BrowserHooks;
  /** Minimum spacing of viewport/selection publications (default 80 ms). */
  viewIntervalMs?: number;
  /** Ack applied agent envelopes (default true). */
  ack?: boolean;
}

/** A complete agent envelope as LiveCanvas hands it over: the actions not applied before. */
export interface AgentActionsEvent {
  envelope: AgentActionEnvelope;
  /** The envelope's actions minus those whose id was applied before (duplicates). */
  actions: AgentAction[];
}

/** The events of a LiveCanvas and their arguments. */
export interface LiveCanvasEvents {
  /** The model changed: a snapshot was (re)loaded (commit null) or a commit applied. */
  state: [model: CanvasModel, commit: Commit | null];
  /** A commit was applied to the model. */
  commit: [c: Commit];
  /** The stream replayed what was missed; the model is current. */
  ready: [model: CanvasModel];
  connection: [state: "open" | "reconnecting" | "closed"];
  /** The host of the canvas changed (hostId "" when there is none). */
  host: [hostId: string, isHost: boolean];
  gesture: [g: Gesture];
  /** A complete agent envelope, in seq order, duplicates removed (acked, when ack is on, once applied). */
  "agent:action": [e: AgentActionsEvent];
  /** A partial envelope: a preview of actions still streaming (never applied). */
  "agent:preview": [envelope: AgentActionEnvelope];
  "agent:chat": [c: AgentChat];
  "agent:status": [s: AgentStatus];
  "agent:screenshot_request": [r: ScreenshotRequest];
  /** The host session of the canvas's id was presented (show, hide, navigate). */
  "host:present": [p: HostPresentNotice];
  /** Something failed in the background (a snapshot read, an ack, a hook). */
  error: [err: unknown];
  /** After a failure of the stream: how long it waits before it reads the canvas and follows it again. */
  backoff: [delayMs: number];
}

type Listener<K extends keyof LiveCanvasEvents> = (...args: LiveCanvasEvents[K]) => void;

/** The invoke action name of agent screenshots. */
export const SCREENSHOT_ACTION = "agent:screenshot";

interface SessionTrack {
  lastSeq: number;
  applied: Set<string>;
  /** The complete envelopes this client applied and acked (seq → appliedAt): a resend of one is acked again. */
  acked: Map<number, number>;
}

/** How many acked seqs a session remembers (for acking resends again). */
const MAX_ACKED_SEQS = 1024;

/** The first delay after a failure of the snapshot read or the stream, in ms (with jitter, doubled per consecutive failure). */
const BACKOFF_MS = 500;
/** The cap on that delay, in ms. */
const MAX_BACKOFF_MS = 30000;
/** How long the stream must stay caught up, without a failure, before the failure count starts over (ms). */
const HEALTHY_MS = 5000;

/**
 * How many times in a row an ack or a view refused with 403 is sent again
 * (an ack FORBIDDEN_RETRY_MS later, a view at the next tick) before it
 * counts as refused: with several servers sharing one database, the one
 * answering learns of this browser's stream (on another server) a moment
 * after the stream connects.
 */
const FORBIDDEN_RETRIES = 5;
const FORBIDDEN_RETRY_MS = 80;

/** Whether a failed view publication would fail again with the same view (a 4xx other than 408 and 429). */
function refused(err: unknown): boolean {
  const st = err instanceof CanvasError ? err.status : 0;
  return st >= 400 && st < 500 && st !== 408 && st !== 429;
}

/**
 * One canvas followed live: a CanvasModel kept current from the snapshot and
 * the stream (re-reading the snapshot after a reset or a gap), typed events,
 * and the browser side of the agent protocol:
 *
 * - the stream declares this client (clientId, capabilities); the server
 *   elects one host per canvas among clients declaring "screenshot" and
 *   announces it (event "host");
 * - agent envelopes are handled in seq order: a seq at or below the last one
 *   of its session is ignored, and so is an action id applied before; each
 *   complete envelope applied is acked (sessionId, seq, clientId), and acked
 *   again when it comes again (a resend: the ack may have been lost);
 * - set_viewport actions reach hooks.setViewport, and screenshot requests
 *   hooks.screenshot, only while this client is the host; an envelope whose
 *   set_viewport did not reach the hook (not the host, no hook, a bad box,
 *   the hook failed), or that came out of order, was not applied and is
 *   not acked: the server resends it to the host or counts it missed;
 * - while an agent session runs, hooks.view is published at most every 80 ms;
 * - invokes are answered by action name (handle()).
 *
 * A failure (the snapshot read, the stream refused, a revision gap, a commit
 * the model cannot apply) is reported as "error" and followed by a re-read of
 * the snapshot and a new stream after a delay of 250–500 ms, doubled per
 * consecutive failure up to 30 s; the count starts over once the stream has
 * stayed caught up for 5 s. close() ends that delay at once.
 */
export class LiveCanvas {
  readonly canvasId: string;
  readonly clientId: string;
  readonly capabilities: Capability[];
  /** The model; undefined until the first snapshot is read. */
  model?: CanvasModel;
  /** The current host's client id ("" when none or not yet announced). */
  hostId = "";
  /** Resolves when the model is loaded and the stream caught up. */
  readonly ready: Promise<CanvasModel>;

  private readonly client: CanvasClient;
  private readonly hooks: BrowserHooks;
  private readonly viewInterval: number;
  private readonly ackOn: boolean;
  private readonly listeners = new Map<string, Set<(...a: any[]) => void>>();
  private readonly handlers = new Map<string, (payload: unknown, inv: InvokeEvent) => unknown>();
  private readonly sessions = new Map<string, SessionTrack>();
  private readonly running = new Set<string>();
  private readonly ctl = new AbortController();
  private stream?: CanvasStream;
  private resolveReady!: (m: CanvasModel) => void;
  private viewTimer: ReturnType<typeof setInterval> | null = null;
  /** Per running session, the view (JSON) it has received. */
  private readonly publishedViews = new Map<string, string>();
  /** Per running session, its views' 403s in a row (FORBIDDEN_RETRIES). */
  private readonly forbiddenViews = new Map<string, number>();
  private viewInFlight = false;

  constructor(client: CanvasClient, canvasId: string, opts: LiveCanvasOptions = {}) {
    this.client = client;
    this.canvasId = canvasId;
    this.hooks = opts.hooks ?? {};
    this.clientId = opts.clientId ?? "b-" + randomHex(8);
    this.capabilities = opts.capabilities ?? [
      ...(this.hooks.screenshot ? (["screenshot"] as const) : []),
      ...(this.hooks.setViewport ? (["viewport"] as const) : []),
    ];
    this.viewInterval = opts.viewIntervalMs ?? 80;
    this.ackOn = opts.ack ?? true;
    this.ready = new Promise((r) => (this.resolveReady = r));
    if (this.hooks.screenshot) {
      const shoot = this.hooks.screenshot;
      this.handle(SCREENSHOT_ACTION, (payload) => {
        if (!this.isHost) throw new Error(`client ${this.clientId} is not the host of canvas ${this.canvasId}`);
        return shoot(payload as ScreenshotRequest);
      });
    }
    void this.run();
  }

  /** Whether this client is the canvas's elected host. */
  get isHost(): boolean {
    return this.hostId !== "" && this.hostId === this.clientId;
  }

  /** Agent sessions seen running on this canvas (a non-terminal agent:status). */
  get runningSessions(): string[] {
    return [...this.running];
  }

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof LiveCanvasEvents>(event: K, fn: Listener<K>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => set!.delete(fn);
  }

  private emit<K extends keyof LiveCanvasEvents>(event: K, ...args: LiveCanvasEvents[K]): void {
    for (const fn of this.listeners.get(event) ?? []) {
      try {
        fn(...args);
      } catch (err) {
        if (event !== "error") this.emit("error", err);
      }
    }
  }

  /**
   * Answers invokes of this action name with handler(payload): its result
   * (awaited) is sent as {ok: true, result}, a throw as {ok: false, error}.
   * Invokes of an action without a handler are left to other browsers.
   * Returns a function that removes the handler.
   */
  handle(action: string, handler: (payload: unknown, inv: InvokeEvent) => unknown): () => void {
    this.handlers.set(action, handler);
    return () => {
      if (this.handlers.get(action) === handler) this.handlers.delete(action);
    };
  }

  /**
   * Applies a command planned against this model's revision (baseRev defaults
   * to model.rev). For a command type, args are typed as that type's.
   */
  apply<T extends CommandType | (string & {})>(type: T, args?: ArgsOf<T>, opts: ApplyOptions = {}): Promise<ApplyResult> {
    return this.client.applyResult(this.canvasId, type, args, { baseRev: this.model?.rev, ...opts });
  }

  /** A throttled gesture sender for this canvas (see CanvasClient.gestures). */
  gestures(intervalMs?: number): { send(g: GestureRequest): void; close(): void } {
    return this.client.gestures(this.canvasId, { intervalMs, onError: (e) => this.emit("error", e) });
  }

  /** Stops following the canvas. */
  close(): void {
    this.ctl.abort(new Error("closed"));
    this.stream?.close();
    this.stopViews();
    this.emit("connection", "closed");
  }

  // ------------------------------------------------------------ stream

  private async load(): Promise<void> {
    const snap = await this.client.getState(this.canvasId, { signal: this.ctl.signal });
    this.model = new CanvasModel(snap);
    this.emit("state", this.model, null);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.ctl.signal.aborted) {
      let caughtUpAt = 0; // when this stream first caught up
      try {
        await this.load();
        const s = this.client.stream(this.canvasId, {
          lastEventId: this.model!.resumeId(), clientId: this.clientId, capabilities: this.capabilities,
          signal: this.ctl.signal, onConnection: (st) => this.emit("connection", st),
        });
        this.stream = s;
        for await (const ev of s) {
          switch (ev.event) {
            case "canvas_commit": {
              const out = this.model!.apply(ev.data);
              if (out === "gap") throw new Error(`revision gap before ${ev.data.rev}: re-reading the snapshot`);
              if (out === "applied") {
                this.emit("commit", ev.data);
                this.emit("state", this.model!, ev.data);
              }
              break;
            }
            case "caught_up":
              caughtUpAt ||= Date.now();
              this.resolveReady(this.model!);
              this.emit("ready", this.model!);
              break;
            case "reset":
              await this.load();
              s.lastEventId = this.model!.resumeId();
              break;
            case "gesture":
              this.emit("gesture", ev.data);
              break;
            case "agent:host":
              this.setHost(ev.data);
              break;
            case "agent:action":
              this.onEnvelope(ev.data);
              break;
            case "agent:chat":
              this.emit("agent:chat", ev.data);
              break;
            case "agent:status":
              this.onStatus(ev.data);
              break;
            case "agent:screenshot_request":
              this.emit("agent:screenshot_request", ev.data);
              break;
            case "invoke":
              void this.onInvoke(ev.data);
              break;
            case "host:present":
              this.emit("host:present", ev.data);
              break;
          }
        }
        return; // closed
      } catch (err) {
        if (this.ctl.signal.aborted) return;
        this.emit("error", err);
        // Events alone do not make the stream healthy: a failure that comes
        // back after every caught_up must back off more and more.
        if (caughtUpAt && Date.now() - caughtUpAt >= HEALTHY_MS) failures = 0;
        failures++;
        const d = backoff(BACKOFF_MS, failures - 1, MAX_BACKOFF_MS);
        this.emit("backoff", d);
        try {
          await sleep(d, this.ctl.signal);
        } catch {
          return; // closed
        }
      }
    }
  }

  private setHost(h: AgentHost): void {
    const id = h.host_client_id || "";
    if (id === this.hostId) return;
    this.hostId = id;
    this.emit("host", id, this.isHost);
  }

  // ------------------------------------------------------------ agent envelopes

  private onEnvelope(env: AgentActionEnvelope): void {
    let t = this.sessions.get(env.sessionId);
    if (!t) {
      t = { lastSeq: 0, applied: new Set(), acked: new Map() };
      this.sessions.set(env.sessionId, t);
      if (this.sessions.size > 64) this.sessions.delete(this.sessions.keys().next().value!);
    }
    this.markRunning(env.sessionId);
    if (env.seq <= t.lastSeq) {
      // A resend of an envelope applied here: our ack may have been lost. One
      // never applied here (missed, then overtaken by a later seq) stays
      // unapplied, out of order, and unacked: an ack says it was applied.
      const appliedAt = t.acked.get(env.seq);
      if (!env.partial && appliedAt !== undefined) void this.ack(env, appliedAt);
      return;
    }
    t.lastSeq = env.seq;
    if (env.partial) {
      this.emit("agent:preview", env);
      return;
    }
    const track = t;
    const fresh = env.actions.filter((a) => !track.applied.has(a.id));
    for (const a of fresh) track.applied.add(a.id);
    const appliedAt = Date.now();
    let applied = true;
    const moves: Promise<unknown>[] = [];
    for (const a of fresh) {
      if (a.name !== "set_viewport") continue;
      const box = viewportBox(a.params);
      if (!box || !this.isHost || !this.hooks.setViewport) {
        applied = false; // the host's view did not move
        continue;
      }
      try {
        moves.push(Promise.resolve(this.hooks.setViewport(box, a)));
      } catch (e) {
        applied = false;
        this.emit("error", e);
      }
    }
    this.emit("agent:action", { envelope: env, actions: fresh });
    if (!applied) return;
    const acked = () => {
      track.acked.set(env.seq, appliedAt);
      if (track.acked.size > MAX_ACKED_SEQS) track.acked.delete(track.acked.keys().next().value!);
      void this.ack(env, appliedAt);
    };
    if (moves.length === 0) acked();
    else Promise.all(moves).then(acked, (e) => this.emit("error", e));
  }

  /** Acks an applied envelope; a 403 is sent again FORBIDDEN_RETRIES times first (see there). */
  private async ack(env: AgentActionEnvelope, appliedAt: number): Promise<void> {
    if (!this.ackOn) return;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.client.ackEnvelope({ sessionId: env.sessionId, seq: env.seq, clientId: this.clientId, appliedAt });
        return;
      } catch (e) {
        this.emit("error", e);
        if (!(e instanceof CanvasError) || e.status !== 403 || attempt >= FORBIDDEN_RETRIES || this.ctl.signal.aborted) return;
      }
      try {
        await sleep(FORBIDDEN_RETRY_MS, this.ctl.signal);
      } catch {
        return; // closed
      }
    }
  }

  private onStatus(s: AgentStatus): void {
    if (TERMINAL_AGENT_STATES.has(s.state)) {
      this.running.delete(s.sessionId);
      this.publishedViews.delete(s.sessionId);
      this.forbiddenViews.delete(s.sessionId);
      if (this.running.size === 0) this.stopViews();
    } else {
      this.markRunning(s.sessionId);
    }
    this.emit("agent:status", s);
  }

  private markRunning(sessionId: string): void {
    if (this.running.has(sessionId)) return;
    this.running.add(sessionId);
    if (!this.hooks.view || this.ctl.signal.aborted) return;
    if (!this.viewTimer) this.viewTimer = setInterval(() => this.publishView(), this.viewInterval);
    this.publishView(); // the new session has no view yet (or, when one is in flight, at the next tick)
  }

  private stopViews(): void {
    if (this.viewTimer) clearInterval(this.viewTimer);
    this.viewTimer = null;
  }

  /**
   * Reads hooks.view and publishes it to each running session that has not
   * received it. A session counts as having received a view only once its
   * publication succeeded (or was refused with a 4xx other than 408/429; a
   * 403 only after FORBIDDEN_RETRIES in a row), so a failed one is sent
   * again at the next tick.
   */
  private publishView(): void {
    if (this.viewInFlight || !this.hooks.view || this.running.size === 0) return;
    let v: ReturnType<NonNullable<BrowserHooks["view"]>>;
    try {
      v = this.hooks.view();
    } catch (e) {
      this.emit("error", e);
      return;
    }
    if (!v) return;
    const view = v;
    const key = JSON.stringify(view);
    const due = [...this.running].filter((id) => this.publishedViews.get(id) !== key);
    if (due.length === 0) return;
    this.viewInFlight = true;
    const sent = (sessionId: string) => {
      this.forbiddenViews.delete(sessionId);
      if (this.running.has(sessionId)) this.publishedViews.set(sessionId, key);
    };
    const forbiddenAgain = (sessionId: string, e: unknown): boolean => {
      const n = this.forbiddenViews.get(sessionId) ?? 0;
      if (!(e instanceof CanvasError) || e.status !== 403 || n >= FORBIDDEN_RETRIES || !this.running.has(sessionId)) return false;
      this.forbiddenViews.set(sessionId, n + 1);
      return true;
    };
    Promise.all(due.map((sessionId) =>
      this.client.publishView({ sessionId, clientId: this.clientId, viewport: view.viewport, selection: view.selection }).then(
        () => sent(sessionId),
        (e) => {
          if (refused(e) && !forbiddenAgain(sessionId, e)) sent(sessionId);
          this.emit("error", e);
        })))
      .finally(() => (this.viewInFlight = false));
  }

  // ------------------------------------------------------------ invokes

  private async onInvoke(inv: InvokeEvent): Promise<void> {
    const handler = this.handlers.get(inv.action);
    if (!handler) return;
    let answer: { ok: boolean; result?: unknown; error?: unknown };
    try {
      answer = { ok: true, result: (await handler(inv.payload, inv)) ?? null };
    } catch (err) {
      answer = { ok: false, error: String((err as Error)?.message ?? err) };
    }
    try {
      await this.client.answerInvoke(inv.invoke_id, answer);
    } catch (e) {
      this.emit("error", e);
    }
  }
}

/** The box of a set_viewport action's params ({x, y, w, h} with a positive size), or null. */
export function viewportBox(p: Record<string, unknown> | undefined): Rect | null {
  if (!p) return null;
  const n = (k: string) => (typeof p[k] === "number" && Number.isFinite(p[k]) ? (p[k] as number) : NaN);
  const box = { x: n("x"), y: n("y"), w: n("w"), h: n("h") };
  if ([box.x, box.y, box.w, box.h].some(Number.isNaN) || box.w <= 0 || box.h <= 0) return null;
  return box;
}
