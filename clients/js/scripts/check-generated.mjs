// Fails when src/openapi.ts is not what openapi-typescript generates from
// the repository's openapi.yaml now (run `npm run generate` and commit).

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "canvasd-gen-"));
try {
  const out = join(dir, "openapi.ts");
  execFileSync(join(pkg, "node_modules/.bin/openapi-typescript"), ["../../openapi.yaml", "--output", out], { cwd: pkg, stdio: "pipe" });
  if (readFileSync(out, "utf8") !== readFileSync(join(pkg, "src/openapi.ts"), "utf8")) {
    console.error("clients/js/src/openapi.ts is out of date with openapi.yaml: run `npm run generate` in clients/js and commit the result.");
    process.exit(1);
  }
  console.log("clients/js/src/openapi.ts is current with openapi.yaml");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
