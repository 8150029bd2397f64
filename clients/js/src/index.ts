// @canvasd/client: the TypeScript client of canvasd for browsers and Node ≥ 20.

export { CanvasClient, GestureThrottle } from "./client.js";
export { newIdempotencyKey, randomHex } from "./ids.js";
export type { ApplyOptions, ApplyResult, CanvasStream, ClientOptions, ConflictHandler, ExportOptions, ExportResult, ImportOptions, Replan, StreamOptions } from "./client.js";
export { CanvasError, ConflictError } from "./errors.js";
export { isKnownEvent, TERMINAL_AGENT_STATES } from "./events.js";
export type { CanvasEventMap, StreamEvent } from "./events.js";
export { CanvasModel, applyTextEdit, mergePatch, splitLines } from "./model.js";
export { docEdit } from "./docs.js";
export type { DocCommand } from "./docs.js";
export type { ApplyOutcome } from "./model.js";
export { LiveCanvas, SCREENSHOT_ACTION, viewportBox } from "./live.js";
export type { AgentActionsEvent, BrowserHooks, Capability, LiveCanvasEvents, LiveCanvasOptions } from "./live.js";
export { SSEParser } from "./sse.js";
export type { RawEvent } from "./sse.js";
export type * from "./types.js";
