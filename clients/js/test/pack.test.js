// `npm pack` gives a package that installs into a fresh project and imports
// with its types.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pkgDir } from "./harness.js";

test("npm pack installs and imports", () => {
  const dir = mkdtempSync(join(tmpdir(), "canvasd-pack-"));
  try {
    const out = execFileSync("npm", ["pack", "--json", "--pack-destination", dir], { cwd: pkgDir, encoding: "utf8" });
    const [info] = JSON.parse(out);
    const files = info.files.map((f) => f.path);
    assert.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts"), files.join(", "));
    assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("test/")), files.join(", "));
    const app = join(dir, "app");
    execFileSync("mkdir", ["-p", app]);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", type: "module", private: true }));
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--offline", join(dir, info.filename)], { cwd: app, stdio: "pipe" });
    writeFileSync(join(app, "main.js"), `import { CanvasClient, ConflictError, LiveCanvas, CanvasModel } from "@canvasd/client";
const c = new CanvasClient({ baseUrl: "http://127.0.0.1:1", token: "t" });
console.log(typeof c.apply, typeof c.stream, typeof ConflictError, typeof LiveCanvas, typeof CanvasModel);`);
    const printed = execFileSync("node", ["main.js"], { cwd: app, encoding: "utf8" }).trim();
    assert.equal(printed, "function function function function function");
    const types = join(app, "node_modules/@canvasd/client/dist/index.d.ts");
    assert.ok(existsSync(types));
    assert.match(readFileSync(types, "utf8"), /CanvasClient/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
