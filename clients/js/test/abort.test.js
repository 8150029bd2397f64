// Cancelling and closing, against a real canvasd: a command whose signal is
// aborted (before the call, or while onConflict re-plans) is never sent; a
// stream leaves no listener on the caller's signal once it ends; close()
// stops the events already received; LiveCanvas.close() ends its backoff at
// once; invoke waits as long as its timeout_ms asks, beyond the client's
// per-request timeout.

import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { spawn } from "node:child_process";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { CanvasClient } from "../dist/index.js";
import { serverForTests, waitFor, pkgDir } from "./harness.js";

const env = serverForTests();

async function newCanvas() {
  return (await env.c.createCanvas({ title: "js abort test" })).canvas_id;
}

/** A client on the server that counts the requests it sends, by "METHOD pathname". */
function countingClient(opts = {}) {
  const sent = [];
  const client = new CanvasClient({
    baseUrl: env.srv.url, token: env.srv.adminToken, ...opts,
    fetch: (u, init) => {
      sent.push(`${init?.method ?? "GET"} ${new URL(String(u)).pathname}`);
      return fetch(u, init);
    },
  });
  return { client, sent };
}

const shapes = (n) => Array.from({ length: n }, (_, i) => ({ type: "create_shape", args: { type: "geo", x: i * 20, y: 0 } }));

test("a command or batch whose signal is already aborted is not sent", async () => {
  const id = await newCanvas();
  const { client, sent } = countingClient();
  const ctl = new AbortController();
  const reason = new Error("cancelled by the caller");
  ctl.abort(reason);
  await assert.rejects(client.applyResult(id, "create_shape", { type: "geo", x: 0, y: 0 }, { baseRev: 0, signal: ctl.signal }), (err) => err === reason);
  await assert.rejects(client.applyBatch(id, shapes(2), { baseRev: 0, signal: ctl.signal }), (err) => err === reason);
  assert.deepEqual(sent, []);
  assert.equal((await env.c.getState(id)).head_rev, 0);
});

test("a command cancelled while onConflict re-plans is not sent", async () => {
  const id = await newCanvas();
  await env.c.apply(id, "create_shape", { id: "s", type: "geo", x: 0, y: 0, w: 10, h: 10 }, { baseRev: 0 });
  await env.c.apply(id, "update_shape", { id: "s", x: 100 }, { baseRev: 1 });
  const { client, sent } = countingClient();
  const ctl = new AbortController();
  const reason = new Error("the user navigated away");
  await assert.rejects(client.applyResult(id, "update_shape", { id: "s", x: 200 }, {
    baseRev: 1, signal: ctl.signal,
    onConflict: async () => {
      await new Promise((r) => setTimeout(r, 20));
      ctl.abort(reason);
      return { type: "update_shape", args: { id: "s", y: 7 } };
    },
  }), (err) => err === reason);
  const path = `/canvas_commands/${id}/command`;
  assert.deepEqual(sent.filter((s) => s === "POST " + path), ["POST " + path]); // the first attempt only
  const s = await env.c.getState(id);
  assert.equal(s.head_rev, 2);
  assert.equal(s.state.nodes[0].y, 0);
});

test("a stream removes its listener from the caller's signal when it ends", async () => {
  const id = await newCanvas();
  const ctl = new AbortController();
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on("warning", onWarning);
  try {
    for (let i = 0; i < 12; i++) {
      for await (const ev of env.c.stream(id, { signal: ctl.signal })) if (ev.event === "caught_up") break; // the consumer leaves
    }
    const closed = env.c.stream(id, { signal: ctl.signal });
    const it = closed[Symbol.asyncIterator]();
    assert.equal((await it.next()).value.event, "caught_up");
    closed.close(); // closed while suspended
    assert.equal((await it.next()).done, true);
    env.c.stream(id, { signal: ctl.signal }).close(); // closed before it was read
    const refused = new CanvasClient({ baseUrl: env.srv.url, token: "wrong" }).stream(id, { signal: ctl.signal });
    await assert.rejects((async () => { for await (const _ of refused); })(), (err) => err.status === 401); // ends with an error
    assert.equal(getEventListeners(ctl.signal, "abort").length, 0);
    await new Promise((r) => setTimeout(r, 10)); // warnings are emitted on a later tick
    assert.deepEqual(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map(String), []);
  } finally {
    process.off("warning", onWarning);
  }
});

test("close() stops the events already received in the same chunk", async () => {
  const id = await newCanvas();
  await env.c.applyBatch(id, shapes(5), { baseRev: 0 });
  const s = env.c.stream(id, { lastEventId: "0" }); // the replay of 5 commits arrives as one write
  const got = [];
  for await (const ev of s) {
    got.push(ev.event === "canvas_commit" ? ev.data.rev : ev.event);
    s.close();
  }
  assert.deepEqual(got, [1]);
});

test("a LiveCanvas closed from a listener applies and emits nothing more", async () => {
  const id2 = await newCanvas();
  let armed = true;
  const lc = new CanvasClient({
    baseUrl: env.srv.url, token: env.srv.adminToken,
    fetch: async (u, init) => {
      if (armed && String(u).includes("/sse/canvas/")) {
        armed = false; // commits made after the snapshot read: the stream replays them in one write
        await env.c.applyBatch(id2, shapes(5), { baseRev: 0 });
      }
      return fetch(u, init);
    },
  });
  const live = lc.live(id2);
  const commits = [];
  const states = [];
  live.on("state", (_m, cm) => states.push(cm?.rev ?? null));
  live.on("commit", (cm) => {
    commits.push(cm.rev);
    live.close();
  });
  await waitFor(() => commits.length > 0, "the first commit");
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(commits, [1]);
  assert.deepEqual(states, [null, 1]);
  assert.equal(live.model.rev, 1);
});

test("LiveCanvas.close() ends the backoff after a failure at once", { timeout: 60_000 }, async () => {
  // A child process follows a canvas that does not exist (each snapshot read
  // is a 404, so LiveCanvas backs off longer and longer) and closes it on the
  // third error. Right after close() it lists the timers still holding the
  // process: a backoff left running is one (a Timeout), and would keep the
  // process alive for a second or more.
  const script = `
    const { CanvasClient } = await import(${JSON.stringify(pathToFileURL(join(pkgDir, "dist/index.js")).href)});
    const c = new CanvasClient({ baseUrl: ${JSON.stringify(env.srv.url)}, token: ${JSON.stringify(env.srv.adminToken)} });
    const live = c.live("no-such-canvas");
    let errors = 0, timers = -1;
    live.on("error", () => {
      if (++errors === 3) {
        live.close();
        setImmediate(() => (timers = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length));
      }
    });
    process.on("exit", () => console.log(JSON.stringify({ errors, timers })));
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (b) => (out += b));
  const code = await new Promise((r) => child.on("exit", r));
  assert.equal(code, 0);
  const { errors, timers } = JSON.parse(out);
  assert.equal(errors, 3);
  assert.equal(timers, 0, "timers left running after close()");
});

test("a stream closed while its reader holds an event leaves no timer behind", { timeout: 60_000 }, async () => {
  // A child process reads a stream by hand up to caught_up, then closes it
  // without asking for the next event (the stream waits at that event), and
  // lists the timers still holding the process. The idle timer (45 s) once
  // stayed, and kept the program (and this test suite's files) alive.
  const id = await newCanvas();
  const script = `
    const { CanvasClient } = await import(${JSON.stringify(pathToFileURL(join(pkgDir, "dist/index.js")).href)});
    const c = new CanvasClient({ baseUrl: ${JSON.stringify(env.srv.url)}, token: ${JSON.stringify(env.srv.adminToken)} });
    const s = c.stream(${JSON.stringify(id)});
    const it = s[Symbol.asyncIterator]();
    let ev, timers = -1;
    do ev = (await it.next()).value; while (ev.event !== "caught_up");
    s.close();
    setImmediate(() => (timers = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length));
    process.on("exit", () => console.log(JSON.stringify({ last: ev.event, timers })));
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (b) => (out += b));
  const code = await new Promise((r) => child.on("exit", r));
  assert.equal(code, 0);
  const { last, timers } = JSON.parse(out);
  assert.equal(last, "caught_up");
  assert.equal(timers, 0, "timers left running after close()");
});

test("invoke waits up to its timeout_ms, beyond the client's per-request timeout", async () => {
  const id = await newCanvas();
  const live = env.c.live(id);
  await live.ready;
  live.handle("slow", async (payload) => {
    await new Promise((r) => setTimeout(r, 800));
    return { late: payload };
  });
  const short = new CanvasClient({ baseUrl: env.srv.url, token: env.srv.adminToken, timeoutMs: 300 });
  try {
    assert.deepEqual(await short.invoke({ canvas_id: id, action: "slow", payload: 1, timeout_ms: 5000 }), { ok: true, result: { late: 1 } });
  } finally {
    live.close();
  }
});
