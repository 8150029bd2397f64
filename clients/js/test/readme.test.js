// The README's example, run as a user would against a real canvasd: it must
// do what it says and end by itself (its stream loop once never ended).

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pkgDir, serverForTests } from "./harness.js";

const env = serverForTests();

test("the README example runs to its end against a real server", async () => {
  const readme = readFileSync(join(pkgDir, "README.md"), "utf8");
  const block = /```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "the README has a js example");
  const src = block[1]
    .replace(`from "@canvasd/client"`, `from ${JSON.stringify(join(pkgDir, "dist", "index.js"))}`)
    .replace("http://127.0.0.1:8080", env.srv.url);
  assert.notEqual(src, block[1], "the example imports @canvasd/client");
  const dir = mkdtempSync(join(pkgDir, ".readme-"));
  try {
    const file = join(dir, "example.mjs");
    writeFileSync(file, src);
    const { stdout } = await new Promise((resolve, reject) =>
      execFile(process.execPath, [file], { env: { ...process.env, CANVASD_TOKEN: env.srv.adminToken }, timeout: 60000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve({ stdout }))));
    // The applyResult line (rev, rebased, replans), then the commits the stream replays.
    assert.match(stdout, /^\d+ (true|false) \d+$/m);
    assert.match(stdout, /move/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
