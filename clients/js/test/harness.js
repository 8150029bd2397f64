// Test harness: builds the canvasd binary from this repository (once per
// run; `go build` caches) and starts real servers on 127.0.0.1:0 with a
// fresh data directory.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { before, after } from "node:test";
import { CanvasClient } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
export const pkgDir = resolve(here, "..");
export const repoDir = resolve(pkgDir, "../..");

let built;

/** The canvasd binary: $CANVASD_BIN, else built from the repository into .test-bin/. */
export function canvasdBinary() {
  if (process.env.CANVASD_BIN) return process.env.CANVASD_BIN;
  if (!built) {
    built = join(pkgDir, ".test-bin", "canvasd");
    execFileSync("go", ["build", "-o", built, "./cmd/canvasd"], { cwd: repoDir, stdio: "inherit" });
  }
  return built;
}

/**
 * Starts `canvasd serve` and resolves when it listens: {url, adminToken,
 * logs(), stop()}. env adds to the environment (e.g. the agent model).
 */
export async function startServer({ env = {}, args = [] } = {}) {
  const bin = canvasdBinary();
  const dataDir = mkdtempSync(join(tmpdir(), "canvasd-js-"));
  const adminToken = "adm-" + randomBytes(16).toString("hex");
  const childEnv = { ...process.env, CANVASD_DATABASE_URL: "", ...env };
  const proc = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--admin-token", adminToken, ...args], {
    env: childEnv, stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const url = await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error("canvasd did not start in 60 s:\n" + log)), 60000);
    const onData = (b) => {
      log += b.toString();
      const m = /canvasd listening.*addr=(http:\/\/[0-9.:]+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    };
    proc.stderr.on("data", onData);
    proc.stdout.on("data", (b) => (log += b.toString()));
    proc.on("exit", (code) => {
      clearTimeout(timer);
      rej(new Error(`canvasd exited with ${code}:\n${log}`));
    });
  });
  const stop = async () => {
    if (proc.exitCode === null) {
      const done = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 10000);
      await done;
      clearTimeout(t);
    }
    if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  };
  return { url, adminToken, proc, logs: () => log, stop };
}

/**
 * Runs one canvasd for the calling test file: started before its tests,
 * stopped after them. The returned object's srv (startServer's answer) and
 * c (a CanvasClient with the admin token) are set once the server is up.
 */
export function serverForTests() {
  const env = { srv: null, c: null };
  before(async () => {
    env.srv = await startServer();
    env.c = new CanvasClient({ baseUrl: env.srv.url, token: env.srv.adminToken });
  });
  after(async () => {
    await env.srv?.stop();
  });
  return env;
}

/** Waits until cond() is truthy (polling every 20 ms), or throws after ms with what. */
export async function waitFor(cond, what, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A 403 problem answered in the test itself, as by a server sharing the
 * database that has not heard of the browser's stream yet (test
 * instrumentation for a custom fetch).
 */
export function notYetForbidden() {
  return new Response(JSON.stringify({ type: "https://canvasd.dev/problems/forbidden", title: "Forbidden", status: 403, detail: "this server does not know the stream yet" }),
    { status: 403, headers: { "Content-Type": "application/problem+json" } });
}
