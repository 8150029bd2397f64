// Type-level test (npm test compiles it with test/tsconfig.types.json): the
// types generated from openapi.yaml give each command type its own args,
// so a command with another type's args does not compile. Each line marked
// as an expected error must be one, or the compilation fails.

import type { ArgsOf, BatchCommand, CanvasClient, CommandArgs, CommandEnvelope, LiveCanvas } from "../src/index.js";

declare const c: CanvasClient;
declare const live: LiveCanvas;

// The args of a command type are that type's.
void c.apply("c", "move", { ids: ["a"], dx: 1, dy: 2 });
void c.apply("c", "move", { id: "a", x: 1, y: 2 });
void c.applyResult("c", "create_edge", { from: "a", to: "", props: { color: "red" } });
void c.applyResult("c", "update_edge", { id: "e", to: "" });
void live.apply("align", { ids: ["a", "b"], alignment: "center-horizontal" });
// @ts-expect-error move has no alignment
void c.apply("c", "move", { ids: ["a"], alignment: "left" });
// @ts-expect-error a relative move needs dy too
void c.apply("c", "move", { ids: ["a"], dx: 1 });
// @ts-expect-error alignment is one of its values
void c.apply("c", "align", { ids: ["a"], alignment: "diagonal" });
// @ts-expect-error create_shape needs x and y
void c.applyResult("c", "create_shape", { type: "geo" });
// @ts-expect-error a node type is one of the model's kinds (an arrow is an edge)
void c.applyResult("c", "create_shape", { type: "arrow", x: 0, y: 0 });
// @ts-expect-error undo takes no args
void live.apply("undo", { steps: 2 });

// Another name (a verb this client does not know yet) takes any object.
void c.apply("c", "import_file", { anything: 1 });
declare const someType: string;
void c.apply("c", someType, { whatever: true });

// Envelopes and batches are discriminated by type.
const env: CommandEnvelope = { type: "update_edge", base_rev: 3, args: { id: "e", from: "" } };
// @ts-expect-error an envelope needs base_rev
const noBase: CommandEnvelope = { type: "undo", args: {} };
const batch: BatchCommand[] = [{ type: "delete_shape", args: { ids: ["a"] } }, { type: "redo" }];
// @ts-expect-error a batch command's args are its type's
const badBatch: BatchCommand[] = [{ type: "delete_shape", args: { id: "a" } }];

const m: CommandArgs<"move"> = { ids: ["a"], dx: 0, dy: 0 };
const r: ArgsOf<"resize"> = { id: "a", w: 10, h: 20 };
// @ts-expect-error resize by scale takes scale_x and scale_y
const r2: ArgsOf<"resize"> = { ids: ["a"], w: 10, h: 20 };
void [env, noBase, batch, badBatch, m, r, r2];
