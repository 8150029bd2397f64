// The client in Chromium: REST, the fetch-based stream (Authorization
// header), LiveCanvas and invoke answers, from a real page.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { CanvasClient } from "../dist/index.js";
import { startServer } from "./harness.js";
import { launchChromium, startSite, openClientPage } from "./browser.js";

let srv, site, browser, c;

before(async () => {
  srv = await startServer();
  site = await startSite(srv.url);
  browser = await launchChromium();
  c = new CanvasClient({ baseUrl: srv.url, token: srv.adminToken });
});

after(async () => {
  await browser?.close();
  await site?.close();
  await srv?.stop();
});

test("a page applies commands, follows the canvas live and answers invokes", async () => {
  const { canvas_id: id } = await c.createCanvas({ title: "chromium" });
  const page = await openClientPage(browser, site);
  const streamUrls = [];
  page.on("request", (r) => {
    if (r.url().includes("/sse/canvas/")) streamUrls.push([r.url(), r.headers()["authorization"]]);
  });
  await page.evaluate(async ({ id, token }) => {
    const { CanvasClient } = window.canvasdClient;
    const c = new CanvasClient({ baseUrl: "", token });
    window.live = c.live(id);
    window.live.handle("echo", (p) => ({ echoed: p }));
    await window.live.ready;
    await window.live.apply("create_shape", { id: "p1", type: "note", x: 1, y: 2, props: { text: "from the page" } });
  }, { id, token: srv.adminToken });
  const snap = await c.getState(id);
  assert.equal(snap.state.nodes[0].props.text, "from the page");
  await c.apply(id, "update_shape", { id: "p1", x: 40 });
  await page.waitForFunction(() => window.live.model.rev === 2 && window.live.model.nodes.get("p1").x === 40);
  const ans = await c.invoke({ canvas_id: id, action: "echo", payload: [1, 2], timeout_ms: 10000 });
  assert.deepEqual(ans, { ok: true, result: { echoed: [1, 2] } });
  assert.ok(streamUrls.length >= 1);
  assert.ok(!streamUrls[0][0].includes("access_token"));
  assert.equal(streamUrls[0][1], "Bearer " + srv.adminToken);
  await page.close();
});
