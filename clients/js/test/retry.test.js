// The retry rule shared by canvasd's clients: a request is resent after a
// network error or a 502/503/504 only when it is safe to repeat: reads, and
// writes that carry an idempotency key (commands and batches always do), the
// resend carrying the very same key. Other writes are never resent.

import { test } from "node:test";
import assert from "node:assert/strict";
import { CanvasClient, CanvasError } from "../dist/index.js";

/** A fetch answering from a script: each entry is a status (JSON body) or "network". */
function scripted(script) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url: String(url), method: init.method, body: init.body, headers: init.headers });
    const step = script.shift() ?? 200;
    if (step === "network") throw new TypeError("fetch failed");
    const body = step === 200
      ? { status: "applied", current_rev: 1, cmd_id: "c", event_id: "1-a", created_ids: [], canvas_id: "c1", head_rev: 0, title: "" }
      : { type: "about:blank", title: "Service unavailable", status: step, detail: "the commit outcome is unknown; retry with the same idempotency key" };
    return new Response(JSON.stringify(body), { status: step, headers: { "Content-Type": "application/json" } });
  };
  return { calls, fetch };
}

const opts = (fetch) => ({ baseUrl: "http://canvasd.test", token: "t", fetch, backoffMs: 1, maxBackoffMs: 2 });

test("a command is resent after 503 and a network error with the same idempotency key", async () => {
  const { calls, fetch } = scripted([503, "network", 200]);
  const c = new CanvasClient(opts(fetch));
  const r = await c.applyResult("c1", "create_shape", { type: "geo", x: 0, y: 0 }, { baseRev: 0 });
  assert.equal(calls.length, 3);
  const keys = calls.map((x) => JSON.parse(x.body).idempotency_key);
  assert.equal(new Set(keys).size, 1);
  assert.equal(keys[0], r.idempotencyKey);
});

test("a batch is resent with its key; retries are bounded", async () => {
  const { calls, fetch } = scripted([503, 503, 503, 503, 200]);
  const c = new CanvasClient({ ...opts(fetch), retries: 2 });
  await assert.rejects(c.applyBatch("c1", [{ type: "create_shape", args: {} }], { baseRev: 0 }), (err) => err instanceof CanvasError && err.status === 503 && !!err.idempotencyKey);
  assert.equal(calls.length, 3);
  assert.equal(new Set(calls.map((x) => JSON.parse(x.body).idempotency_key)).size, 1);
});

test("writes without an idempotency key are never resent; reads are", async () => {
  let s = scripted([503]);
  await assert.rejects(new CanvasClient(opts(s.fetch)).createCanvas({ title: "x" }), (err) => err.status === 503);
  assert.equal(s.calls.length, 1);
  s = scripted([503]);
  await assert.rejects(new CanvasClient(opts(s.fetch)).deleteCanvas("c1"), (err) => err.status === 503);
  assert.equal(s.calls.length, 1);
  s = scripted([503]);
  await assert.rejects(new CanvasClient(opts(s.fetch)).revokeToken("a1"), (err) => err.status === 503);
  assert.equal(s.calls.length, 1);
  s = scripted(["network"]);
  await assert.rejects(new CanvasClient(opts(s.fetch)).runAgent({ roomId: "c1", message: "m" }), (err) => err.status === 0);
  assert.equal(s.calls.length, 1);
  s = scripted([502, 504, 200]);
  await new CanvasClient(opts(s.fetch)).getCanvas("c1");
  assert.equal(s.calls.length, 3);
});

test("a 503 says whether the write may have happened", async () => {
  const fetch = async () => new Response(JSON.stringify({ type: "https://canvasd.dev/problems/outcome-unknown", title: "Outcome unknown", status: 503, detail: "retry with the same idempotency_key", outcome: "unknown" }),
    { status: 503, headers: { "Content-Type": "application/problem+json" } });
  await assert.rejects(new CanvasClient({ ...opts(fetch), retries: 0 }).apply("c1", "move", {}, { baseRev: 0 }), (err) => err.status === 503 && err.outcome === "unknown" && !!err.idempotencyKey);
});

test("a 4xx is not retried and carries the problem document", async () => {
  const { calls, fetch } = scripted([422]);
  await assert.rejects(new CanvasClient(opts(fetch)).apply("c1", "move", {}, { baseRev: 0 }), (err) => err.status === 422 && err.problem.status === 422);
  assert.equal(calls.length, 1);
});
