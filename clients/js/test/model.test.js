// CanvasModel follows commits in O(change): checked against a model rebuilt
// from the same state after every commit (nodes, edges, z-order), and a
// commit that cannot apply leaves the model as it was.

import { test } from "node:test";
import assert from "node:assert/strict";
import { CanvasModel } from "../dist/index.js";

const node = (id, index, x = 0) => ({ id, type: "geo", index, x, y: 0, w: 10, h: 10, rotation: 0, props: { color: "blue" } });

function snapshotOf(m) {
  return { canvas_id: m.canvasId, head_rev: m.rev, state: { nodes: [...m.nodes.values()], edges: [...m.edges.values()] } };
}

test("random commits: maps and sorted() match a model rebuilt from scratch", () => {
  let seed = 7;
  const rnd = (n) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
  const idx = () => "a" + String.fromCharCode(97 + rnd(26)) + String.fromCharCode(97 + rnd(26));
  const nodes = Array.from({ length: 200 }, (_, i) => node("n" + i, idx(), i));
  const m = new CanvasModel({ canvas_id: "c", head_rev: 1, state: { nodes, edges: [] } });
  m.sorted(); // the cache is kept from now on
  let next = 200;
  for (let rev = 2; rev < 600; rev++) {
    const live = [...m.nodes.keys()]; // the ids a change may patch or delete, as the commit goes
    const pick = () => live[rnd(live.length)];
    const changes = [];
    for (let k = 0, n = 1 + rnd(3); k < n; k++) {
      switch (rnd(6)) {
        case 0: { const id = "n" + next++; live.push(id); changes.push({ kind: "node", op: "put", id, value: { ...node(id, idx(), rnd(100)) } }); break; }
        case 1: { const id = pick(); live.splice(live.indexOf(id), 1); changes.push({ kind: "node", op: "delete", id }); break; }
        case 2: changes.push({ kind: "node", op: "patch", id: pick(), patch: { index: idx() } }); break;
        case 3: changes.push({ kind: "edge", op: "put", id: "e" + rnd(20), value: { id: "e", from: pick(), to: pick(), type: "arrow" } }); break;
        default: changes.push({ kind: "node", op: "patch", id: pick(), patch: { x: rnd(1000), props: { color: "red", fill: null } } });
      }
    }
    const c = { rev, actor_id: "a", event_id: "ev" + rev, changes };
    assert.equal(m.apply(c), "applied");
    const fresh = new CanvasModel(snapshotOf(m));
    assert.deepEqual(m.sorted().map((n) => n.id), fresh.sorted().map((n) => n.id), `z-order after rev ${rev}`);
    for (const n of m.sorted()) assert.equal(n, m.nodes.get(n.id), "sorted() holds the current node objects");
  }
  assert.ok(m.nodes.size > 50);
});

test("a commit that cannot apply leaves the model as it was", () => {
  const m = new CanvasModel({ canvas_id: "c", head_rev: 1, state: { nodes: [node("a", "a1"), node("b", "a2")], edges: [] } });
  m.sorted();
  const before = JSON.stringify(snapshotOf(m));
  assert.throws(() => m.apply({ rev: 2, changes: [
    { kind: "node", op: "patch", id: "a", patch: { index: "a3" } },
    { kind: "node", op: "delete", id: "b" },
    { kind: "node", op: "patch", id: "b", patch: { x: 1 } }, // b is gone
  ] }), /patch of missing node b/);
  assert.equal(JSON.stringify(snapshotOf(m)), before);
  assert.deepEqual(m.sorted().map((n) => n.id), ["a", "b"]);
  assert.equal(m.rev, 1);
});

test("unchanged nodes keep their identity; changed ones are new objects", () => {
  const a = node("a", "a1"), b = node("b", "a2");
  const m = new CanvasModel({ canvas_id: "c", head_rev: 1, state: { nodes: [a, b], edges: [] } });
  assert.equal(m.apply({ rev: 2, actor_id: "u", changes: [{ kind: "node", op: "patch", id: "a", patch: { x: 5, props: { text: "hi" } } }] }), "applied");
  assert.equal(m.nodes.get("b"), b);
  assert.notEqual(m.nodes.get("a"), a);
  assert.equal(a.x, 0, "the old object is not modified");
  assert.deepEqual(m.nodes.get("a").props, { color: "blue", text: "hi" });
  assert.equal(m.nodes.get("a").updated_rev, 2);
  assert.equal(m.apply({ rev: 2, changes: [] }), "old");
  assert.equal(m.apply({ rev: 4, changes: [] }), "gap");
});
