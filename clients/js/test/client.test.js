// CanvasClient against a real canvasd (embedded store): state, commands,
// conflicts, idempotency, batches, documents, the stream, agent sessions,
// gestures and LiveCanvas.

import { test } from "node:test";
import assert from "node:assert/strict";
import { CanvasClient, CanvasError, ConflictError } from "../dist/index.js";
import { serverForTests, waitFor } from "./harness.js";

const env = serverForTests();

async function newCanvas() {
  return (await env.c.createCanvas({ title: "js test" })).canvas_id;
}

test("state, apply with baseRev, rebased, time travel and the event log", async () => {
  const id = await newCanvas();
  const s0 = await env.c.getState(id);
  assert.equal(s0.head_rev, 0);
  const a = await env.c.applyResult(id, "create_shape", { id: "a", type: "geo", x: 0, y: 0, w: 10, h: 10 }, { baseRev: 0 });
  assert.equal(a.rev, 1);
  assert.deepEqual(a.createdIds, ["a"]);
  assert.equal(a.rebased, false);
  assert.match(a.idempotencyKey, /^js-[0-9a-f]{32}$/);
  // A stale baseRev that touches nothing changed since applies, rebased.
  const b = await env.c.applyResult(id, "create_shape", { id: "b", type: "note", x: 50, y: 0 }, { baseRev: 0 });
  assert.equal(b.rev, 2);
  assert.equal(b.rebased, true);
  // Without baseRev the newest revision this client saw is used.
  assert.equal(await env.c.apply(id, "move", { ids: ["a"], dx: 5, dy: 0 }), 3);
  const past = await env.c.getState(id, { atRev: 1 });
  assert.equal(past.head_rev, 1);
  assert.deepEqual(past.state.nodes.map((n) => n.id), ["a"]);
  const now = await env.c.getState(id);
  assert.equal(now.state.nodes.find((n) => n.id === "a").x, 5);
  const page = await env.c.events(id, { afterRev: 1, limit: 1 });
  assert.equal(page.head_rev, 3);
  assert.deepEqual(page.commits.map((x) => x.rev), [2]);
  const all = [];
  for await (const x of env.c.allEvents(id, { pageSize: 2 })) all.push(x.rev);
  assert.deepEqual(all, [1, 2, 3]);
});

test("a 409 throws ConflictError; onConflict re-reads and re-plans with a derived key", async () => {
  const id = await newCanvas();
  await env.c.apply(id, "create_shape", { id: "s", type: "geo", x: 0, y: 0, w: 10, h: 10 }, { baseRev: 0 });
  await env.c.apply(id, "update_shape", { id: "s", x: 100 }, { baseRev: 1 });
  await assert.rejects(env.c.apply(id, "update_shape", { id: "s", x: 200 }, { baseRev: 1 }), (err) => {
    assert.ok(err instanceof ConflictError);
    assert.equal(err.status, 409);
    assert.equal(err.currentRev, 2);
    assert.deepEqual(err.conflictingIds, ["s"]);
    assert.equal(err.recoveryOps.length, 1);
    return true;
  });
  const seen = [];
  const r = await env.c.applyResult(id, "update_shape", { id: "s", x: 200 }, {
    baseRev: 1, idempotencyKey: "k-replan",
    onConflict: (conflict, fresh) => {
      seen.push([conflict.currentRev, fresh.head_rev, fresh.state.nodes[0].x]);
      return { type: "update_shape", args: { id: "s", y: 7 } };
    },
  });
  assert.deepEqual(seen, [[2, 2, 100]]);
  assert.equal(r.replans, 1);
  assert.equal(r.idempotencyKey, "k-replan.r1");
  assert.equal(r.rev, 3);
  const s = (await env.c.getState(id)).state.nodes[0];
  assert.equal(s.x, 100);
  assert.equal(s.y, 7);
  // Giving up (null) throws the conflict.
  await assert.rejects(env.c.apply(id, "update_shape", { id: "s", x: 1 }, { baseRev: 1, onConflict: () => null }), ConflictError);
});

test("a repeated idempotency key replays the stored answer", async () => {
  const id = await newCanvas();
  const one = await env.c.applyResult(id, "create_shape", { type: "geo", x: 0, y: 0 }, { baseRev: 0, idempotencyKey: "same" });
  const two = await env.c.applyResult(id, "create_shape", { type: "geo", x: 0, y: 0 }, { baseRev: 0, idempotencyKey: "same" });
  assert.equal(one.replayed, false);
  assert.equal(two.replayed, true);
  assert.equal(two.rev, one.rev);
  assert.deepEqual(two.createdIds, one.createdIds);
  assert.equal((await env.c.getState(id)).head_rev, 1);
});

test("batches apply all or nothing", async () => {
  const id = await newCanvas();
  const r = await env.c.applyBatch(id, [
    { type: "create_shape", args: { id: "x", type: "geo", x: 0, y: 0 } },
    { type: "create_shape", args: { id: "y", type: "geo", x: 20, y: 0 } },
  ], { baseRev: 0 });
  assert.equal(r.current_rev, 2);
  assert.equal(r.results.length, 2);
  await assert.rejects(env.c.applyBatch(id, [
    { type: "create_shape", args: { id: "z", type: "geo", x: 0, y: 0 } },
    { type: "delete_shape", args: { ids: ["missing"] } },
  ], { baseRev: 2 }), (err) => err instanceof CanvasError && err.status === 422);
  assert.equal((await env.c.getState(id)).head_rev, 2);
});

test("document verbs and reads, named snapshots, diffs", async () => {
  const id = await newCanvas();
  await env.c.apply(id, "create_node", { id: "doc", type: "doc", name: "notes", props: { text: "one\ntwo\nthree\n", language: "text" } }, { baseRev: 0 });
  const snap = await env.c.createSnapshot(id, { label: "before" });
  const r = await env.c.replaceLines(id, { node_id: "doc", start_line: 2, end_line: 2, new_content: "TWO" });
  assert.equal(r.result.lines_affected, 1);
  await env.c.insertLines(id, { node_id: "doc", insert_after_line: 3, content: "four" });
  await env.c.searchReplace(id, { node_id: "doc", search_pattern: "one", replace_with: "ONE", case_sensitive: true, regex: false, max_replacements: 0 });
  await env.c.deleteLines(id, { node_id: "doc", start_line: 4, end_line: 4 });
  const doc = await env.c.getDoc(id, "doc");
  assert.equal(doc.content, "ONE\nTWO\nthree\n");
  assert.equal(doc.line_count, 3);
  const part = await env.c.getDoc(id, "doc", { startLine: 2, endLine: 2 });
  assert.deepEqual(part.numbered_lines, [{ number: 2, content: "TWO" }]);
  const diff = await env.c.getDocDiff(id, "doc", { since: snap.snapshot_id });
  assert.equal(diff.has_changes, true);
  const sel = await env.c.getDocSelection(id, "doc", { startLine: 1, endLine: 1 });
  assert.equal(sel.selection.content, "ONE");
  assert.deepEqual((await env.c.listSnapshots(id)).map((s) => s.snapshot_id), [snap.snapshot_id]);
  const undone = await env.c.undo(id);
  assert.ok(undone.rev > 0);
  assert.equal((await env.c.getDoc(id, "doc")).content, "ONE\nTWO\nthree\nfour\n");
  await env.c.revertToSnapshot(id, { snapshot_id: snap.snapshot_id });
  assert.equal((await env.c.getDoc(id, "doc")).content, "one\ntwo\nthree\n");
});

test("the stream resumes after Last-Event-ID, says caught_up, follows live commits; the token goes in a header", async () => {
  const id = await newCanvas();
  const first = await env.c.applyResult(id, "create_shape", { type: "geo", x: 0, y: 0 }, { baseRev: 0 });
  await env.c.apply(id, "create_shape", { type: "geo", x: 10, y: 0 });
  const urls = [];
  const seenHeaders = [];
  const spy = new CanvasClient({
    baseUrl: env.srv.url, token: env.srv.adminToken,
    fetch: (u, init) => {
      urls.push(String(u));
      seenHeaders.push(init?.headers ?? {});
      return fetch(u, init);
    },
  });
  const s = spy.stream(id, { lastEventId: first.eventId });
  const got = [];
  for await (const ev of s) {
    got.push(ev.event === "canvas_commit" ? `commit:${ev.data.rev}:${ev.id === ev.data.event_id}` : `${ev.event}:${ev.data.head_rev}`);
    if (ev.event === "caught_up") await env.c.apply(id, "create_shape", { type: "geo", x: 20, y: 0 });
    if (ev.event === "canvas_commit" && ev.data.rev === 3) break;
  }
  s.close();
  assert.deepEqual(got, ["commit:2:true", "caught_up:2", "commit:3:true"]);
  assert.ok(!urls[0].includes("access_token"), urls[0]);
  assert.equal(seenHeaders[0]["Authorization"], "Bearer " + env.srv.adminToken);
  assert.equal(seenHeaders[0]["Last-Event-ID"], first.eventId);
});

test("an id that cannot be resumed gives reset; the stream then continues from it", async () => {
  const id = await newCanvas();
  await env.c.apply(id, "create_shape", { type: "geo", x: 0, y: 0 }, { baseRev: 0 });
  const s = env.c.stream(id, { lastEventId: "999-deadbeef" });
  const got = [];
  for await (const ev of s) {
    got.push(ev.event);
    if (ev.event === "reset") {
      assert.equal(ev.data.head_rev, 1);
      assert.equal(s.lastEventId, "1");
    }
    if (ev.event === "caught_up") break;
  }
  s.close();
  assert.deepEqual(got, ["reset", "caught_up"]);
  assert.ok(s.connects >= 2);
});

test("errors are problem documents; 401/404 streams throw", async () => {
  await assert.rejects(env.c.getState("no-such-canvas"), (err) => err instanceof CanvasError && err.status === 404 && typeof err.problem.detail === "string");
  const bad = new CanvasClient({ baseUrl: env.srv.url, token: "wrong" });
  await assert.rejects(bad.listCanvases(), (err) => err.status === 401);
  const s = bad.stream("anything");
  await assert.rejects((async () => { for await (const _ of s) break; })(), (err) => err.status === 401);
  const id = await newCanvas();
  await assert.rejects(env.c.apply(id, "create_shape", { type: "nonsense", x: "a" }, { baseRev: 0 }), (err) => err.status === 422 && !!err.field);
});

test("agent sessions: run, status on the stream, session read, cancel, chat message", async () => {
  const id = await newCanvas();
  const s = env.c.stream(id);
  const states = [];
  const it = s[Symbol.asyncIterator]();
  let ev;
  do ev = (await it.next()).value; while (ev.event !== "caught_up");
  const run = await env.c.runAgent({ roomId: id, message: "add a sticky note that says hello" });
  assert.equal(run.ok, true);
  let actions = 0;
  for (;;) {
    ev = (await it.next()).value;
    if (ev.event === "agent:action" && !ev.data.partial) actions += ev.data.actions.length;
    if (ev.event === "agent:status" && ev.data.sessionId === run.session_id) {
      states.push(ev.data.state);
      if (["done", "error", "canceled"].includes(ev.data.state)) break;
    }
  }
  s.close();
  assert.equal(states.at(-1), "done");
  assert.ok(states.includes("calling_model"));
  assert.ok(actions >= 1);
  const sess = await env.c.agentSession(run.session_id);
  assert.equal(sess.state, "done");
  assert.ok(sess.stats.actions_applied >= 1);
  const cancel = await env.c.cancelAgent(run.session_id);
  assert.equal(cancel.ok, true);
  const msg = await env.c.sendMessage(run.session_id, { prompt: "one more sticky note" });
  assert.ok(msg);
  await waitFor(async () => (await env.c.agentSession(run.session_id)).transcript.some((t) => t.text === "one more sticky note"), "the message in the transcript");
  const catalog = await env.c.agentCatalog();
  assert.ok(JSON.stringify(catalog).includes("create_shape"));
});

test("throttled gestures send the newest one, at most one per interval", async () => {
  const id = await newCanvas();
  const s = env.c.stream(id);
  const it = s[Symbol.asyncIterator]();
  let ev;
  do ev = (await it.next()).value; while (ev.event !== "caught_up");
  const g = env.c.gestures(id, { intervalMs: 150 });
  for (let i = 0; i <= 9; i++) g.send({ cursor: { x: i, y: 0 } });
  const xs = [];
  while (!xs.includes(9)) {
    ev = (await it.next()).value;
    if (ev.event === "gesture") xs.push(ev.data.cursor.x);
  }
  g.close();
  s.close();
  assert.ok(xs.length <= 2, `sent ${xs}`);
  assert.equal(xs.at(-1), 9);
});

test("LiveCanvas keeps a model current and answers invokes by action name", async () => {
  const id = await newCanvas();
  await env.c.apply(id, "create_shape", { id: "k", type: "geo", x: 0, y: 0, w: 5, h: 5 }, { baseRev: 0 });
  const live = env.c.live(id);
  const m = await live.ready;
  assert.equal(m.rev, 1);
  assert.equal(m.nodes.get("k").w, 5);
  live.handle("ping", (payload) => ({ pong: payload }));
  await env.c.apply(id, "update_shape", { id: "k", w: 9, props: { color: "red" } });
  await waitFor(() => live.model.rev === 2, "the live model at rev 2");
  assert.equal(live.model.nodes.get("k").w, 9);
  assert.equal(live.model.nodes.get("k").props.color, "red");
  const ans = await env.c.invoke({ canvas_id: id, action: "ping", payload: { a: 1 }, timeout_ms: 10000 });
  assert.deepEqual(ans, { ok: true, result: { pong: { a: 1 } } });
  live.close();
});
