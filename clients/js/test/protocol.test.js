// The agent's browser protocol end to end: two Chromium pages (LiveCanvas
// with screenshot, setViewport and view hooks) and a plain SSE subscriber
// (declares nothing, like curl) on one canvas, an agent run against an
// OpenAI-compatible streaming model (a local server speaking the protocol).
// The first page is elected host; the screenshot the model gets comes from
// it; only its view follows set_viewport; acks are counted; the first
// complete action reaches the plain subscriber within 200 ms of the model's
// first token.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { CanvasClient } from "../dist/index.js";
import { startServer, waitFor } from "./harness.js";
import { launchChromium, startSite, openClientPage } from "./browser.js";
import { notesAndViewportReply, startFakeOpenAI, imagesOf } from "./fake-openai.js";

let srv, site, browser, model, c;

// The first delta holds a complete action; the rest follows 300 ms apart.
const REPLY = notesAndViewportReply(300);

before(async () => {
  model = await startFakeOpenAI([REPLY]);
  srv = await startServer({
    env: {
      CANVAS_STEWARD_MODEL: "openai:gpt-test", OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "sk-test",
      CANVAS_AGENT_LOW_ACTION_THRESHOLD: "0",
    },
  });
  site = await startSite(srv.url);
  browser = await launchChromium();
  c = new CanvasClient({ baseUrl: srv.url, token: srv.adminToken });
});

after(async () => {
  await browser?.close();
  await site?.close();
  await srv?.stop();
  await model?.close();
});

/** A plain SSE subscriber (no client_id), reading raw lines like curl -N. */
function plainSubscriber(canvasId) {
  const events = [];
  const req = http.get(`${srv.url}/sse/canvas/${canvasId}`, { headers: { Authorization: "Bearer " + srv.adminToken } }, (res) => {
    let buf = "";
    let ev = {};
    res.setEncoding("utf8");
    res.on("data", (s) => {
      buf += s;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line === "") {
          if (ev.event) events.push({ ...ev, at: Date.now() });
          ev = {};
        } else if (line.startsWith("event: ")) ev.event = line.slice(7);
        else if (line.startsWith("data: ")) ev.data = JSON.parse(line.slice(6));
      }
    });
  });
  req.on("error", () => {});
  return { events, close: () => req.destroy() };
}

/** Opens a page following canvasId as a browser with all three hooks; color tells its screenshots apart. */
async function browserPage(canvasId, color) {
  const page = await openClientPage(browser, site);
  await page.evaluate(async ({ canvasId, token, color }) => {
    const { CanvasClient } = window.canvasdClient;
    const cv = document.getElementById("c");
    const g = cv.getContext("2d");
    g.fillStyle = color;
    g.fillRect(0, 0, cv.width, cv.height);
    window.shot = cv.toDataURL("image/png");
    window.shots = 0;
    window.viewports = [];
    window.actions = [];
    window.vp = { x: 0, y: 0, w: 1280, h: 720 };
    const c = new CanvasClient({ baseUrl: "", token });
    const live = c.live(canvasId, {
      hooks: {
        screenshot: async (req) => {
          window.shots++;
          return { dataUrl: window.shot, bounds: req.bounds, viewport: window.vp, selection: [], docVersion: String(live.model.rev) };
        },
        setViewport: (box) => {
          window.viewports.push(box);
          window.vp = box; // the UI pans and zooms there
        },
        view: () => ({ viewport: window.vp, selection: [] }),
      },
    });
    live.on("agent:action", ({ actions }) => window.actions.push(...actions.map((a) => a.name)));
    window.live = live;
    await live.ready;
  }, { canvasId, token: srv.adminToken, color });
  return page;
}

test("two browsers and a plain subscriber: host elected, screenshot and set_viewport from/to the host only, acks counted, time to first action", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "protocol" });
  const plain = plainSubscriber(id);
  const first = await browserPage(id, "#e03131");
  await first.waitForFunction(() => window.live.isHost);
  const second = await browserPage(id, "#4465e9");
  const hostId = await first.evaluate(() => window.live.clientId);
  await second.waitForFunction((h) => window.live.hostId === h && !window.live.isHost, hostId);
  await waitFor(() => plain.events.some((e) => e.event === "caught_up"), "the plain subscriber caught up");

  const run = await c.runAgent({ roomId: id, message: "two notes and a view" });
  let sess;
  await waitFor(async () => ["done", "error", "canceled"].includes((sess = await c.agentSession(run.session_id)).state), "the session to end", 30000);
  assert.equal(sess.state, "done", JSON.stringify(sess));
  const list = await c.agentSessions(id);
  assert.equal(list.canvas_id, id);
  assert.deepEqual(list.sessions.map((s) => s.session_id), [run.session_id], "the canvas's sessions list the run");
  assert.equal(list.sessions[0].state, "done");

  // The screenshot came from the host (the first page's red picture), and only the host was asked.
  const hostShot = await first.evaluate(() => window.shot);
  assert.deepEqual(imagesOf(model.requests[0]), [hostShot]);
  assert.equal(await first.evaluate(() => window.shots), 1);
  assert.equal(await second.evaluate(() => window.shots), 0);
  // Only the host's view followed set_viewport.
  assert.deepEqual(await first.evaluate(() => window.viewports), [{ x: 100, y: 50, w: 800, h: 600 }]);
  assert.deepEqual(await second.evaluate(() => window.viewports), []);
  // Both pages applied both notes once.
  for (const p of [first, second]) assert.deepEqual((await p.evaluate(() => window.actions)).filter((n) => n === "create_shape"), ["create_shape", "create_shape"]);
  // Acks: both browsers acked what they applied; the host acked everything sent to it.
  assert.ok(sess.stats.acks >= 4, JSON.stringify(sess.stats));
  assert.equal(sess.stats.acks_missed ?? 0, 0);
  assert.equal(sess.stats.resends ?? 0, 0);
  assert.ok(sess.stats.screenshot_ms > 0);

  // The plain subscriber got the envelopes, never a screenshot request or set_viewport.
  const names = plain.events.map((e) => e.event);
  assert.ok(!names.includes("invoke") && !names.includes("agent:screenshot_request"), names.join(","));
  const envs = plain.events.filter((e) => e.event === "agent:action" && !e.data.partial);
  assert.ok(envs.length >= 2);
  assert.ok(!envs.some((e) => e.data.actions.some((a) => a.name === "set_viewport")));
  // Time to first action: the model's first token → the first complete envelope on the plain stream.
  const ttfa = envs[0].at - model.firstTokenAt[0];
  console.log(`# time to first action after the model's first token: ${ttfa} ms; screenshot ${sess.stats.screenshot_ms} ms; acks ${sess.stats.acks}`);
  assert.ok(ttfa >= 0 && ttfa <= 200, `time to first action ${ttfa} ms after the first token`);
  plain.close();

  // The host leaves: the second page is elected.
  await first.close();
  await second.waitForFunction(() => window.live.isHost, null, { timeout: 5000 });
  await second.close();
});
