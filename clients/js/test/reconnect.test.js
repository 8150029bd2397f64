// Reconnecting through server misbehaviour canvasd itself never shows, from
// a small local HTTP server: a stream retries every refused connect but
// 400/401/403/404, keeps the last `retry:` the server sent, and waits a
// growing delay when every connect is answered with reset; LiveCanvas backs
// off more and more on a failure that keeps coming back after caught_up
// (a revision gap), and starts over once the stream stayed healthy.

import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { CanvasClient } from "../dist/index.js";
import { waitFor } from "./harness.js";

/**
 * Starts a local server: every request goes to handler(req, res, url), and
 * the stream connects (GET /sse/canvas/...) are recorded with their time.
 * Resolves to {url, connects, close()}.
 */
async function local(handler) {
  const connects = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://local");
    if (url.pathname.startsWith("/sse/canvas/")) connects.push(Date.now());
    handler(req, res, url);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    connects,
    close: () => new Promise((r) => {
      server.closeAllConnections();
      server.close(r);
    }),
  };
}

/** Starts an event stream on res. */
function openStream(res) {
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
}

/** One SSE frame. */
function frame(event, data, id) {
  return (id !== undefined ? `id: ${id}\n` : "") + `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function problem(res, status) {
  res.writeHead(status, { "Content-Type": "application/problem+json" });
  res.end(JSON.stringify({ type: "about:blank", title: http.STATUS_CODES[status], status, detail: `answered ${status}` }));
}

const gaps = (times) => times.slice(1).map((t, i) => t - times[i]);

test("a stream reconnects after a 500, 408 or 429 without Retry-After; 400, 401, 403 and 404 end it at once", async () => {
  let statuses = [500, 408, 429, 200];
  const srv = await local((req, res) => {
    const st = statuses.shift() ?? 200;
    if (st !== 200) return problem(res, st);
    openStream(res);
    res.write(frame("caught_up", { head_rev: 0 }));
  });
  try {
    const c = new CanvasClient({ baseUrl: srv.url, token: "t" });
    const states = [];
    const s = c.stream("c1", { reconnectDelayMs: 10, onConnection: (st) => states.push(st) });
    for await (const ev of s) if (ev.event === "caught_up") break;
    assert.deepEqual(states, ["reconnecting", "reconnecting", "reconnecting", "open"]);
    assert.equal(s.connects, 4);
    for (const fatal of [400, 401, 403, 404]) {
      statuses = [fatal, 200];
      const before = srv.connects.length;
      const f = c.stream("c1", { reconnectDelayMs: 10 });
      await assert.rejects((async () => { for await (const _ of f); })(), (err) => err.status === fatal && err.problem?.status === fatal);
      assert.equal(srv.connects.length - before, 1, `reconnected after ${fatal}`);
    }
  } finally {
    await srv.close();
  }
});

test("the stream keeps the last retry: the server sent, also across a connection that ended badly or sent none", async () => {
  let n = 0;
  const srv = await local((req, res) => {
    openStream(res);
    switch (n++) {
      case 0: // sets retry, then the connection breaks
        res.write("retry: 1500\n\n" + frame("caught_up", { head_rev: 0 }));
        setTimeout(() => res.destroy(), 20);
        break;
      case 1: // no retry field; ends cleanly
        res.end(frame("caught_up", { head_rev: 0 }));
        break;
      default:
        res.write(frame("caught_up", { head_rev: 0 }));
    }
  });
  try {
    const c = new CanvasClient({ baseUrl: srv.url, token: "t" });
    const s = c.stream("c1", { reconnectDelayMs: 10 });
    let caughtUp = 0;
    for await (const ev of s) if (ev.event === "caught_up" && ++caughtUp === 3) break;
    const [first, second] = gaps(srv.connects);
    // The first delay is the server's 1500 ms with jitter (750..1500 ms), not the option's 10 ms.
    assert.ok(first >= 700, `reconnected ${first} ms after a connection that set retry: 1500 and broke`);
    assert.ok(second >= 700, `reconnected ${second} ms after a connection without retry:`);
  } finally {
    await srv.close();
  }
});

test("retry: 0 from the server keeps the option's delay (no reconnect loop)", async () => {
  const srv = await local((req, res) => {
    openStream(res);
    res.end("retry: 0\n\n" + frame("caught_up", { head_rev: 0 }));
  });
  try {
    const c = new CanvasClient({ baseUrl: srv.url, token: "t" });
    const s = c.stream("c1", { reconnectDelayMs: 300 });
    let caughtUp = 0;
    for await (const ev of s) if (ev.event === "caught_up" && ++caughtUp === 3) break;
    for (const gap of gaps(srv.connects)) assert.ok(gap >= 140, `reconnected ${gap} ms after retry: 0 (the option says 300 ms, with jitter at least 150)`);
  } finally {
    await srv.close();
  }
});

test("a server answering every connect with reset is reconnected to with a growing delay", async () => {
  const srv = await local((req, res) => {
    openStream(res);
    res.end(frame("reset", { head_rev: 7, reason: "cannot resume" }));
  });
  try {
    const c = new CanvasClient({ baseUrl: srv.url, token: "t" });
    const delays = [];
    const s = c.stream("c1", { reconnectDelayMs: 50, maxReconnectDelayMs: 5000, onBackoff: (d, after) => delays.push([d, after]) });
    let resets = 0;
    for await (const ev of s) {
      assert.equal(ev.event, "reset");
      assert.equal(s.lastEventId, "7");
      if (++resets === 6) break;
    }
    // The first reset reconnects at once; then 25..50, 50..100, 100..200, 200..400 ms (the
    // delays the stream chose, not the wall clock's gaps, which a loaded machine stretches).
    assert.equal(srv.connects.length, 6);
    assert.deepEqual(delays.map(([, after]) => after), ["reset", "reset", "reset", "reset"], `backoffs ${JSON.stringify(delays)} after 6 resets`);
    delays.forEach(([d], i) => assert.ok(d >= 25 * 2 ** i && d <= 50 * 2 ** i, `backoff ${i + 1} after a reset: ${d} ms, want ${25 * 2 ** i}..${50 * 2 ** i}`));
    const g = gaps(srv.connects);
    delays.forEach(([d], i) => assert.ok(g[i + 1] >= d - 5, `reconnected ${g[i + 1]} ms after a reset, before its backoff of ${d} ms`));
  } finally {
    await srv.close();
  }
});

const snapshot = { canvas_id: "c1", head_rev: 1, head_event_id: "1-a", state: { nodes: [], edges: [] } };
const gapCommit = { rev: 3, event_id: "3-c", canvas_id: "c1", cmd_id: "x", type: "create_shape", actor_id: "a", changes: [] };

test("LiveCanvas backs off more and more when a revision gap follows every caught_up", async () => {
  const loads = [];
  const srv = await local((req, res, url) => {
    if (url.pathname.startsWith("/canvas_commands/snapshot/")) {
      loads.push(Date.now());
      return res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(snapshot));
    }
    if (url.pathname.startsWith("/sse/canvas/")) {
      openStream(res);
      return res.write(frame("caught_up", { head_rev: 1 }) + frame("canvas_commit", gapCommit, gapCommit.event_id));
    }
    problem(res, 404);
  });
  const c = new CanvasClient({ baseUrl: srv.url, token: "t" });
  const live = c.live("c1");
  let errors = 0;
  const backoffs = [];
  live.on("error", () => errors++);
  live.on("backoff", (d) => backoffs.push(d));
  try {
    await waitFor(() => backoffs.length >= 4, "four backoffs", 15000);
  } finally {
    live.close();
    await srv.close();
  }
  // The delays it chose (not the wall clock's gaps, which a loaded machine stretches):
  // 250..500, 500..1000, 1000..2000, 2000..4000 ms.
  backoffs.slice(0, 4).forEach((d, i) => assert.ok(d >= 250 * 2 ** i && d <= 500 * 2 ** i, `backoff ${i + 1}: ${d} ms, want ${250 * 2 ** i}..${500 * 2 ** i}`));
  assert.ok(errors >= 4, `${errors} errors for ${backoffs.length} backoffs`);
  const g = gaps(loads);
  g.slice(1, 4).forEach((gap, i) => assert.ok(gap >= backoffs[i] - 5, `read again ${gap} ms after a failure, before its backoff of ${backoffs[i]} ms`));
});

test("LiveCanvas starts its backoff over once the stream stayed caught up for 5 s", async () => {
  const loads = [];
  let failedAt = 0;
  let n = 0;
  const srv = await local((req, res, url) => {
    if (url.pathname.startsWith("/canvas_commands/snapshot/")) {
      loads.push(Date.now());
      return res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(snapshot));
    }
    if (url.pathname.startsWith("/sse/canvas/")) {
      openStream(res);
      res.write(frame("caught_up", { head_rev: 1 }));
      // Two failures at once (backoff 250..500, then 500..1000 ms), then a healthy 5.5 s before the next.
      const after = n++ < 2 ? 0 : 5500;
      const t = setTimeout(() => {
        failedAt = Date.now();
        res.write(frame("canvas_commit", gapCommit, gapCommit.event_id));
      }, after);
      res.on("close", () => clearTimeout(t));
      return;
    }
    problem(res, 404);
  });
  const c = new CanvasClient({ baseUrl: srv.url, token: "t" });
  const live = c.live("c1");
  const backoffs = [];
  live.on("backoff", (d) => backoffs.push(d));
  try {
    await waitFor(() => backoffs.length >= 3, "the third backoff", 15000);
  } finally {
    live.close();
    await srv.close();
  }
  // 250..500 and 500..1000 ms after the two failures at once; without the restart the third
  // (after 5.5 s of health) would wait 1000..2000 ms, with it 250..500 again.
  assert.ok(backoffs[1] >= 500, `the second backoff: ${backoffs[1]} ms`);
  assert.ok(backoffs[2] <= 500, `backed off ${backoffs[2]} ms after a failure that followed 5.5 s of health (failed at ${failedAt})`);
});
