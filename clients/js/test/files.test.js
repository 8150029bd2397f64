// exportCanvas and importFile against a real canvasd: a JSON Canvas file
// comes back as it went in, a Mermaid chart is laid out and drawn, a bad
// file names its place.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { CanvasError } from "../dist/index.js";
import { serverForTests, repoDir } from "./harness.js";

const env = serverForTests();
const testdata = join(repoDir, "convert", "testdata");

/** The [r, g, b] of pixel (x, y) of a PNG whose rows are unfiltered, as canvasd writes them. */
function pixel(png, x, y) {
  const buf = Buffer.from(png);
  assert.equal(buf.subarray(0, 8).toString("binary"), "\x89PNG\r\n\x1a\n");
  let pos = 8, width = 0, ctype = 0;
  const idat = [];
  while (pos < buf.length) {
    const n = buf.readUInt32BE(pos), kind = buf.subarray(pos + 4, pos + 8).toString("ascii");
    const chunk = buf.subarray(pos + 8, pos + 8 + n);
    if (kind === "IHDR") { width = chunk.readUInt32BE(0); ctype = chunk[9]; }
    if (kind === "IDAT") idat.push(chunk);
    pos += 12 + n;
  }
  const bpp = ctype === 2 ? 3 : 4, raw = inflateSync(Buffer.concat(idat)), stride = 1 + bpp * width;
  assert.equal(raw[y * stride], 0, "an unfiltered row");
  const i = y * stride + 1 + bpp * x;
  return [raw[i], raw[i + 1], raw[i + 2]];
}

test("a JSON Canvas file comes back as it went in", async () => {
  const id = (await env.c.createCanvas({ title: "files" })).canvas_id;
  const file = readFileSync(join(testdata, "jsoncanvas", "every-field.canvas"), "utf8");
  const r = await env.c.importFile(id, file, { format: "jsoncanvas", baseRev: 0, idempotencyKey: "js-import-1" });
  assert.equal(r.rev, 1);
  assert.ok(r.createdIds.includes("edge-2"));
  const again = await env.c.importFile(id, file, { format: "jsoncanvas", baseRev: 0, idempotencyKey: "js-import-1" });
  assert.equal(again.replayed, true);
  const out = await env.c.exportCanvas(id, { format: "jsoncanvas" });
  assert.equal(out.rev, 1);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(out.data)), JSON.parse(file));
});

test("a Mermaid chart is laid out and drawn by the server", async () => {
  const id = (await env.c.createCanvas({ title: "mermaid" })).canvas_id;
  await env.c.importFile(id, "flowchart TD\n  a[Red] --> b[Blue]\n  style a fill:#ff0000,stroke:#ff0000", { format: "mermaid" });
  const png = await env.c.exportCanvas(id, { format: "png", ids: ["a"] });
  assert.equal(png.contentType, "image/png");
  assert.deepEqual(pixel(png.data, 15, 30), [255, 0, 0]);
  const svg = new TextDecoder().decode((await env.c.exportCanvas(id, { format: "svg" })).data);
  assert.match(svg, /^<svg/);
  assert.match(svg, />Blue<\/tspan>/);
  await assert.rejects(env.c.importFile(id, "flowchart TD\n  a -->", { format: "mermaid" }), (err) => {
    assert.ok(err instanceof CanvasError);
    assert.equal(err.status, 422);
    assert.equal(err.problem.field, "body line 2");
    return true;
  });
  await assert.rejects(env.c.exportCanvas(id, { format: "png", scale: 100 }), (err) => err.problem?.field === "scale");
});
