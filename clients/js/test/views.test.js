// LiveCanvas publishes the browser's viewport and selection (hooks.view) to
// every running agent session, against a real canvasd whose model (a local
// OpenAI-compatible server) answers slowly, so that sessions stay running:
// a session started while another runs gets the view too, and a publish
// that failed is sent again.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { CanvasClient } from "../dist/index.js";
import { startServer, waitFor } from "./harness.js";
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

test("a view the server refuses (no such session) is sent again only once it changes", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "views" });
  const { token: service } = await c.createToken({ role: "editor", actor_type: "service" });
  let posts = 0;
  const counting = new CanvasClient({
    baseUrl: srv.url, token: srv.adminToken,
    fetch: (u, init) => {
      if (new URL(String(u)).pathname === "/api/canvas-agent/view") posts++;
      return fetch(u, init);
    },
  });
  let view = VIEW;
  const live = counting.live(id, { hooks: { view: () => view } });
  const errors = [];
  live.on("error", (e) => errors.push(e));
  try {
    await live.ready;
    // A status of a session the server does not know (as a standalone agent worker would relay it).
    const res = await fetch(`${srv.url}/api/canvas-agent/events`, {
      method: "POST", headers: { Authorization: "Bearer " + service, "Content-Type": "application/json" },
      body: JSON.stringify({ canvas_id: id, event: "agent:status", data: { sessionId: "as_unknown", state: "calling_model" } }),
    });
    assert.equal(res.status, 202);
    await waitFor(() => errors.length === 1, "the refused view");
    assert.equal(errors[0].status, 404);
    await new Promise((r) => setTimeout(r, 400)); // five ticks of the view timer
    assert.equal(posts, 1);
    view = { ...VIEW, selection: [] };
    await waitFor(() => posts === 2, "the changed view sent");
  } finally {
    live.close();
  }
});
