// CanvasClient: the HTTP API of canvasd (REST and the canvas stream).

import { CanvasError, ConflictError } from "./errors.js";
import { newIdempotencyKey } from "./ids.js";
import { SSEParser } from "./sse.js";
import { LiveCanvas } from "./live.js";
import type { LiveCanvasOptions } from "./live.js";
import type {
  AgentAck, AgentCancelResult, AgentRevertRequest, AgentRunRequest, AgentRunResponse, AgentSession, AgentSessionList, AgentView, ArgsOf, BatchCommand, BatchResult, Canvas,
  CommandType, Commit, ConflictResult, DeleteLinesArgs, DocContent, DocDiff, DocSelection, EventsPage, GestureAck,
  GestureRequest, InsertLinesArgs, InvokeAnswer, InvokeRequest, MessageAccepted, MessageRequest, NamedSnapshot,
  NamedSnapshotList, NamedSnapshotRequest, Problem, ReplaceLinesArgs, RevertToSnapshotArgs, RevisionResult,
  SearchReplaceArgs, Snapshot, TokenRequest, TokenResponse, HostViewerURL,
} from "./types.js";
import type { CanvasEventMap, StreamEvent } from "./events.js";
import { isKnownEvent } from "./events.js";

/** Options of a CanvasClient. */
export interface ClientOptions {
  /** The server, e.g. "http://127.0.0.1:8080"; "" in a page served by canvasd (same origin). */
  baseUrl: string;
  /** The bearer token, or a function returning the current one (sent as `Authorization: Bearer`, never in a URL). */
  token?: string | (() => string | undefined);
  /** How many times a request that is safe to repeat is retried (default 3); see `CanvasClient`. */
  retries?: number;
  /** The first retry delay in ms (default 100), doubled each retry, with jitter. */
  backoffMs?: number;
  /** The cap on one retry delay in ms (default 5000). */
  maxBackoffMs?: number;
  /** Per-request timeout in ms (default 30000; streams are not bound by it). */
  timeoutMs?: number;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
}

/** The outcome of an applied command (HTTP 200). */
export interface ApplyResult {
  /** The revision the command committed as (`current_rev`). */
  rev: number;
  cmdId: string;
  eventId: string;
  /** Ids the command created, in order. */
  createdIds: string[];
  /** True when baseRev was behind the head but nothing the command touches had changed since. */
  rebased: boolean;
  /** The command-specific result (document and history verbs). */
  result?: RevisionResult["result"];
  /** True when the server answered from its idempotency store: an earlier attempt had applied. */
  replayed: boolean;
  /** The idempotency key of the command that applied. */
  idempotencyKey: string;
  /** How many times onConflict re-planned before it applied. */
  replans: number;
  /** The whole response body. */
  body: RevisionResult;
}

/** What a re-plan callback returns: the next command, or null to give up (the ConflictError is thrown). */
export type Replan = { type: CommandType | string; args?: Record<string, unknown> } | null | undefined;

/**
 * Called on a 409 with the conflict and the freshly read snapshot; returns the
 * command to send next at the fresh head (or null to give up).
 */
export type ConflictHandler = (conflict: ConflictError, fresh: Snapshot) => Replan | Promise<Replan>;

/** Options of apply and applyResult. */
export interface ApplyOptions {
  /**
   * The head_rev the command was planned against. Default: the newest revision
   * this client has seen for the canvas (getState, apply, or a stream it
   * follows), else the canvas's current head.
   */
  baseRev?: number;
  /** The idempotency key; default a fresh key of the client's own. Re-plans derive `<key>.r<n>`. */
  idempotencyKey?: string;
  /** Any stale baseRev is a 409, even without overlapping changes. */
  strict?: boolean;
  /** The command id (`cmd_id` of the commit); re-plans derive `<id>.r<n>`. */
  cmdId?: string;
  /** Re-plans a conflicting command (see ConflictHandler); without it a 409 throws ConflictError. */
  onConflict?: ConflictHandler;
  /** How many re-plans at most (default 3), after which the last ConflictError is thrown. */
  maxRetries?: number;
  /** Cancels the command: once aborted nothing more is sent, and the call throws the signal's reason (see applyResult). */
  signal?: AbortSignal;
}

/** Options of stream(). */
export interface StreamOptions {
  /** Resume after this event id (a snapshot's head_event_id, a commit's event_id, or a revision). */
  lastEventId?: string;
  /** Browser declaration sent with the stream request (see LiveCanvas). */
  clientId?: string;
  /** Capabilities of a declared browser, e.g. ["screenshot", "viewport"]. */
  capabilities?: string[];
  /** Ends the stream. The stream listens to it only while it is being read: the listener is removed when the stream ends. */
  signal?: AbortSignal;
  /** A connection on which nothing arrives (not even a heartbeat) for this long is dropped and reopened (default 45000 ms). */
  idleTimeoutMs?: number;
  /**
   * The first reconnect delay in ms (default 500; the last `retry:` the
   * server sent on any connection of this stream replaces it), doubled per
   * consecutive failure. Consecutive `reset` events wait too: the first
   * reconnects at once, each further one waits this delay doubled per reset.
   */
  reconnectDelayMs?: number;
  /** The cap on the reconnect delay (default 30000 ms). A refusal with Retry-After (a 429 when the token holds too many streams, a 503) waits at least that long, up to this cap. */
  maxReconnectDelayMs?: number;
  /** Consecutive failed connects after which the stream throws (default: never gives up; a 400/401/403/404 throws at once). */
  maxReconnects?: number;
  /** Called after each connect with whether it succeeded (for a connection indicator). */
  onConnection?: (state: "open" | "reconnecting") => void;
  /** Called with the delay the stream waits before it reconnects, after a `reset` ("reset") or a failure ("error"); not called when it reconnects at once. */
  onBackoff?: (delayMs: number, after: "reset" | "error") => void;
}

/** Options of exportCanvas. */
export interface ExportOptions {
  /** `png` (default), `svg`, `jsoncanvas` or `excalidraw`. */
  format?: "png" | "svg" | "jsoncanvas" | "excalidraw";
  /** The canvas as it was at this revision. */
  atRev?: number;
  /** Only these node and edge ids. */
  ids?: string[];
  /** The page region to draw: [x, y, w, h]. */
  bounds?: [number, number, number, number];
  /** A PNG's pixels per page unit (0.01 to 8, default 1). */
  scale?: number;
  background?: "white" | "transparent";
  signal?: AbortSignal;
}

/** What exportCanvas resolves to. */
export interface ExportResult {
  data: Uint8Array;
  contentType: string;
  /** The revision the export shows. */
  rev: number;
}

/** Options of importFile. */
export interface ImportOptions {
  format: "jsoncanvas" | "excalidraw" | "mermaid";
  mode?: "merge" | "replace";
  /** The revision the import was planned against (default: the head). */
  baseRev?: number;
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** A resumable canvas stream: an async iterable of typed events. */
export interface CanvasStream extends AsyncIterable<StreamEvent> {
  /** The id the next connect resumes after; set it (e.g. to a re-read snapshot's head_event_id) after a reset. */
  lastEventId: string;
  /** How many connections were opened. */
  readonly connects: number;
  /** Ends the stream: the iterator finishes, and no event received but not yet yielded is yielded. */
  close(): void;
}

const RETRY_STATUSES = new Set([502, 503, 504]);

/** Stream connects refused with these statuses throw at once (as in the Go client); any other failure reconnects. */
const FATAL_STREAM_STATUSES = new Set([400, 401, 403, 404]);

/** What invoke waits beyond its timeout_ms (default 10 s) for the server's answer to arrive. */
const INVOKE_SLACK_MS = 5000;

/**
 * A path segment. ":" stays literal: it is valid in a segment, common in
 * canvasd ids ("shape:box"), and the server matches path parameters as sent.
 */
function seg(s: string): string {
  if (typeof s !== "string" || s === "") throw new TypeError(`path parameter must be a non-empty string, got ${JSON.stringify(s)}`);
  return encodeURIComponent(s).replace(/%3A/gi, ":");
}

/** A Retry-After header given in seconds, in ms; undefined when absent or not a number of seconds. */
function retryAfterMs(h: string | null): number | undefined {
  if (h === null || !/^\d+$/.test(h.trim())) return undefined;
  return Number(h.trim()) * 1000;
}

/** The nth delay (n ≥ 0) of an exponential backoff from base, capped at max, with jitter (half to all of it), in ms. */
export function backoff(base: number, n: number, max: number): number {
  return Math.min(max, base * 2 ** Math.min(n, 30)) * (0.5 + 0.5 * Math.random());
}

/** Resolves after ms, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

interface RequestInit2 {
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  /** Safe to repeat: retried after a network error or a 502/503/504. */
  retry?: boolean;
  idempotencyKey?: string;
  /** Cancels the request; once aborted, no further attempt is sent and send() throws its reason. */
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** This request's timeout per attempt in ms (default: the client's timeoutMs). */
  timeoutMs?: number;
  /** A body sent as it is (a file), with its Content-Type; instead of body. */
  raw?: { data: string | Uint8Array | Blob; contentType: string };
  /** Read the answer as bytes (Answer.bytes) instead of text. */
  binary?: boolean;
}

interface Answer {
  status: number;
  headers: Headers;
  data: any;
  text: string;
  /** The answer's bytes, when the request asked for binary and it succeeded. */
  bytes?: Uint8Array;
}

/**
 * A client of one canvasd server, for browsers and Node ≥ 20.
 *
 * Retries: reads (GET) and writes that carry an idempotency key (commands and
 * batches always do: a key of the client's own when the caller gives none)
 * are resent after a network error or a 502/503/504 answer, up to `retries`
 * times with exponential backoff and jitter (honouring Retry-After). A 503
 * whose commit outcome is unknown is therefore safe: the resend carries the
 * same key, so the server answers it from its idempotency store. Writes
 * without a key (creating or deleting a canvas or a token, starting an agent
 * run, ...) are never resent: after a 503 they may have happened
 * (`CanvasError.outcome`).
 */
export class CanvasClient {
  readonly baseUrl: string;
  private readonly tokenOpt: ClientOptions["token"];
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;
  private readonly heads = new Map<string, number>();

  constructor(opts: ClientOptions) {
    this.baseUrl = (opts.baseUrl ?? "").replace(/\/+$/, "");
    this.tokenOpt = opts.token;
    this.retries = Math.max(0, opts.retries ?? 3);
    this.backoffMs = opts.backoffMs ?? 100;
    this.maxBackoffMs = opts.maxBackoffMs ?? 5000;
    this.timeoutMs = opts.timeoutMs ?? 30000;
    const f = opts.fetch ?? globalThis.fetch;
    this.fetchFn = (input, init) => f(input, init); // unbound window.fetch throws "Illegal invocation"
  }

  /** The current token, if any. */
  get token(): string | undefined {
    return typeof this.tokenOpt === "function" ? this.tokenOpt() : this.tokenOpt;
  }

  // ------------------------------------------------------------ plumbing

  /** The newest revision this client has seen for a canvas, if any. */
  knownHead(canvasId: string): number | undefined {
    return this.heads.get(canvasId);
  }

  /** Records a revision seen for a canvas (the default baseRev of apply). */
  noteHead(canvasId: string, rev: number): void {
    if (typeof rev === "number" && rev > (this.heads.get(canvasId) ?? -1)) this.heads.set(canvasId, rev);
  }

  private url(path: string, query?: RequestInit2["query"]): string {
    let u = this.baseUrl + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, String(v));
      const s = q.toString();
      if (s) u += "?" + s;
    }
    return u;
  }

  private delay(attempt: number, retryAfter: string | null): number {
    let d = backoff(this.backoffMs, attempt, this.maxBackoffMs);
    const ra = retryAfterMs(retryAfter);
    if (ra !== undefined) d = Math.max(d, Math.min(ra, this.maxBackoffMs * 4));
    return d;
  }

  private async send(method: string, path: string, init: RequestInit2 = {}): Promise<Answer> {
    const url = this.url(path, init.query);
    const headers: Record<string, string> = { Accept: "application/json", ...init.headers };
    const tok = this.token;
    if (tok) headers["Authorization"] = "Bearer " + tok;
    let body: BodyInit | undefined;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers["Content-Type"] = "application/json";
    } else if (init.raw) {
      body = init.raw.data as BodyInit;
      headers["Content-Type"] = init.raw.contentType;
    }
    const timeoutMs = init.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      // An "abort" listener never fires for a signal aborted already: a
      // request cancelled before this attempt must not be sent at all.
      if (init.signal?.aborted) throw init.signal.reason;
      const ctl = new AbortController();
      const timer = setTimeout(() => ctl.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
      const onAbort = () => ctl.abort(init.signal!.reason);
      init.signal?.addEventListener("abort", onAbort, { once: true });
      let res: Response;
      let text: string;
      let bytes: Uint8Array | undefined;
      try {
        res = await this.fetchFn(url, { method, headers, body, signal: ctl.signal });
        if (init.binary && res.ok) {
          bytes = new Uint8Array(await res.arrayBuffer());
          text = "";
        } else {
          text = await res.text();
        }
      } catch (err) {
        if (init.signal?.aborted) throw err;
        if (init.retry && attempt < this.retries) {
          await sleep(this.delay(attempt, null), init.signal);
          continue;
        }
        throw new CanvasError(`${method} ${url}: ${(err as Error)?.message ?? err}`, {
          status: 0, method, url, idempotencyKey: init.idempotencyKey, cause: err,
        });
      } finally {
        clearTimeout(timer);
        init.signal?.removeEventListener("abort", onAbort);
      }
      if (init.retry && RETRY_STATUSES.has(res.status) && attempt < this.retries) {
        await sleep(this.delay(attempt, res.headers.get("Retry-After")), init.signal);
        continue;
      }
      let data: any = undefined;
      if (text) {
        try {
          data = JSON.parse(text);
        } catch {
          data = undefined;
        }
      }
      return { status: res.status, headers: res.headers, data, text, bytes };
    }
  }

  private error(method: string, path: string, a: Answer, idempotencyKey?: string): CanvasError {
    const url = this.baseUrl + path;
    if (a.status === 409 && a.data && a.data.status === "conflict") {
      return new ConflictError(a.data as ConflictResult, { method, url, idempotencyKey });
    }
    const problem = a.data && typeof a.data === "object" ? (a.data as Problem & Record<string, unknown>) : undefined;
    const detail = problem?.detail || problem?.title || a.text.slice(0, 200) || `HTTP ${a.status}`;
    return new CanvasError(`${method} ${path}: ${a.status}: ${detail}`, {
      status: a.status, method, url, problem, idempotencyKey, retryAfterMs: retryAfterMs(a.headers.get("Retry-After")),
    });
  }

  private async call<T>(method: string, path: string, init: RequestInit2 = {}): Promise<T> {
    const a = await this.send(method, path, init);
    if (a.status >= 200 && a.status < 300) return a.data as T;
    throw this.error(method, path, a, init.idempotencyKey);
  }

  // ------------------------------------------------------------ canvases and tokens

  /** Creates a canvas (server-minted unguessable id when none is given). Not retried. */
  createCanvas(req: { canvas_id?: string; title?: string } = {}): Promise<Canvas> {
    return this.call("POST", "/api/canvases", { body: req });
  }

  /** The canvases the token's actor may see. */
  async listCanvases(): Promise<Canvas[]> {
    const d = await this.call<{ canvases: Canvas[] }>("GET", "/api/canvases", { retry: true });
    return d.canvases ?? [];
  }

  getCanvas(canvasId: string, signal?: AbortSignal): Promise<Canvas> {
    return this.call("GET", "/api/canvases/" + seg(canvasId), { retry: true, signal });
  }

  /** Deletes a canvas with its history (admin role). Not retried (it carries no idempotency key). */
  async deleteCanvas(canvasId: string): Promise<void> {
    await this.call("DELETE", "/api/canvases/" + seg(canvasId));
  }

  /** Creates a token (admin role, or a scoped admin within its scope). Not retried. */
  createToken(req: TokenRequest): Promise<TokenResponse> {
    return this.call("POST", "/api/tokens", { body: req });
  }

  async revokeToken(actorId: string): Promise<void> {
    await this.call("DELETE", "/api/tokens/" + seg(actorId));
  }

  // ------------------------------------------------------------ state, events, time travel

  /** The snapshot {canvas_id, head_rev, head_event_id, state}; with atRev, the state as it was at that revision. */
  async getState(canvasId: string, opts: { atRev?: number; signal?: AbortSignal } = {}): Promise<Snapshot> {
    const s = await this.call<Snapshot>("GET", "/canvas_commands/snapshot/" + seg(canvasId), {
      query: { at_rev: opts.atRev }, retry: true, signal: opts.signal,
    });
    if (opts.atRev === undefined) this.noteHead(canvasId, s.head_rev);
    return s;
  }

  /** One page of the event log: the commits with rev > afterRev, ascending, at most limit of them. */
  async events(canvasId: string, opts: { afterRev?: number; limit?: number; signal?: AbortSignal } = {}): Promise<EventsPage> {
    const p = await this.call<EventsPage>("GET", `/canvas_commands/${seg(canvasId)}/events`, {
      query: { after_rev: opts.afterRev ?? 0, limit: opts.limit }, retry: true, signal: opts.signal,
    });
    this.noteHead(canvasId, p.head_rev);
    return p;
  }

  /** Every commit with rev > afterRev, in order, read page by page up to the head. */
  async *allEvents(canvasId: string, opts: { afterRev?: number; pageSize?: number; signal?: AbortSignal } = {}): AsyncGenerator<Commit> {
    let after = opts.afterRev ?? 0;
    for (;;) {
      const page = await this.events(canvasId, { afterRev: after, limit: opts.pageSize ?? 500, signal: opts.signal });
      for (const c of page.commits) yield c;
      if (page.commits.length === 0) return;
      after = page.commits[page.commits.length - 1]!.rev;
      if (after >= page.head_rev) return;
    }
  }

  // ------------------------------------------------------------ commands

  /**
   * Applies one command and returns the new revision (see applyResult). For
   * a command type, args are typed as that type's (CommandArgs).
   */
  async apply<T extends CommandType | (string & {})>(canvasId: string, type: T, args?: ArgsOf<T>, opts: ApplyOptions = {}): Promise<number> {
    return (await this.applyResult(canvasId, type, args, opts)).rev;
  }

  /**
   * Applies one command and returns its ApplyResult (rev, createdIds, rebased, ...).
   *
   * The envelope carries opts.idempotencyKey or a fresh key of the client's
   * own, and the same envelope is resent after a network error or a
   * 502/503/504, so a retry never applies twice. On a 409 without onConflict
   * it throws ConflictError. With onConflict it re-reads the snapshot, calls
   * onConflict(conflict, fresh) and sends the command it returns at the fresh
   * head with a derived key `<key>.r<n>`, at most maxRetries times. Other
   * failures throw CanvasError (400/422 name the field in `problem`).
   *
   * opts.signal cancels it: once aborted, nothing more is sent (no attempt,
   * resend or re-planned command, even one onConflict returns after the
   * abort) and it throws the signal's reason. A command already sent may
   * have applied: give your own idempotencyKey to be able to resend it safely.
   *
   * For a command type, args are typed as that type's (CommandArgs): a
   * literal of another type's args does not compile.
   */
  async applyResult<T extends CommandType | (string & {})>(canvasId: string, command: T, commandArgs?: ArgsOf<T>, opts: ApplyOptions = {}): Promise<ApplyResult> {
    let type: string = command;
    let args: unknown = commandArgs ?? {};
    const path = `/canvas_commands/${seg(canvasId)}/command`;
    const baseKey = opts.idempotencyKey ?? newIdempotencyKey();
    let baseRev = opts.baseRev ?? this.heads.get(canvasId);
    if (baseRev === undefined) baseRev = (await this.getCanvas(canvasId, opts.signal)).head_rev ?? 0;
    let key = baseKey;
    let replans = 0;
    for (;;) {
      const env: Record<string, unknown> = { type, base_rev: baseRev, idempotency_key: key, args: args ?? {} };
      if (opts.cmdId) env["id"] = replans === 0 ? opts.cmdId : `${opts.cmdId}.r${replans}`;
      if (opts.strict) env["strict"] = true;
      const a = await this.send("POST", path, { body: env, retry: true, idempotencyKey: key, signal: opts.signal });
      if (a.status === 200) {
        const d = a.data as RevisionResult;
        this.noteHead(canvasId, d.current_rev);
        return {
          rev: d.current_rev, cmdId: d.cmd_id, eventId: d.event_id, createdIds: d.created_ids ?? [],
          rebased: d.rebased === true, result: d.result, replayed: a.headers.get("Idempotent-Replayed") === "true",
          idempotencyKey: key, replans, body: d,
        };
      }
      const err = this.error("POST", path, a, key);
      if (!(err instanceof ConflictError) || !opts.onConflict || replans >= (opts.maxRetries ?? 3)) throw err;
      this.noteHead(canvasId, err.currentRev);
      const fresh = await this.getState(canvasId, { signal: opts.signal });
      const next = await opts.onConflict(err, fresh);
      if (!next) throw err;
      type = next.type;
      args = next.args ?? {};
      baseRev = fresh.head_rev;
      replans++;
      key = `${baseKey}.r${replans}`;
    }
  }

  /**
   * Applies several commands all-or-nothing, one revision each, in order.
   * Each command is an envelope {type, args, id?, strict?}. The batch carries
   * an idempotency key (the caller's or the client's own), so resends are
   * safe. Throws ConflictError on a 409; nothing is written on any error.
   * A signal aborted before the batch is sent keeps it from being sent.
   */
  async applyBatch(canvasId: string, commands: BatchCommand[], opts: { baseRev?: number; idempotencyKey?: string; signal?: AbortSignal } = {}): Promise<BatchResult> {
    const path = `/canvas_commands/${seg(canvasId)}/commands`;
    const key = opts.idempotencyKey ?? newIdempotencyKey();
    let baseRev = opts.baseRev ?? this.heads.get(canvasId);
    if (baseRev === undefined) baseRev = (await this.getCanvas(canvasId, opts.signal)).head_rev ?? 0;
    const body = { base_rev: baseRev, idempotency_key: key, commands: commands.map((c) => ({ ...c, args: c.args ?? {} })) };
    const a = await this.send("POST", path, { body, retry: true, idempotencyKey: key, signal: opts.signal });
    if (a.status !== 200) throw this.error("POST", path, a, key);
    const d = a.data as BatchResult;
    this.noteHead(canvasId, d.current_rev);
    return d;
  }

  // Document verbs (commands on a `doc` node; the result is in ApplyResult.result).

  replaceLines(canvasId: string, args: ReplaceLinesArgs, opts?: ApplyOptions): Promise<ApplyResult> {
    return this.applyResult(canvasId, "replace_lines", args, opts);
  }

  insertLines(canvasId: string, args: InsertLinesArgs, opts?: ApplyOptions): Promise<ApplyResult> {
    return this.applyResult(canvasId, "insert_lines", args, opts);
  }

  deleteLines(canvasId: string, args: DeleteLinesArgs, opts?: ApplyOptions): Promise<ApplyResult> {
    return this.applyResult(canvasId, "delete_lines", args, opts);
  }

  searchReplace(canvasId: string, args: SearchReplaceArgs, opts?: ApplyOptions): Promise<ApplyResult> {
    return this.applyResult(canvasId, "search_replace", args, opts);
  }

  /** Undoes the calling actor's own last command (409 if someone else changed what it would restore). */
  undo(canvasId: string, opts?: ApplyOptions): Promise<ApplyResult> {
    return this.applyResult(canvasId, "undo", {}, opts);
  }

  redo(canvasId: string, opts?: ApplyOptions): Promise<ApplyResult> {
    return this.applyResult(canvasId, "redo", {}, opts);
  }

  revertToSnapshot(canvasId: string, args: RevertToSnapshotArgs, opts?: ApplyOptions): Promise<ApplyResult> {
    return this.applyResult(canvasId, "revert_to_snapshot", args, opts);
  }

  // ------------------------------------------------------------ documents and named snapshots

  /** A document's content, whole or lines [startLine, endLine]. */
  getDoc(canvasId: string, nodeId: string, opts: { startLine?: number; endLine?: number } = {}): Promise<DocContent> {
    return this.call("GET", `/api/canvases/${seg(canvasId)}/docs/${seg(nodeId)}`, {
      query: { start_line: opts.startLine, end_line: opts.endLine }, retry: true,
    });
  }

  /** A document's diff since a named snapshot id or a revision. */
  getDocDiff(canvasId: string, nodeId: string, opts: { since: string | number; format?: "unified" | "split" }): Promise<DocDiff> {
    return this.call("GET", `/api/canvases/${seg(canvasId)}/docs/${seg(nodeId)}/diff`, {
      query: { since: opts.since, format: opts.format }, retry: true,
    });
  }

  /** A selection of a document with its context, formatted for a chat. */
  getDocSelection(canvasId: string, nodeId: string, sel: { startLine: number; endLine: number; startColumn?: number; endColumn?: number }): Promise<DocSelection> {
    return this.call("GET", `/api/canvases/${seg(canvasId)}/docs/${seg(nodeId)}/selection`, {
      query: { start_line: sel.startLine, end_line: sel.endLine, start_column: sel.startColumn, end_column: sel.endColumn }, retry: true,
    });
  }

  /** Saves a named snapshot of the canvas (not retried). */
  createSnapshot(canvasId: string, req: NamedSnapshotRequest = {}): Promise<NamedSnapshot> {
    return this.call("POST", `/api/canvases/${seg(canvasId)}/snapshots`, { body: req });
  }

  async listSnapshots(canvasId: string): Promise<NamedSnapshot[]> {
    const d = await this.call<NamedSnapshotList>("GET", `/api/canvases/${seg(canvasId)}/snapshots`, { retry: true });
    return d.snapshots ?? [];
  }

  // ------------------------------------------------------------ files

  /**
   * The canvas drawn by the server (`png`, the default; `svg`) or written as
   * a file (`jsoncanvas`, `excalidraw`): `GET /api/canvases/{id}/export`.
   * Optionally at a past revision, only some node and edge ids (a frame or
   * group brings its children), a page region `bounds: [x, y, w, h]`, a PNG
   * `scale` and a `transparent` background. Resolves to the bytes, their
   * media type and the revision shown; a refused option throws a
   * CanvasError whose problem names it.
   */
  async exportCanvas(canvasId: string, opts: ExportOptions = {}): Promise<ExportResult> {
    const path = `/api/canvases/${seg(canvasId)}/export`;
    const query: RequestInit2["query"] = { format: opts.format ?? "png", at_rev: opts.atRev, scale: opts.scale, background: opts.background };
    if (opts.ids) query.ids = opts.ids.join(",");
    if (opts.bounds) query.bounds = opts.bounds.join(",");
    const a = await this.send("GET", path, { query, retry: true, binary: true, signal: opts.signal });
    if (a.status !== 200 || !a.bytes) throw this.error("GET", path, a);
    return { data: a.bytes, contentType: a.headers.get("Content-Type") ?? "", rev: Number(a.headers.get("X-Canvas-Rev") ?? 0) };
  }

  /**
   * Reads a file into the canvas as one commit: `POST
   * /api/canvases/{id}/import`. `format` is `jsoncanvas`, `excalidraw` or
   * `mermaid` (a flowchart, laid out by the server); `mode` `merge` (the
   * default: the file joins the canvas, replacing what has the same id) or
   * `replace` (everything else is deleted). The request carries an
   * idempotency key (the caller's or one of the client's), so it is resent
   * safely. A file the server cannot read throws a CanvasError whose
   * problem's `field` names the place in it (`body.nodes[3].color`,
   * `body line 12`); a stale baseRev that conflicts throws ConflictError.
   */
  async importFile(canvasId: string, file: string | Uint8Array | Blob, opts: ImportOptions): Promise<ApplyResult> {
    const path = `/api/canvases/${seg(canvasId)}/import`;
    const key = opts.idempotencyKey ?? newIdempotencyKey();
    const contentType = opts.format === "mermaid" ? "text/plain; charset=utf-8" : "application/json";
    const a = await this.send("POST", path, {
      query: { format: opts.format, mode: opts.mode, base_rev: opts.baseRev, idempotency_key: key },
      raw: { data: file, contentType }, retry: true, idempotencyKey: key, signal: opts.signal,
    });
    if (a.status !== 200) throw this.error("POST", path, a, key);
    const d = a.data as RevisionResult;
    this.noteHead(canvasId, d.current_rev);
    return {
      rev: d.current_rev, cmdId: d.cmd_id, eventId: d.event_id, createdIds: d.created_ids ?? [],
      rebased: d.rebased === true, result: d.result, replayed: a.headers.get("Idempotent-Replayed") === "true",
      idempotencyKey: key, replans: 0, body: d,
    };
  }

  // ------------------------------------------------------------ gestures

  /** Broadcasts the caller's cursor (and selection/viewport) as an ephemeral gesture; see gestures() for a throttled sender. */
  gesture(canvasId: string, g: GestureRequest): Promise<GestureAck> {
    return this.call("POST", `/canvas_commands/${seg(canvasId)}/gesture`, { body: g });
  }

  /**
   * A throttled gesture sender: send() keeps only the newest gesture and
   * posts at most one per intervalMs (default 50), the last one always
   * (trailing edge). Failures are reported to onError and otherwise ignored
   * (gestures are ephemeral).
   */
  gestures(canvasId: string, opts: { intervalMs?: number; onError?: (err: unknown) => void } = {}): GestureThrottle {
    return new GestureThrottle((g) => this.gesture(canvasId, g), opts.intervalMs ?? 50, opts.onError);
  }

  // ------------------------------------------------------------ agent

  /** Starts an agent session on a canvas (roomId); the run continues on the server. Not retried. */
  runAgent(req: AgentRunRequest): Promise<AgentRunResponse> {
    return this.call("POST", "/api/canvas-agent/run", { body: req });
  }

  /** A session's state, transcript, todos and stats. */
  agentSession(sessionId: string): Promise<AgentSession> {
    return this.call("GET", "/api/canvas-agent/sessions/" + seg(sessionId), { retry: true });
  }

  /** A canvas's last `limit` (1–100, default 20) agent sessions, newest first, whoever started them. */
  agentSessions(canvasId: string, opts: { limit?: number } = {}): Promise<AgentSessionList> {
    return this.call("GET", `/api/canvases/${seg(canvasId)}/agent-sessions`, { query: { limit: opts.limit }, retry: true });
  }

  /** Cancels a session: its model stream stops and nothing more is applied. */
  cancelAgent(sessionId: string): Promise<AgentCancelResult> {
    return this.call("POST", `/api/canvas-agent/sessions/${seg(sessionId)}/cancel`, { body: {}, retry: true });
  }

  /**
   * Reverts one turn of a session (turn), several (turns), or, with
   * neither, every turn not reverted yet, as one command by this client's
   * actor; the server then records reverted_rev on those turns. Throws
   * ConflictError when those shapes changed since. A turn already reverted
   * whose changes are not on the canvas is left out (it keeps its
   * reverted_rev); only such turns (or none left) are a 422 problem. Not
   * retried (the server keys no idempotency for it).
   */
  revertAgent(sessionId: string, req: AgentRevertRequest = {}): Promise<RevisionResult> {
    return this.call("POST", `/api/canvas-agent/sessions/${seg(sessionId)}/revert`, { body: req });
  }

  /** The action catalog with its JSON Schemas. */
  agentCatalog(): Promise<unknown> {
    return this.call("GET", "/api/canvas-agent/catalog", { retry: true });
  }

  /** Sends a chat message (optionally with an image data: URL) to an agent session. Not retried. */
  sendMessage(sessionId: string, msg: MessageRequest): Promise<MessageAccepted> {
    return this.call("POST", `/api/sessions/${seg(sessionId)}/messages`, { body: msg });
  }

  /** Acks an applied agent envelope (browsers; LiveCanvas does it). */
  async ackEnvelope(ack: AgentAck): Promise<void> {
    await this.call("POST", "/api/canvas-agent/ack", { body: ack, retry: true });
  }

  /** Publishes a browser's viewport and selection to a running session (LiveCanvas does it every 80 ms at most). */
  async publishView(view: AgentView): Promise<void> {
    await this.call("POST", "/api/canvas-agent/view", { body: view, retry: true });
  }

  /**
   * Follows a canvas live as a browser: a LiveCanvas with a model kept
   * current, typed events and the agent protocol (host, acks, hooks).
   */
  live(canvasId: string, opts?: LiveCanvasOptions): LiveCanvas {
    return new LiveCanvas(this, canvasId, opts);
  }

  // ------------------------------------------------------------ host sessions (agent pages)

  /**
   * The address of a host session's viewer under a fresh page ticket of this
   * client's token (the token stays out of the URL), showing page (a path of
   * the session) first. Retried.
   */
  hostViewer(session: string, page?: string): Promise<HostViewerURL> {
    const q = page ? "?page=" + encodeURIComponent(page) : "";
    return this.call("GET", `/api/host/${seg(session)}/viewer${q}`, { retry: true });
  }

  // ------------------------------------------------------------ invoke (server → browser calls)

  /**
   * Sends an invoke to the browsers of a canvas or host session and waits for
   * the first answer. It waits as long as req.timeout_ms asks (default 10 s,
   * at most 300 s) plus 5 s, even beyond the client's timeoutMs; signal
   * cancels it sooner. Not retried.
   */
  invoke(req: InvokeRequest, signal?: AbortSignal): Promise<InvokeAnswer> {
    const wait = (typeof req.timeout_ms === "number" && req.timeout_ms > 0 ? req.timeout_ms : 10000) + INVOKE_SLACK_MS;
    return this.call("POST", "/api/invoke", { body: req, signal, timeoutMs: Math.max(this.timeoutMs, wait) });
  }

  /** Answers an invoke; `accepted` is false when another answer won or it timed out. */
  answerInvoke(invokeId: string, answer: InvokeAnswer): Promise<{ accepted: boolean }> {
    return this.call("POST", "/api/invoke/" + seg(invokeId), { body: answer, retry: true });
  }

  // ------------------------------------------------------------ stream

  /**
   * Follows a canvas's stream over fetch (the token goes in the Authorization
   * header, never in the URL): replayed commits after lastEventId, caught_up,
   * then live commits and ephemeral events, typed by name. It reconnects by
   * itself with Last-Event-ID set to the last id received. A `reset` event is
   * yielded: re-read the snapshot and set `lastEventId` to its head_event_id
   * before pulling the next event (LiveCanvas does this for you); the first
   * reset reconnects at once, each consecutive one after a growing delay. A
   * connect refused with 400/401/403/404 throws at once; any other failure (a
   * network error, a dropped or silent connection, 408, 429, 5xx, ...)
   * reconnects with backoff (see StreamOptions). Events this client does not
   * know are skipped. Once close() is called (or opts.signal aborts), no
   * further event is yielded, not even one already received.
   */
  stream(canvasId: string, opts: StreamOptions = {}): CanvasStream {
    return new FetchStream(this, this.fetchFn, canvasId, opts);
  }

  /** @internal The URL and headers of a stream connect. */
  streamRequest(canvasId: string, opts: StreamOptions, lastEventId: string): { url: string; headers: Record<string, string> } {
    const headers: Record<string, string> = { Accept: "text/event-stream", "Cache-Control": "no-cache" };
    const tok = this.token;
    if (tok) headers["Authorization"] = "Bearer " + tok;
    if (lastEventId) headers["Last-Event-ID"] = lastEventId;
    const query: RequestInit2["query"] = {};
    if (opts.clientId) query["client_id"] = opts.clientId;
    if (opts.capabilities && opts.capabilities.length) query["capabilities"] = opts.capabilities.join(",");
    return { url: this.url("/sse/canvas/" + seg(canvasId), query), headers };
  }

  /** @internal Turns a failed stream connect into its error. */
  streamError(path: string, res: Response, text: string): CanvasError {
    let data: any;
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
    return this.error("GET", path, { status: res.status, headers: res.headers, data, text });
  }
}

/** A throttled, latest-wins gesture sender (see CanvasClient.gestures). */
export class GestureThrottle {
  private pending: GestureRequest | null = null;
  private last = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private inFlight = false;
  private closed = false;

  constructor(private readonly post: (g: GestureRequest) => Promise<unknown>, private readonly intervalMs: number, private readonly onError?: (err: unknown) => void) {}

  /** Queues g, replacing any gesture not yet sent. */
  send(g: GestureRequest): void {
    if (this.closed) return;
    this.pending = g;
    this.schedule();
  }

  /** Stops sending; a queued gesture is dropped. */
  close(): void {
    this.closed = true;
    this.pending = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.timer || this.inFlight || !this.pending) return;
    const wait = Math.max(0, this.last + this.intervalMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, wait);
  }

  private async flush(): Promise<void> {
    const g = this.pending;
    if (!g || this.closed) return;
    this.pending = null;
    this.inFlight = true;
    this.last = Date.now();
    try {
      await this.post(g);
    } catch (err) {
      this.onError?.(err);
    } finally {
      this.inFlight = false;
      this.schedule();
    }
  }
}

class FetchStream implements CanvasStream {
  lastEventId: string;
  connects = 0;
  private readonly ctl = new AbortController();

  constructor(private readonly client: CanvasClient, private readonly fetchFn: typeof fetch, private readonly canvasId: string, private readonly opts: StreamOptions) {
    this.lastEventId = opts.lastEventId ?? "";
  }

  close(): void {
    this.ctl.abort(new Error("stream closed"));
  }

  /**
   * Listens to opts.signal only while the stream is read, so that a long-lived
   * signal given to stream after stream (LiveCanvas restarts) collects no
   * listeners: the listener is removed however the stream ends.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<StreamEvent> {
    const signal = this.opts.signal;
    const onAbort = () => this.close();
    if (signal?.aborted) this.close();
    else signal?.addEventListener("abort", onAbort, { once: true });
    try {
      yield* this.follow();
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  private async *follow(): AsyncGenerator<StreamEvent> {
    const o = this.opts;
    const idle = o.idleTimeoutMs ?? 45000;
    const maxDelay = o.maxReconnectDelayMs ?? 30000;
    let failures = 0;
    let resets = 0; // consecutive reset events with nothing else in between
    let serverRetry: number | undefined; // the last retry: the server sent, on any connection
    const path = "/sse/canvas/" + encodeURIComponent(this.canvasId);
    while (!this.ctl.signal.aborted) {
      const conn = new AbortController();
      let idleTimer: ReturnType<typeof setTimeout> | undefined;
      // close() while the caller holds an event (the generator waits at its
      // yield, so finally below has not run) must not leave the idle timer:
      // it would keep a Node program alive for idleTimeoutMs.
      const onClose = () => {
        if (idleTimer) clearTimeout(idleTimer);
        conn.abort(this.ctl.signal.reason);
      };
      this.ctl.signal.addEventListener("abort", onClose, { once: true });
      const armIdle = () => {
        if (idleTimer) clearTimeout(idleTimer);
        idleTimer = setTimeout(() => conn.abort(new Error(`no event or heartbeat for ${idle} ms`)), idle);
      };
      let fatal: CanvasError | undefined;
      let lastError: unknown;
      let reset = false;
      try {
        const { url, headers } = this.client.streamRequest(this.canvasId, o, this.lastEventId);
        armIdle();
        const res = await this.fetchFn(url, { headers, signal: conn.signal, cache: "no-store" });
        this.connects++;
        if (res.status !== 200) {
          const err = this.client.streamError(path, res, await res.text());
          if (FATAL_STREAM_STATUSES.has(res.status)) fatal = err;
          throw err;
        }
        o.onConnection?.("open");
        const parser = new SSEParser(this.lastEventId);
        const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          armIdle();
          const events = parser.feed(value);
          if (parser.retry !== undefined) serverRetry = parser.retry;
          for (const raw of events) {
            // close() (or the caller's signal) ends the stream at once: the
            // rest of what this chunk held is dropped, not yielded.
            if (this.ctl.signal.aborted) return;
            failures = 0;
            if (raw.id !== undefined) this.lastEventId = raw.id;
            if (!isKnownEvent(raw.event)) continue;
            let data: unknown;
            try {
              data = JSON.parse(raw.data);
            } catch {
              continue;
            }
            const ev = { event: raw.event, data } as StreamEvent;
            if (raw.id !== undefined) ev.id = raw.id;
            if (ev.event === "reset") {
              reset = true;
              resets++;
              this.lastEventId = String((ev.data as CanvasEventMap["reset"]).head_rev);
            } else {
              resets = 0;
            }
            if (ev.event === "canvas_commit") this.client.noteHead(this.canvasId, ev.data.rev);
            yield ev;
          }
        }
      } catch (err) {
        lastError = err;
        if (fatal) throw fatal;
      } finally {
        if (idleTimer) clearTimeout(idleTimer);
        this.ctl.signal.removeEventListener("abort", onClose);
        conn.abort(new Error("reconnecting"));
      }
      if (this.ctl.signal.aborted) return;
      const base = serverRetry || (o.reconnectDelayMs ?? 500); // retry: 0 means no value, as in the other clients
      let d: number;
      if (reset) {
        // The server ends a stream after reset: the first reconnects at once;
        // a server answering reset again and again is not hammered.
        if (resets <= 1) continue;
        d = backoff(base, resets - 2, maxDelay);
      } else {
        failures++;
        if (o.maxReconnects !== undefined && failures > o.maxReconnects) {
          if (lastError instanceof CanvasError) throw lastError;
          throw new CanvasError(`GET ${path}: stream lost and ${o.maxReconnects} reconnects failed: ${(lastError as Error)?.message ?? "closed"}`, {
            status: 0, method: "GET", url: this.client.baseUrl + path, cause: lastError,
          });
        }
        o.onConnection?.("reconnecting");
        d = backoff(base, failures - 1, maxDelay);
        // A refusal with Retry-After (429: the token holds too many streams; 503) waits at least that long.
        if (lastError instanceof CanvasError && lastError.retryAfterMs !== undefined) d = Math.max(d, Math.min(lastError.retryAfterMs, maxDelay));
      }
      o.onBackoff?.(d, reset ? "reset" : "error");
      try {
        await sleep(d, this.ctl.signal);
      } catch {
        return;
      }
    }
  }
}
