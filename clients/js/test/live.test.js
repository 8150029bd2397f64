// LiveCanvas's envelope rules, from a scripted server: envelopes are handled
// in seq order (a seq at or below the last one of its session is ignored,
// and acked again if it was applied: it is a resend), duplicate action ids
// are dropped, set_viewport reaches the hook only on the host, and complete
// envelopes applied are acked with the client id (one out of order, or
// whose set_viewport did not reach the hook, is not).

import { test } from "node:test";
import assert from "node:assert/strict";
import { CanvasClient } from "../dist/index.js";
import { waitFor } from "./harness.js";

function sse(events) {
  return events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join("");
}

const env = (seq, actions, partial = false) => ({ v: "tldraw-actions/1", sessionId: "as_1", seq, partial, actions, ts: 1000 + seq });
const act = (id, name = "create_shape", params = {}) => ({ id, name, params });

test("envelopes in seq order, duplicates ignored, acks sent, set_viewport only on the host", async () => {
  const acks = [];
  const streamUrls = [];
  let streamBody = "";
  const fetch = async (url, init) => {
    const u = new URL(url);
    if (u.pathname.startsWith("/canvas_commands/snapshot/")) {
      return Response.json({ canvas_id: "c1", head_rev: 0, head_event_id: "0", state: { nodes: [], edges: [] } });
    }
    if (u.pathname === "/api/canvas-agent/ack") {
      acks.push(JSON.parse(init.body));
      return Response.json({ ok: true }, { status: 202 });
    }
    if (u.pathname.startsWith("/sse/canvas/")) {
      streamUrls.push(u);
      if (streamUrls.length > 1) return new Promise(() => {}); // no second connection needed
      return new Response(streamBody, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    }
    return new Response("{}", { status: 404 });
  };
  streamBody = sse([
    ["caught_up", { head_rev: 0 }],
    ["agent:host", { canvas_id: "c1", host_client_id: "me" }],
    ["agent:action", env(1, [act("a1")], true)], // a preview
    ["agent:action", env(2, [act("a1"), act("a2")])],
    ["agent:action", env(2, [act("a1"), act("a2")])], // resent: ignored, acked again
    ["agent:action", env(4, [act("a2"), act("a3"), act("v", "set_viewport", { x: 1, y: 2, w: 3, h: 4 })])],
    ["agent:action", env(3, [act("a9")])], // lower seq never applied: ignored, not acked (it was not applied)
    ["agent:action", env(4, [act("a2"), act("a3"), act("v", "set_viewport", { x: 1, y: 2, w: 3, h: 4 })])], // resent: acked again
    ["agent:host", { canvas_id: "c1", host_client_id: "other" }],
    ["agent:action", env(5, [act("v2", "set_viewport", { x: 5, y: 6, w: 7, h: 8 })])], // not host any more: not applied, not acked
    ["agent:status", { sessionId: "as_1", state: "done" }],
  ]);
  const c = new CanvasClient({ baseUrl: "http://canvasd.test", token: "t", fetch });
  const viewports = [];
  const applied = [];
  const previews = [];
  const hosts = [];
  const live = c.live("c1", { clientId: "me", hooks: { setViewport: (b) => viewports.push(b), screenshot: async () => ({}) } });
  live.on("agent:action", ({ actions }) => applied.push(...actions.map((a) => a.id)));
  live.on("agent:preview", (e) => previews.push(e.seq));
  live.on("host", (id, isHost) => hosts.push([id, isHost]));
  const statuses = [];
  live.on("agent:status", (s) => statuses.push(s.state)); // the last event: every ack was sent before it
  await waitFor(() => acks.length >= 4 && hosts.length === 2 && statuses.length === 1, "the acks");
  live.close();
  assert.equal(streamUrls[0].searchParams.get("client_id"), "me");
  assert.equal(streamUrls[0].searchParams.get("capabilities"), "screenshot,viewport");
  assert.deepEqual(previews, [1]);
  assert.deepEqual(applied, ["a1", "a2", "a3", "v", "v2"]);
  assert.deepEqual(viewports, [{ x: 1, y: 2, w: 3, h: 4 }]);
  assert.deepEqual(hosts, [["me", true], ["other", false]]);
  assert.deepEqual(acks.map((a) => [a.sessionId, a.seq, a.clientId]), [["as_1", 2, "me"], ["as_1", 2, "me"], ["as_1", 4, "me"], ["as_1", 4, "me"]]);
  assert.ok(acks.every((a) => typeof a.appliedAt === "number"));
});
