// Unit tests of what the web UI sends for a person's edit of an arrow (plan.ts).

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Edge as CanvasEdge, Node as CanvasNode } from "@canvasd/client";
import { edgeElements, type El } from "./mapping";
import { planArrow, type ArrowContext } from "./plan";

const box = (id: string, x: number, y: number): CanvasNode =>
  ({ id, type: "geo", x, y, w: 100, h: 60, rotation: 0, name: "", parent_id: "", index: "a0", props: { geo: "rectangle" }, created_by: "", updated_by: "", created_rev: 1, updated_rev: 1 }) as CanvasNode;
const nodes = new Map([box("a", 0, 0), box("b", 300, 0)].map((n) => [n.id, n]));
const edge = (id: string, from: string, to: string, props: Record<string, unknown>): CanvasEdge =>
  ({ id, from, to, type: "arrow", props, created_by: "", created_rev: 1, updated_rev: 1 }) as CanvasEdge;
const ab = edge("e", "a", "b", { points: [{ x: 101, y: 30 }, { x: 299, y: 30 }], arrowheadStart: "square", color: "red" });

function ctx(over: Partial<ArrowContext> = {}): ArrowContext {
  return { nodes, edges: new Map([["e", ab]]), gone: new Set(), created: new Set(), moved: new Set(), selected: new Set(), ...over };
}

/** The arrow of edge e as the page draws it, changed by f. */
function arrow(e: CanvasEdge, f: (el: El) => void = () => {}): El {
  const el = { ...edgeElements(e, nodes, 1)[0] };
  f(el);
  return el;
}

test("a deleted arrow is a delete_edge; one going with its shape, or never sent, is nothing", () => {
  const del = arrow(ab, (el) => { el.isDeleted = true; });
  assert.deepEqual(planArrow("e", del, new Map(), ctx())?.type, "delete_edge");
  assert.equal(planArrow("e", del, new Map(), ctx({ gone: new Set(["b"]) })), null);
  assert.equal(planArrow("new", { ...del, id: "new" }, new Map(), ctx()), null);
});

test("a new arrow from empty space into a shape: a create_edge with a free start, bound end and its points", () => {
  const el = arrow(edge("n", "", "b", { points: [{ x: -80, y: 200 }, { x: 320, y: 30 }] }));
  const c = planArrow("n", el, new Map(), ctx({ edges: new Map() }))!;
  assert.equal(c.type, "create_edge");
  assert.deepEqual({ ...c.args, props: undefined }, { id: "n", from: "", to: "b", type: "arrow", props: undefined });
  assert.deepEqual(c.args.props, { points: [{ x: -80, y: 200 }, { x: 320, y: 30 }] });
  assert.deepEqual(c.ids, ["n", "b"]);
});

test("a copy of an edge keeps what its arrow cannot show (a square head)", () => {
  const el = arrow(ab, (x) => { x.id = "copy"; x.x += 20; });
  const c = planArrow("copy", el, new Map(), ctx())!;
  assert.equal(c.type, "create_edge");
  assert.equal((c.args.props as any).arrowheadStart, "square");
  assert.equal((c.args.props as any).color, "red");
});

test("an arrow that followed a moved shape sends nothing; moved with it by the person, its points", () => {
  const el = arrow(ab, (x) => { x.x += 10; });
  assert.equal(planArrow("e", el, new Map(), ctx({ moved: new Set(["a"]) })), null);
  const c = planArrow("e", el, new Map(), ctx({ moved: new Set(["a"]), selected: new Set(["e"]) }))!;
  assert.deepEqual(c.args, { id: "e", props: { points: [{ x: 111, y: 30 }, { x: 309, y: 30 }] } });
  // Reshaped with no shape moving: its points.
  assert.deepEqual(planArrow("e", el, new Map(), ctx())!.fields, ["props.points"]);
});

test("an end dragged off its shape is freed at its new point; onto another, bound", () => {
  const off = arrow(ab, (x) => { x.endBinding = null; x.points = [[0, 0], [100, 150]]; });
  assert.deepEqual(planArrow("e", off, new Map(), ctx({ selected: new Set(["e"]) }))!.args, { id: "e", to: "", props: { points: [{ x: 101, y: 30 }, { x: 201, y: 180 }] } });
  const onto = arrow(ab, (x) => { x.startBinding = { elementId: "b", focus: 0, gap: 1 }; x.endBinding = { elementId: "a", focus: 0, gap: 1 }; });
  assert.deepEqual(planArrow("e", onto, new Map(), ctx())!.args, { id: "e", from: "b", to: "a" });
});

test("a restyled arrow sends the property changed, not its points", () => {
  const c = planArrow("e", arrow(ab, (x) => { x.strokeStyle = "dashed"; }), new Map(), ctx())!;
  assert.deepEqual(c.args, { id: "e", props: { dash: "dashed" } });
  assert.deepEqual(c.fields, ["props.dash"]);
});
