// What the page asks the server for before its application has loaded: the
// snapshot of the canvas in its address, read while the browser loads and
// starts Excalidraw (about 2 MB of scripts), instead of after. boot.ts (a
// classic script, the page's first) asks; the application's client takes it
// (earlyFetch) as its first read of that snapshot. The two are separate
// bundles: the read in flight is kept on window.

/** Where the browser keeps the token (localStorage). */
export const TOKEN_KEY = "canvasd.token";

/** The token handed over in the address's fragment (#access_token=...), "" when none; the address is left as it is. */
export function tokenInAddress(): string {
  const m = /(?:^#|&)access_token=([^&]+)/.exec(location.hash);
  if (!m) return "";
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return m[1];
  }
}

const SNAPSHOT = "/canvas_commands/snapshot/";
type Early = { canvasId: string; auth: string; res: Promise<Response> };
const held = window as unknown as { canvasdEarly?: Early | null };

/**
 * Asks for the snapshot of the canvas the address opens (?canvas=), with the
 * token the application will use (the address's, else the one kept); does
 * nothing without both.
 */
export function readSnapshotEarly(): void {
  if (held.canvasdEarly !== undefined) return; // asked already (or taken)
  const canvasId = new URLSearchParams(location.search).get("canvas") || "";
  let tok = tokenInAddress();
  try {
    tok ||= localStorage.getItem(TOKEN_KEY) || "";
  } catch { /* storage refused: no token kept */ }
  if (!canvasId || !tok) return;
  const auth = "Bearer " + tok;
  const res = fetch(location.origin + SNAPSHOT + encodeURIComponent(canvasId), { headers: { Accept: "application/json", Authorization: auth } });
  res.catch(() => {}); // a failure is the client's to see, when it takes the answer
  held.canvasdEarly = { canvasId, auth, res };
}

/**
 * fetch, except that the first request for a snapshot is answered with the
 * early read when it asks for the same canvas's latest snapshot with the
 * same token (its abort signal still aborts it); any request for a
 * snapshot drops the early read, so that it is never used late.
 */
export const earlyFetch: typeof fetch = (input, init) => {
  const e = held.canvasdEarly;
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (e && url.includes(SNAPSHOT)) {
    held.canvasdEarly = null;
    const u = new URL(url, location.origin);
    const headers = new Headers(init?.headers);
    if ((init?.method ?? "GET") === "GET" && u.origin === location.origin && !u.search &&
      decodeURIComponent(u.pathname) === SNAPSHOT + e.canvasId && headers.get("Authorization") === e.auth) {
      const signal = init?.signal;
      if (!signal) return e.res;
      return new Promise<Response>((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        e.res.then(resolve, reject);
      });
    }
  }
  return fetch(input, init);
};
