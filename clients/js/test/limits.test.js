// The server's limits as the client meets them, against a real canvasd run
// with --max-streams-per-token 1.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { CanvasClient, CanvasError } from "../dist/index.js";
import { startServer, waitFor } from "./harness.js";

let srv;

before(async () => {
  srv = await startServer({ args: ["--max-streams-per-token", "1"] });
});

after(async () => {
  await srv?.stop();
});

/** Reads s until caught_up; returns the iterator, which keeps the stream open. */
async function caughtUp(s) {
  const it = s[Symbol.asyncIterator]();
  for (;;) {
    const { value, done } = await it.next();
    if (done) throw new Error("stream ended before caught_up");
    if (value.event === "caught_up") return it;
  }
}

/** A viewer's client on a new canvas, holding the one stream the cap allows. */
async function viewerAtCap() {
  const admin = new CanvasClient({ baseUrl: srv.url, token: srv.adminToken });
  const id = (await admin.createCanvas({ title: "limits" })).canvas_id;
  const { token } = await admin.createToken({ role: "viewer" });
  const c = new CanvasClient({ baseUrl: srv.url, token });
  const held = c.stream(id);
  await caughtUp(held);
  return { c, id, held };
}

test("a stream refused for the cap waits the 429's Retry-After (up to its cap), then follows the canvas", async () => {
  const { c, id, held } = await viewerAtCap();

  let refusedAt = 0;
  let reconnects = 0;
  const second = c.stream(id, {
    reconnectDelayMs: 10, maxReconnectDelayMs: 1000,
    onConnection: (st) => {
      if (st !== "reconnecting") return;
      reconnects++;
      refusedAt ||= Date.now();
    },
  });
  const followed = caughtUp(second);
  await waitFor(() => refusedAt > 0, "the second stream refused");
  held.close(); // the slot frees at once: only the Retry-After keeps the client waiting
  await followed;
  const waited = Date.now() - refusedAt;
  second.close();
  assert.ok(waited >= 900, `came back ${waited} ms after the 429, want about its Retry-After capped by maxReconnectDelayMs (1000 ms)`);
  assert.equal(reconnects, 1, "retried before the Retry-After");
});

test("a 429 carries its Retry-After and problem", async () => {
  const { c, id, held } = await viewerAtCap();
  const refused = c.stream(id, { maxReconnects: 0 });
  await assert.rejects(caughtUp(refused), (err) =>
    err instanceof CanvasError && err.status === 429 && err.retryAfterMs === 5000 && err.problem?.type?.endsWith("too-many-streams"));
  held.close();
});
