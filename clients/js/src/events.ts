// The events of a canvas stream, typed by name.

import type {
  AgentActionEnvelope, AgentChat, AgentHost, AgentStatus, Commit, Gesture, HostPresentNotice, InvokeEvent, ScreenshotRequest, StreamCaughtUp, StreamReset,
} from "./types.js";

/** Event name → the type of its JSON data, for every event of GET /sse/canvas/{canvas_id}. */
export interface CanvasEventMap {
  canvas_commit: Commit;
  caught_up: StreamCaughtUp;
  reset: StreamReset;
  gesture: Gesture;
  "agent:action": AgentActionEnvelope;
  "agent:chat": AgentChat;
  "agent:status": AgentStatus;
  "agent:screenshot_request": ScreenshotRequest;
  invoke: InvokeEvent;
  "agent:host": AgentHost;
  /** The host session of the canvas's id was shown, hidden or navigated (the web UI's pages panel follows it). */
  "host:present": HostPresentNotice;
}

/** One event of a canvas stream; `id` is set on canvas_commit (its event_id). Narrow on `event`. */
export type StreamEvent = { [K in keyof CanvasEventMap]: { event: K; id?: string; data: CanvasEventMap[K] } }[keyof CanvasEventMap];

const KNOWN: ReadonlySet<string> = new Set<keyof CanvasEventMap>([
  "canvas_commit", "caught_up", "reset", "gesture", "agent:action", "agent:chat", "agent:status", "agent:screenshot_request", "invoke", "agent:host", "host:present",
]);

/** Whether name is an event of CanvasEventMap. */
export function isKnownEvent(name: string): name is keyof CanvasEventMap {
  return KNOWN.has(name);
}

/** Agent session states after which nothing more happens. */
export const TERMINAL_AGENT_STATES: ReadonlySet<string> = new Set(["done", "canceled", "error"]);
