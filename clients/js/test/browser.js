// Browser test helpers: Debian's Chromium driven by playwright-core (no
// browser download), and a same-origin test site that serves this package's
// dist/ and a test page and proxies the API to canvasd.

import http from "node:http";
import { readFile } from "node:fs/promises";
import { join, normalize } from "node:path";
import { chromium } from "playwright-core";
import { pkgDir } from "./harness.js";

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

/** Launches headless Chromium. */
export function launchChromium() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"],
  });
}

const PAGE = `<!doctype html><meta charset="utf-8"><title>canvasd client test</title>
<canvas id="c" width="64" height="48"></canvas>
<script type="module">
  import * as client from "/client/index.js";
  window.canvasdClient = client;
  window.clientReady = true;
</script>`;

/**
 * Starts the test site on 127.0.0.1:0 in front of canvasd at target:
 * /client/* is dist/, /page.html the test page, anything else is proxied.
 * Resolves to {url, close()}.
 */
export async function startSite(target) {
  const t = new URL(target);
  const dist = join(pkgDir, "dist");
  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url, "http://x");
    if (u.pathname === "/page.html") {
      res.writeHead(200, { "Content-Type": "text/html" });
      return res.end(PAGE);
    }
    if (u.pathname.startsWith("/client/")) {
      const p = normalize(u.pathname.slice("/client/".length));
      if (p.startsWith("..")) {
        res.writeHead(404);
        return res.end();
      }
      try {
        const body = await readFile(join(dist, p));
        res.writeHead(200, { "Content-Type": "text/javascript" });
        return res.end(body);
      } catch {
        res.writeHead(404);
        return res.end();
      }
    }
    const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      res.flushHeaders();
      ur.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
    res.on("close", () => up.destroy());
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((r) => {
      server.closeAllConnections();
      server.close(r);
    }),
  };
}

/** Opens the test page in a new page of browser and waits for the client module. */
export async function openClientPage(browser, site) {
  const page = await browser.newPage();
  page.on("pageerror", (e) => console.error("page error:", e));
  await page.goto(site.url + "/page.html");
  await page.waitForFunction(() => window.clientReady === true);
  return page;
}
