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
/**
 * The props of a node or an edge, typed loosely so that code reading any
 * kind's keys compiles; NodeProps, EdgeProps and the per-kind types
 * (GeoProps, NoteProps, ...) give the exact keys each kind takes
 * (docs/model.md: anything else is refused, but meta, free for your own data).
 */
export type Props = { [key: string]: unknown };
/**
 * A node; its props follow its kind's schema (NodeProps). Its type is one of
 * NodeType, typed open so that code handling kinds a later server may add
 * (or an earlier one had) still compiles.
 */
export type Node = Omit<S["Node"], "props" | "type"> & { props: Props; type: NodeType | (string & {}) };
export type NodeType = S["NodeType"];
/** An edge: an arrow from `from` to `to` ("" for a free end) along props.points. */
export type Edge = Omit<S["Edge"], "props"> & { props: Props };
export type NodeProps = S["NodeProps"];
export type GeoProps = S["GeoProps"];
export type NoteProps = S["NoteProps"];
export type TextProps = S["TextProps"];
export type DrawProps = S["DrawProps"];
export type LineProps = S["LineProps"];
export type FrameProps = S["FrameProps"];
export type ImageProps = S["ImageProps"];
export type EmbedProps = S["EmbedProps"];
export type GroupProps = S["GroupProps"];
export type DocProps = S["DocProps"];
export type EdgeProps = S["EdgeProps"];
export type RichText = S["RichText"];
export type Colour = S["Colour"];
export type SceneState = Omit<S["SceneState"], "nodes" | "edges"> & { nodes: Node[]; edges: Edge[] };
export type Snapshot = Omit<S["Snapshot"], "state"> & { state: SceneState };
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
export type AgentSessionList = S["AgentSessionList"];
export type AgentStats = S["AgentStats"];
export type AgentTodo = S["AgentTodo"];
export type AgentCancelResult = S["AgentCancelResult"];
export type AgentRevertRequest = S["AgentRevertRequest"];
export type AgentTurn = S["AgentTurn"];
export type MessageRequest = S["MessageRequest"];
export type MessageAccepted = S["MessageAccepted"];
export type HostPresentNotice = S["HostPresentNotice"];
export type HostViewerURL = S["HostViewerURL"];
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
