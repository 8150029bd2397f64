// The messages between the viewer (canvasd's page around a host session's
// pages: it holds the session's bridge capability and its stream) and the
// runtime in the page shown in its frame (page.ts). They travel by
// postMessage; each side accepts only messages from the other's window
// (the viewer: its frame's contentWindow; the page: its parent), and every
// message carries TAG so other postMessage traffic of a page is ignored.

/** Marks the protocol's messages. */
export const TAG = "canvasd-host/1";

/** The host actions the runtime answers itself (POST /api/invoke). */
export const HOST_ACTIONS = ["eval", "dom.query", "dom.all", "dom.attr", "dom.click", "dom.type", "dom.wait", "snapshot"] as const;

/** An invoke forwarded to the page (the server's invoke event). */
export interface InvokeMsg {
  tag: typeof TAG;
  type: "invoke";
  invokeId: string;
  action: string;
  payload: unknown;
  timeoutMs: number;
}

/** The viewer's greeting once the page reported ready. */
export interface HelloMsg {
  tag: typeof TAG;
  type: "hello";
  session: string;
  /** The largest image sendAgentMessage may send, in decoded bytes. */
  maxImageBytes: number;
}

/** The answer to a page's call. */
export interface ReplyMsg {
  tag: typeof TAG;
  type: "reply";
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

/** A2UI server→client messages for the built-in A2UI page. */
export interface A2UIMsg {
  tag: typeof TAG;
  type: "a2ui";
  /** Drop every surface first (the stream reconnected and replays them). */
  reset: boolean;
  messages: unknown[];
}

export type ToPage = InvokeMsg | HelloMsg | ReplyMsg | A2UIMsg;

/** The page's runtime is ready (sent at load and again on the viewer's request). */
export interface ReadyMsg {
  tag: typeof TAG;
  type: "ready";
  href: string;
  title: string;
  /** The built-in A2UI page, which wants the session's A2UI messages. */
  a2ui: boolean;
}

/** The page's answer to an invoke. */
export interface AnswerMsg {
  tag: typeof TAG;
  type: "answer";
  invokeId: string;
  ok: boolean;
  result?: unknown;
  error?: unknown;
}

/** A call the viewer makes for the page: the bridge. */
export interface CallMsg {
  tag: typeof TAG;
  type: "call";
  id: number;
  method: "message" | "action" | "deeplink";
  args: Record<string, unknown>;
}

export type ToViewer = ReadyMsg | AnswerMsg | CallMsg;

/** A message before its tag is added (distributes over the unions above). */
export type Untagged<T> = T extends unknown ? Omit<T, "tag"> : never;

/** Whether v is a protocol message (of either direction). */
export function isMsg(v: unknown): v is { tag: string; type: string } {
  return typeof v === "object" && v !== null && (v as { tag?: unknown }).tag === TAG && typeof (v as { type?: unknown }).type === "string";
}

/** JSON-safe copy of v (undefined becomes null; what JSON cannot hold becomes its string). */
export function toJSONValue(v: unknown): unknown {
  if (v === undefined) return null;
  try {
    const s = JSON.stringify(v);
    return s === undefined ? null : JSON.parse(s);
  } catch {
    return String(v);
  }
}

/** The message of an error, for an answer. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || String(err);
  if (typeof err === "string") return err;
  return String(toJSONValue(err));
}
