// LiveCanvas acks only what it applied, against a real canvasd: the host
// gets a set_viewport and leaves without acking; the envelopes it did not
// ack go to the new host, which acks again the notes it applied, but not
// the set_viewport it never had (it came between two notes it applied, so it
// is an out-of-order envelope now, not applied): the session counts that one
// missed instead of acked. An ack refused with 403 (as by a server that has
// not heard of the browser's stream yet) is sent again at once.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { CanvasClient } from "../dist/index.js";
import { notYetForbidden, startServer, waitFor } from "./harness.js";
import { notesAndViewportReply, startFakeOpenAI } from "./fake-openai.js";

let srv, model, c;

const REPLY = notesAndViewportReply(200);

before(async () => {
  model = await startFakeOpenAI([REPLY, REPLY]);
  srv = await startServer({
    env: {
      CANVAS_STEWARD_MODEL: "openai:gpt-test", OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "sk-test",
      CANVAS_AGENT_LOW_ACTION_THRESHOLD: "0", CANVAS_AGENT_ACK_TIMEOUT_MS: "1000", CANVAS_AGENT_ACK_RETRIES: "2",
    },
  });
  c = new CanvasClient({ baseUrl: srv.url, token: srv.adminToken });
});

after(async () => {
  await srv?.stop();
  await model?.close();
});

const PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";

/** A browser following canvasId that records the set_viewport boxes and complete envelopes it handled. */
function browser(canvasId, clientId, ack) {
  const seen = { viewports: [], envelopes: [] };
  const live = c.live(canvasId, {
    clientId, ack,
    hooks: {
      screenshot: async (req) => ({ dataUrl: PNG, bounds: req.bounds, viewport: { x: 0, y: 0, w: 100, h: 100 }, selection: [], docVersion: "0" }),
      setViewport: (box) => seen.viewports.push(box),
    },
  });
  live.on("agent:action", ({ envelope }) => seen.envelopes.push(envelope));
  return { live, seen };
}

test("a set_viewport the new host never had is not acked: it counts as missed", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "acks" });
  const a = browser(id, "host-a", false); // the host: gets set_viewport, never acks
  let b;
  try {
    await a.live.ready;
    await waitFor(() => a.live.isHost, "a elected");
    b = browser(id, "peer-b", true); // after a is host: the first candidate to connect is elected
    await b.live.ready;
    await waitFor(() => b.live.hostId === "host-a", "b told a is the host");
    const run = await c.runAgent({ roomId: id, message: "two notes and a view" });
    await waitFor(() => a.seen.viewports.length === 1 && a.seen.envelopes.length === 3, "the host got both notes and set_viewport");
    await waitFor(() => b.seen.envelopes.length === 2, "the peer got both notes");
    const vpSeq = a.seen.envelopes.find((e) => e.actions.some((x) => x.name === "set_viewport")).seq;
    a.live.close(); // leaves without acking: b becomes the host and gets the resends
    await waitFor(() => b.live.isHost, "b elected");
    let sess;
    await waitFor(async () => ["done", "error", "canceled"].includes((sess = await c.agentSession(run.session_id)).state), "the session to end", 30000);
    assert.equal(sess.state, "done", JSON.stringify(sess));
    assert.deepEqual(b.seen.viewports, [], "the stale set_viewport is not applied out of order");
    assert.equal(sess.stats.acks_missed, 1, `the set_viewport (seq ${vpSeq}) was never applied by a host: ${JSON.stringify(sess.stats)}`);
  } finally {
    a.live.close();
    b?.live.close();
  }
});

test("an ack refused with 403 is sent again: nothing is resent or missed", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "acks 403" });
  // The first two acks meet a server that does not know this browser yet
  // (test instrumentation: the other server of a shared database is played here).
  let refused = 0;
  const flaky = new CanvasClient({
    baseUrl: srv.url, token: srv.adminToken,
    fetch: (u, init) => {
      if (new URL(String(u)).pathname === "/api/canvas-agent/ack" && refused < 2) {
        refused++;
        return Promise.resolve(notYetForbidden());
      }
      return fetch(u, init);
    },
  });
  const errors = [];
  const live = flaky.live(id, {
    clientId: "host-403",
    hooks: {
      screenshot: async (req) => ({ dataUrl: PNG, bounds: req.bounds, viewport: { x: 0, y: 0, w: 100, h: 100 }, selection: [], docVersion: "0" }),
      setViewport: () => {},
    },
  });
  live.on("error", (e) => errors.push(e));
  try {
    await live.ready;
    await waitFor(() => live.isHost, "elected");
    const run = await c.runAgent({ roomId: id, message: "two notes and a view" });
    let sess;
    await waitFor(async () => ["done", "error", "canceled"].includes((sess = await c.agentSession(run.session_id)).state), "the session to end", 30000);
    assert.equal(sess.state, "done", JSON.stringify(sess));
    assert.equal(refused, 2);
    assert.deepEqual(errors.map((e) => e.status), [403, 403]);
    assert.equal(sess.stats.acks, 3, JSON.stringify(sess.stats));
    assert.equal(sess.stats.resends ?? 0, 0, JSON.stringify(sess.stats)); // zero counts are left out
    assert.equal(sess.stats.acks_missed ?? 0, 0, JSON.stringify(sess.stats));
  } finally {
    live.close();
  }
});
