// LiveCanvas publishes the browser's viewport and selection (hooks.view) to
// every running agent session, against a real canvasd whose model (a local
// OpenAI-compatible server) answers slowly, so that sessions stay running:
// a session started while another runs gets the view too, a publish that
// failed is sent again, and a 403 is retried for a few ticks.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { CanvasClient } from "../dist/index.js";
import { notYetForbidden, startServer, waitFor } from "./harness.js";
import { startFakeOpenAI } from "./fake-openai.js";

let srv, model, c;

// Each model call takes 4 s: the session stays running meanwhile.
const SLOW = { chunks: ['{"actions":[', "]}"], delayMs: 4000 };

before(async () => {
  model = await startFakeOpenAI([SLOW, SLOW, SLOW, SLOW, SLOW, SLOW]);
  srv = await startServer({
    env: {
      CANVAS_STEWARD_MODEL: "openai:gpt-test", OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "sk-test",
      CANVAS_AGENT_LOW_ACTION_THRESHOLD: "0",
    },
  });
  c = new CanvasClient({ baseUrl: srv.url, token: srv.adminToken });
});

after(async () => {
  await srv?.stop();
  await model?.close();
});

const VIEW = { viewport: { x: 11, y: 22, w: 333, h: 444 }, selection: ["picked"] };

/** Waits until the session has VIEW (the server keeps the last view a browser published). */
async function sessionGetsView(sessionId, ms) {
  await waitFor(async () => {
    const s = await c.agentSession(sessionId);
    return JSON.stringify(s.viewport) === JSON.stringify(VIEW.viewport) && JSON.stringify(s.selection) === JSON.stringify(VIEW.selection);
  }, `session ${sessionId} to get the view`, ms);
}

test("a session started while another runs gets the view", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "views" });
  const live = c.live(id, { hooks: { view: () => VIEW } });
  try {
    await live.ready;
    const one = await c.runAgent({ roomId: id, message: "first" });
    await sessionGetsView(one.session_id, 3000);
    const two = await c.runAgent({ roomId: id, message: "second" });
    await waitFor(() => live.runningSessions.includes(two.session_id), "the second session running");
    assert.ok(live.runningSessions.includes(one.session_id), "the first session still runs");
    await sessionGetsView(two.session_id, 2000);
  } finally {
    live.close();
  }
});

test("a view whose publication failed is sent again", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "views" });
  let failed = 0;
  const flaky = new CanvasClient({
    baseUrl: srv.url, token: srv.adminToken, retries: 0,
    fetch: (u, init) => {
      if (new URL(String(u)).pathname === "/api/canvas-agent/view" && failed < 1) {
        failed++;
        return Promise.reject(new TypeError("fetch failed"));
      }
      return fetch(u, init);
    },
  });
  const live = flaky.live(id, { hooks: { view: () => VIEW } });
  const errors = [];
  live.on("error", (e) => errors.push(e));
  try {
    await live.ready;
    const run = await c.runAgent({ roomId: id, message: "first" });
    await sessionGetsView(run.session_id, 3000);
    assert.equal(failed, 1);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].status, 0);
  } finally {
    live.close();
  }
});

/**
 * Follows canvas id with hooks.view reading view.current, through a client
 * that counts its view publications (counter.posts) and answers those for
 * which forbid(n) is true (n: the publication's number, from 1) with a 403
 * itself.
 */
function viewingBrowser(id, view, forbid = () => false) {
  const counter = { posts: 0, errors: [] };
  const counting = new CanvasClient({
    baseUrl: srv.url, token: srv.adminToken,
    fetch: (u, init) => {
      if (new URL(String(u)).pathname === "/api/canvas-agent/view" && forbid(++counter.posts)) return Promise.resolve(notYetForbidden());
      return fetch(u, init);
    },
  });
  counter.live = counting.live(id, { hooks: { view: () => view.current } });
  counter.live.on("error", (e) => counter.errors.push(e));
  return counter;
}

/** Relays the status of a session the server does not know, as a standalone agent worker would: browsers see it running. */
async function relayUnknownSession(id) {
  const { token: service } = await c.createToken({ role: "editor", actor_type: "service" });
  const res = await fetch(`${srv.url}/api/canvas-agent/events`, {
    method: "POST", headers: { Authorization: "Bearer " + service, "Content-Type": "application/json" },
    body: JSON.stringify({ canvas_id: id, event: "agent:status", data: { sessionId: "as_unknown", state: "calling_model" } }),
  });
  assert.equal(res.status, 202);
}

test("a view the server refuses (no such session) is sent again only once it changes", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "views" });
  const view = { current: VIEW };
  const b = viewingBrowser(id, view);
  try {
    await b.live.ready;
    await relayUnknownSession(id);
    await waitFor(() => b.errors.length === 1, "the refused view");
    assert.equal(b.errors[0].status, 404);
    await new Promise((r) => setTimeout(r, 400)); // five ticks of the view timer
    assert.equal(b.posts, 1);
    view.current = { ...VIEW, selection: [] };
    await waitFor(() => b.posts === 2, "the changed view sent");
  } finally {
    b.live.close();
  }
});

test("a view refused with 403 is sent again at the next ticks, then only once it changes", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "views" });
  // The first two publications meet a server that does not know this
  // browser yet; from the fourth on, every one does.
  const view = { current: VIEW };
  const b = viewingBrowser(id, view, (n) => n <= 2 || n >= 4);
  try {
    await b.live.ready;
    await relayUnknownSession(id);
    // Two 403s, then the server's own answer (404: it runs no such session) ends the retries.
    await waitFor(() => b.errors.length === 3, "two 403s and the server's answer");
    assert.deepEqual(b.errors.map((e) => e.status), [403, 403, 404]);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(b.posts, 3);
    // A 403 that lasts: five more publications, then none until the view changes.
    view.current = { ...VIEW, selection: ["x"] };
    await waitFor(() => b.posts === 9, "the first 403 and five more");
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(b.posts, 9);
    view.current = { ...VIEW, selection: [] };
    await waitFor(() => b.posts === 10, "the changed view sent");
  } finally {
    b.live.close();
  }
});
