// Runs the web UI's unit tests (src/*.test.ts) with node --test. Node 20
// does not run TypeScript, so esbuild (the bundler the build already uses)
// compiles each test with what it imports into a temporary directory first.
// Arguments go to node --test (say, --test-name-pattern=colour).
import * as esbuild from "esbuild";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const tests = readdirSync(join(here, "src")).filter((f) => f.endsWith(".test.ts")).sort();
if (!tests.length) throw new Error("no src/*.test.ts");
const out = mkdtempSync(join(tmpdir(), "canvasd-ui-test-"));
try {
  await esbuild.build({
    entryPoints: tests.map((f) => join(here, "src", f)),
    alias: { "@canvasd/client": join(here, "..", "..", "clients", "js", "src", "index.ts") },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outdir: out,
    outExtension: { ".js": ".mjs" },
    sourcemap: "inline",
    logLevel: "warning",
  });
  const files = readdirSync(out).filter((f) => f.endsWith(".mjs")).map((f) => join(out, f));
  const r = spawnSync(process.execPath, ["--enable-source-maps", "--test", ...process.argv.slice(2), ...files], { stdio: "inherit", cwd: here });
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
