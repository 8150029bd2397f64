// Wire types of the canvasd API, named after the schemas of openapi.yaml.
// openapi.ts is generated from openapi.yaml (npm run generate); `make test`
// fails when it is not current.

import type { components } from "./openapi.js";

type S = components["schemas"];

export type Problem = S["Problem"];
export type Role = S["Role"];
export type ActorType = S["ActorType"];
export type TokenRequest = S["TokenRequest"];
export type TokenResponse = S["TokenResponse"];
export type Canvas = S["Canvas"];
export type CanvasCreateRequest = S["CanvasCreateRequest"];
export type Node = S["Node"];
export type Edge = S["Edge"];
export type SceneState = S["SceneState"];
export type Snapshot = S["Snapshot"];
export type Change = S["Change"];
export type TextEdit = S["TextEdit"];
export type Commit = S["Commit"];
export type EventsPage = S["EventsPage"];
export type CommandType = S["CommandType"];
/**
 * A command: its `type` and the args of that type (one schema per type in
 * openapi.yaml, discriminated by `type`), with `base_rev`.
 */
export type CommandEnvelope = S["CommandEnvelope"] & { base_rev: number };
/** The args of command type T: CommandArgs<"move"> is MoveArgs, and so on. */
export type CommandArgs<T extends CommandType> = NonNullable<Extract<S["CommandEnvelope"], { type: T }>["args"]>;
/** The args a command of type T takes: CommandArgs<T> for a command type, an object for any other name. */
export type ArgsOf<T extends string> = T extends CommandType ? CommandArgs<T> : Record<string, unknown>;
export type RevisionResult = S["RevisionResult"];
export type ConflictResult = S["ConflictResult"];
/** A command inside a batch: a CommandEnvelope whose own base_rev is ignored. */
export type BatchCommand = S["BatchCommand"];
export type CreateNodeArgs = S["CreateNodeArgs"];
export type UpdateNodeArgs = S["UpdateNodeArgs"];
export type CreateEdgeArgs = S["CreateEdgeArgs"];
export type UpdateEdgeArgs = S["UpdateEdgeArgs"];
export type CreateShapeArgs = S["CreateShapeArgs"];
export type UpdateShapeArgs = S["UpdateShapeArgs"];
export type MoveArgs = S["MoveArgs"];
export type ResizeArgs = S["ResizeArgs"];
export type BatchResult = S["BatchResult"];
export type Rect = S["Rect"];
export type Point = S["Point"];
export type GestureRequest = S["GestureRequest"];
export type GestureAck = S["GestureAck"];
export type Gesture = S["Gesture"];
export type StreamCaughtUp = S["StreamCaughtUp"];
export type StreamReset = S["StreamReset"];
export type AgentAction = S["AgentAction"];
export type AgentActionEnvelope = S["AgentActionEnvelope"];
export type AgentChat = S["AgentChat"];
export type AgentStatus = S["AgentStatus"];
export type AgentState = S["AgentState"];
export type ScreenshotRequest = S["ScreenshotRequest"];
export type InvokeEvent = S["InvokeEvent"];
export type InvokeRequest = S["InvokeRequest"];
export type InvokeAnswer = S["InvokeAnswer"];
export type AgentRunRequest = S["AgentRunRequest"];
export type AgentRunResponse = S["AgentRunResponse"];
export type AgentSession = S["AgentSession"];
export type AgentStats = S["AgentStats"];
export type AgentTodo = S["AgentTodo"];
export type AgentCancelResult = S["AgentCancelResult"];
export type AgentRevertRequest = S["AgentRevertRequest"];
export type AgentTurn = S["AgentTurn"];
export type MessageRequest = S["MessageRequest"];
export type MessageAccepted = S["MessageAccepted"];
export type DocContent = S["DocContent"];
export type DocDiff = S["DocDiff"];
export type DocSelection = S["DocSelection"];
export type NamedSnapshot = S["NamedSnapshot"];
export type NamedSnapshotList = S["NamedSnapshotList"];
export type NamedSnapshotRequest = S["NamedSnapshotRequest"];
export type DocEditResult = S["DocEditResult"];
export type ReplaceLinesArgs = S["ReplaceLinesArgs"];
export type InsertLinesArgs = S["InsertLinesArgs"];
export type DeleteLinesArgs = S["DeleteLinesArgs"];
export type SearchReplaceArgs = S["SearchReplaceArgs"];
export type RevertToSnapshotArgs = S["RevertToSnapshotArgs"];
export type Screenshot = S["Screenshot"];
export type AgentHost = S["AgentHost"];
export type AgentAck = S["AgentAck"];
export type AgentView = S["AgentView"];
