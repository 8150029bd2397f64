// Unit tests of what the web UI sends for a person's gesture on the canvas
// (planGesture in plan.ts): the scene as the page drew it from the server's
// canvas (mapping.ts), changed as Excalidraw changes it, planned.

import assert from "node:assert/strict";
import { test } from "node:test";
import { CanvasModel, type Commit, type Edge as CanvasEdge, type Node as CanvasNode } from "@canvasd/client";
import { edgeElements, elementId, nodeElements, type El } from "./mapping";
import { clashOf, deletedFromServer, gestureUnderWay, isUnplanned, selectedIds, lostConflict, planGesture, stamp, type GesturePlan, type PageState, type Planned } from "./plan";

const node = (id: string, type: string, x: number, y: number, over: Partial<CanvasNode> = {}): CanvasNode =>
  ({ id, type, x, y, w: 100, h: 60, rotation: 0, name: "", parent_id: "", index: "a" + id, props: type === "geo" ? { geo: "rectangle" } : {},
    created_by: "", updated_by: "", created_rev: 1, updated_rev: 1, ...over }) as CanvasNode;
const box = (id: string, x: number, y: number, over: Partial<CanvasNode> = {}) => node(id, "geo", x, y, over);
const edge = (id: string, from: string, to: string, props: Record<string, unknown> = {}): CanvasEdge =>
  ({ id, from, to, type: "arrow", props, created_by: "", created_rev: 1, updated_rev: 1 }) as CanvasEdge;

/** The server's canvas of nodes and edges, at rev 10. */
function model(nodes: CanvasNode[], edges: CanvasEdge[] = []): CanvasModel {
  return new CanvasModel({ canvas_id: "c", head_rev: 10, head_event_id: "", state: { nodes, edges } } as never);
}

/** The page that drew m: its scene (in z-order) and what it counts as drawn. */
function drawn(m: CanvasModel): { els: El[]; page: PageState } {
  const els: El[] = [];
  for (const n of m.sorted()) els.push(...nodeElements(n, m.nodes, 2 + n.updated_rev).map((el) => ({ ...el, versionNonce: 7 })));
  for (const e of m.edges.values()) els.push(...edgeElements(e, m.nodes, 2 + e.updated_rev).map((el) => ({ ...el, versionNonce: 7 })));
  const children = new Map<string, Set<string>>();
  for (const n of m.nodes.values()) if (n.parent_id) children.set(n.parent_id, new Set([...(children.get(n.parent_id) || []), n.id]));
  return { els, page: { rendered: new Map(els.map((el) => [el.id, el.version])), sent: new Map(), children, deletedByOthers: new Map() } };
}

/** The scene with element id changed by f as Excalidraw changes one: a new object, one version up, a new nonce. */
function edit(els: El[], id: string, f: (el: El) => void): El[] {
  return els.map((el) => {
    if (el.id !== id) return el;
    const out = { ...el, version: el.version + 1, versionNonce: el.versionNonce + 1 };
    f(out);
    return out;
  });
}

function plan(m: CanvasModel, page: PageState, els: El[], selected: string[] = []): GesturePlan {
  return planGesture(m, page, { els, files: {}, selected: new Set(selected) });
}

/** The commands as [type, args] (what is sent). */
const sent = (p: GesturePlan) => p.cmds.map((c: Planned) => [c.type, c.args]);

const ab = () => model([box("a", 0, 0), box("b", 300, 0)], [edge("e", "a", "b")]);

test("a scene as the page drew it plans nothing", () => {
  const m = ab();
  const { els, page } = drawn(m);
  const p = plan(m, page, els);
  assert.deepEqual(p.cmds, []);
  assert.equal(p.dirty.size, 0);
});

test("a shape dragged is a move to its new place; shapes dragged together one relative move", () => {
  const m = model([box("a", 0, 0), box("b", 300, 0), box("c", 0, 300)]);
  const { els, page } = drawn(m);
  let p = plan(m, page, edit(els, "a", (el) => { el.x += 15; el.y += 5; }));
  assert.deepEqual(sent(p), [["move", { id: "a", x: 15, y: 5 }]]);
  assert.deepEqual(p.cmds[0].fields, ["x", "y"]);
  assert.deepEqual([...p.dirty], ["a"]);
  const both = edit(edit(els, "a", (el) => { el.x += 20; }), "b", (el) => { el.x += 20; });
  p = plan(m, page, both);
  assert.deepEqual(sent(p), [["move", { ids: ["a", "b"], dx: 20, dy: 0 }]]);
});

test("a resize by the top-left corner is a resize and a move; a frame's move takes back its children, which Excalidraw left", () => {
  const m = model([box("a", 0, 0), node("f", "frame", 500, 0, { w: 400, h: 300, name: "F" }), box("k", 550, 50, { parent_id: "f" })]);
  const { els, page } = drawn(m);
  let p = plan(m, page, edit(els, "a", (el) => { el.x -= 10; el.width += 10; el.height += 40; }));
  assert.deepEqual(sent(p), [["resize", { id: "a", w: 110, h: 100 }], ["move", { id: "a", x: -10, y: 0 }]]);
  p = plan(m, page, edit(els, "f", (el) => { el.x -= 50; el.width += 50; }));
  assert.deepEqual(sent(p), [["resize", { id: "f", w: 450, h: 300 }], ["move", { id: "f", x: 450, y: 0 }], ["move", { ids: ["k"], dx: 50, dy: 0 }]]);
});

test("shapes turned together are one rotate about the point Excalidraw turned them about", () => {
  const m = model([box("a", 0, 0), box("b", 200, 0)]);
  const { els, page } = drawn(m);
  // Turned 90° about (150, 30), the middle of the pair: a's centre (50, 30) goes to (150, -70), b's (250, 30) to (150, 130).
  const turned = edit(edit(els, "a", (el) => { el.angle = Math.PI / 2; el.x = 100; el.y = -100; }), "b", (el) => { el.angle = Math.PI / 2; el.x = 100; el.y = 100; });
  const p = plan(m, page, turned);
  assert.equal(p.cmds.length, 1);
  const [type, args] = sent(p)[0] as [string, Record<string, number>];
  assert.equal(type, "rotate");
  assert.deepEqual((args as unknown as { ids: string[] }).ids, ["a", "b"]);
  assert.equal(args.degrees, 90);
  assert.ok(Math.abs(args.origin_x - 150) < 1e-6 && Math.abs(args.origin_y - 30) < 1e-6, `origin ${args.origin_x}, ${args.origin_y}`);
  assert.deepEqual(p.cmds[0].fields, ["rotation", "x", "y"]);
});

test("a new shape is a create_shape of its kind, place, size and props; in the frame it was drawn in", () => {
  const m = model([node("f", "frame", 0, 0, { w: 400, h: 300, name: "F" })]);
  const { els, page } = drawn(m);
  const drawnEl: El = { ...nodeElements(box("n", 40, 50), m.nodes, 1)[0], frameId: "f", versionNonce: 3 };
  const p = plan(m, page, [...els, drawnEl]);
  assert.equal(p.cmds.length, 1);
  assert.equal(p.cmds[0].type, "create_shape");
  const args = p.cmds[0].args;
  assert.deepEqual({ id: args.id, type: args.type, x: args.x, y: args.y, w: args.w, h: args.h, parent_id: args.parent_id }, { id: "n", type: "geo", x: 40, y: 50, w: 100, h: 60, parent_id: "f" });
  assert.equal((args.props as Record<string, unknown>).geo, "rectangle");
  assert.deepEqual(p.cmds[0].ids, ["n"]);
});

test("a shape deleted with the arrow at it is one delete_shape: the edge goes with it", () => {
  const m = ab();
  const { els, page } = drawn(m);
  const gone = edit(edit(els, "a", (el) => { el.isDeleted = true; }), "e", (el) => { el.isDeleted = true; });
  const p = plan(m, page, gone);
  assert.deepEqual(sent(p), [["delete_shape", { ids: ["a"] }]]);
  assert.deepEqual(p.cmds[0].fields, ["x", "y", "w", "h", "rotation"]);
});

test("an arrow bound at one end only, deleted, is a delete_edge", () => {
  const m = model([box("s", 600, 250)], [edge("h", "", "s", { points: [{ x: 400, y: 300 }, { x: 599, y: 280 }] })]);
  const { els, page } = drawn(m);
  const arrow = els.find((el) => el.id === "h")!;
  assert.ok(!arrow.startBinding && arrow.endBinding?.elementId === "s", "drawn bound at its end only");
  const p = plan(m, page, edit(els, "h", (el) => { el.isDeleted = true; }));
  assert.deepEqual(sent(p), [["delete_edge", { id: "h" }]]);
  assert.deepEqual(p.cmds[0].ids, ["h"]);
});

test("a shape or arrow the server has, deleted before the page drew the server's version, is deleted on the server too", () => {
  const m = model([box("s", 0, 0)], [edge("h", "", "s", { points: [{ x: -200, y: 30 }, { x: -1, y: 30 }] })]);
  const { els, page } = drawn(m);
  // The person drew them and deleted them before their commit came back: the page has never drawn the server's version.
  const rendered = new Map(page.rendered);
  for (const id of ["s", "h"]) rendered.delete(id);
  const mine = edit(edit(els, "s", (el) => { el.isDeleted = true; }), "h", (el) => { el.isDeleted = true; });
  const p = plan(m, { ...page, rendered }, mine);
  assert.ok(deletedFromServer(mine.find((el) => el.id === "s")!, m));
  assert.deepEqual(sent(p), [["delete_shape", { ids: ["s"] }]]); // (the half-bound arrow at s goes with it)
  // One the server never had is nothing to send.
  const stray: El = { ...nodeElements(box("x", 0, 0), m.nodes, 3)[0], isDeleted: true };
  assert.ok(!deletedFromServer(stray, m));
  assert.ok(!isUnplanned(stray, rendered, new Map(), m));
  assert.deepEqual(plan(m, page, [...els, stray]).cmds, []);
});

test("an arrow bound to a turned shape follows its other shape's move: only the move is sent", () => {
  const m = model([box("a", 0, 0, { rotation: 0.5 }), box("b", 300, 0)], [edge("e", "a", "b")]);
  const { els, page } = drawn(m);
  // b dragged; Excalidraw moved the arrow's end with it.
  const moved = edit(edit(els, "b", (el) => { el.y += 40; }), "e", (el) => { el.points = [el.points[0], [el.points[1][0], el.points[1][1] + 40]]; });
  assert.deepEqual(sent(plan(m, page, moved, ["b"])), [["move", { id: "b", x: 300, y: 40 }]]);
  // The turned shape turned further, its arrow following: one rotate, the arrow settles with it.
  const turned = edit(edit(els, "a", (el) => { el.angle = 1; }), "e", (el) => { el.x += 3; });
  const p = plan(m, page, turned, ["a"]);
  assert.deepEqual(p.cmds.map((c) => c.type), ["rotate"]);
  assert.equal((p.cmds[0].args as { degrees: number }).degrees, Math.round(((0.5 * 180) / Math.PI) * 1000) / 1000);
  assert.deepEqual([...p.dirty].sort(), ["a", "e"]);
});

test("a copied pair with its edge: two create_shapes from their sources, then a create_edge between the copies with the edge's props", () => {
  const m = model([box("a", 0, 0, { props: { geo: "rectangle", color: "red" } }), box("b", 300, 0)], [edge("e", "a", "b", { arrowheadStart: "square" })]);
  const { els, page } = drawn(m);
  const copy = (id: string, from: string): El => ({ ...els.find((el) => el.id === from)!, id, x: els.find((el) => el.id === from)!.x + 20, version: 1, versionNonce: 9,
    customData: { ...els.find((el) => el.id === from)!.customData, node: from }, boundElements: [{ id: "e2", type: "arrow" }] });
  const arrow = els.find((el) => el.id === "e")!;
  const e2: El = { ...arrow, id: "e2", x: arrow.x + 20, version: 1, versionNonce: 9, customData: { ...arrow.customData, edge: "e" },
    startBinding: { ...arrow.startBinding, elementId: "a2" }, endBinding: { ...arrow.endBinding, elementId: "b2" } };
  const p = plan(m, page, [...els, copy("a2", "a"), copy("b2", "b"), e2]);
  assert.deepEqual(p.cmds.map((c) => c.type), ["create_shape", "create_shape", "create_edge"]);
  assert.deepEqual(p.cmds.map((c) => c.args.id), ["a2", "b2", "e2"]);
  assert.equal((p.cmds[0].args.props as Record<string, unknown>).color, "red");
  const ce = p.cmds[2].args as { from: string; to: string; props: Record<string, unknown> };
  assert.deepEqual([ce.from, ce.to], ["a2", "b2"]);
  assert.equal(ce.props.arrowheadStart, "square");
  assert.deepEqual(p.cmds[2].ids, ["e2"]); // (the copies are not the server's yet)
});

test("a label typed and a colour picked are one update_shape of the props the person changed", () => {
  const m = model([box("a", 0, 0, { props: { geo: "rectangle", text: "hi" } })]);
  const { els, page } = drawn(m);
  const label = els.find((el) => el.containerId === "a")!;
  let p = plan(m, page, edit(els, label.id, (el) => { el.text = el.originalText = "hello"; }));
  assert.deepEqual(sent(p), [["update_shape", { id: "a", props: { text: "hello" } }]]);
  assert.deepEqual(p.cmds[0].fields, ["props.text"]);
  assert.deepEqual([...p.dirty], ["a"]);
  // (Excalidraw colours a shape's label with it.)
  p = plan(m, page, edit(edit(els, "a", (el) => { el.strokeColor = "#e03131"; }), label.id, (el) => { el.strokeColor = "#e03131"; }));
  assert.deepEqual(sent(p), [["update_shape", { id: "a", props: { color: "red" } }]]);
  assert.deepEqual(p.cmds[0].fields, ["props.color"]);
});

test("an element already sent is not planned again; edited again, it is", () => {
  const m = ab();
  const { els, page } = drawn(m);
  const moved = edit(els, "a", (el) => { el.x += 15; });
  const a = moved.find((el) => el.id === "a")!;
  const sentOnce = { ...page, sent: new Map([["a", stamp(a)]]) };
  assert.deepEqual(plan(m, sentOnce, moved).cmds, []);
  assert.deepEqual(sent(plan(m, sentOnce, edit(moved, "a", (el) => { el.x += 5; }))), [["move", { id: "a", x: 20, y: 0 }]]);
});

test("a shape brought to the front is a reorder", () => {
  const m = model([box("a", 0, 0), box("b", 300, 0), box("c", 600, 0)]);
  const { els, page } = drawn(m);
  const a = edit(els, "a", () => {}).find((el) => el.id === "a")!;
  const p = plan(m, page, [...els.filter((el) => el.id !== "a"), a]);
  assert.deepEqual(sent(p), [["reorder", { ids: ["a"], op: "bring_to_front" }]]);
  assert.deepEqual(p.cmds[0].fields, ["index"]);
});

test("shapes grouped are a group of them under the new group's id; a group let go an ungroup", () => {
  const m = model([box("a", 0, 0), box("b", 300, 0)]);
  const { els, page } = drawn(m);
  const grouped = edit(edit(els, "a", (el) => { el.groupIds = ["g1"]; }), "b", (el) => { el.groupIds = ["g1"]; });
  assert.deepEqual(sent(plan(m, page, grouped)), [["group", { ids: ["a", "b"], group_id: "g1" }]]);
  const mg = model([node("g", "group", 0, 0), box("a", 0, 0, { parent_id: "g" }), box("b", 300, 0, { parent_id: "g" })]);
  const d = drawn(mg);
  assert.ok(d.els.find((el) => el.id === "a")!.groupIds.includes("g"));
  const ungrouped = edit(edit(d.els, "a", (el) => { el.groupIds = []; }), "b", (el) => { el.groupIds = []; });
  assert.deepEqual(sent(plan(mg, d.page, ungrouped)), [["ungroup", { id: "g" }]]);
});

test("a shape dragged into a frame is re-parented to it; out of it, to the canvas", () => {
  const m = model([node("f", "frame", 0, 0, { w: 400, h: 300, name: "F" }), box("a", 600, 0), box("k", 50, 50, { parent_id: "f" })]);
  const { els, page } = drawn(m);
  let p = plan(m, page, edit(els, "a", (el) => { el.x = 100; el.y = 100; el.frameId = "f"; }));
  assert.deepEqual(sent(p), [["update_shape", { id: "a", parent_id: "f" }], ["move", { id: "a", x: 100, y: 100 }]]);
  p = plan(m, page, edit(els, "k", (el) => { el.x = 700; el.frameId = null; }));
  assert.deepEqual(sent(p), [["update_shape", { id: "k", parent_id: "" }], ["move", { id: "k", x: 700, y: 50 }]]);
});

test("an edit of a shape others deleted meanwhile is lost, not created: a conflict to show", () => {
  const m = model([box("b", 300, 0)]);
  const { els, page } = drawn(m);
  // a was on the page (drawn at rev 9) when another's commit 10 deleted it; the person moved it meanwhile.
  const by = { rev: 10, cmd_id: "cmd_x", actor_id: "bob", changes: [{ op: "delete", kind: "node", id: "a" }] } as unknown as Commit;
  const a: El = { ...nodeElements(box("a", 0, 0), m.nodes, 3)[0], x: 40, versionNonce: 2 };
  const p = plan(m, { ...page, deletedByOthers: new Map([["a", by]]) }, [...els, a]);
  assert.deepEqual(p.cmds, []);
  assert.equal(p.lost.length, 1);
  assert.equal(p.lost[0].cmd.type, "create_shape");
  assert.equal(p.lost[0].cmd.args.x, 40);
  assert.deepEqual(p.lost[0].cmd.fields, ["x", "y", "w", "h", "rotation"]);
  const body = lostConflict(p.lost, m);
  assert.deepEqual({ ...body }, { status: "conflict", current_rev: 10, base_rev: 9, conflicting_ids: ["a"], recovery_ops: [by], suggestion: "" });
  // Without the others' delete, the same element is a new shape.
  assert.deepEqual(plan(m, page, [...els, a]).cmds.map((c) => c.type), ["create_shape"]);
});

test("a document card's label is the server's: an edit of it plans nothing", () => {
  const m = model([node("d", "doc", 0, 0, { props: { title: "Notes" } })]);
  const { els, page } = drawn(m);
  const parts = els.filter((el) => el.id !== elementId("d"));
  assert.ok(parts.length > 0, "a document card has parts");
  const p = plan(m, page, edit(els, parts[0].id, (el) => { el.x += 3; }));
  assert.deepEqual(p.cmds, []);
});

test("a 409 of others' changes to other fields is sent again; to the same fields, or a delete, the person chooses", () => {
  const commit = (actor: string, changes: unknown[]) => ({ rev: 11, actor_id: actor, changes }) as unknown as Commit;
  const body = (...ops: Commit[]) => ({ status: "conflict", current_rev: 12, base_rev: 10, conflicting_ids: ["a"], recovery_ops: ops }) as never;
  const restyled = commit("bob", [{ op: "patch", kind: "node", id: "a", patch: { props: { color: "red" } } }]);
  assert.deepEqual(clashOf(["x", "y"], ["a"], body(restyled)), { who: ["bob"], deleted: false, overlap: false, both: [] });
  const moved = commit("eve", [{ op: "patch", kind: "node", id: "a", patch: { x: 5 } }, { op: "patch", kind: "node", id: "z", patch: { y: 5 } }]);
  assert.deepEqual(clashOf(["x", "y"], ["a"], body(restyled, moved)), { who: ["bob", "eve"], deleted: false, overlap: true, both: ["x"] });
  const typed = commit("bob", [{ op: "edit", kind: "node", id: "a", edit: { prop: "text", pos: 0, del: 0, ins: "x" } }]);
  assert.equal(clashOf(["props.text"], ["a"], body(typed)).overlap, true);
  const gone = commit("bob", [{ op: "delete", kind: "node", id: "a" }]);
  assert.deepEqual(clashOf(["props.color"], ["a"], body(gone)), { who: ["bob"], deleted: true, overlap: true, both: [] });
  // A create (no fields) always lets the person choose; changes to nodes not in conflict do not count.
  assert.equal(clashOf([], ["a"], body(restyled)).overlap, true);
  assert.deepEqual(clashOf(["x"], ["z"], { recovery_ops: [moved] } as never).both, []);
});

test("a gesture is planned when it ends: not while a button is down, a shape drawn, resized, turned or dragged, or a text typed", () => {
  const idle = { cursorButton: "up", newElement: null, resizingElement: null, editingTextElement: null, multiElement: null,
    selectedElementsAreBeingDragged: false, isResizing: false, isRotating: false, selectedElementIds: { a: true, b: false } };
  assert.equal(gestureUnderWay(idle), false);
  for (const busy of [{ cursorButton: "down" }, { newElement: {} }, { resizingElement: {} }, { editingTextElement: {} }, { multiElement: {} },
    { selectedElementsAreBeingDragged: true }, { isResizing: true }, { isRotating: true }]) {
    assert.equal(gestureUnderWay({ ...idle, ...busy }), true, JSON.stringify(busy));
  }
  assert.deepEqual([...selectedIds(idle)], ["a"]);
  assert.deepEqual([...selectedIds({})], []);
});
