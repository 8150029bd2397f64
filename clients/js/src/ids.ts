// Random ids (crypto.getRandomValues works in every browser context, secure or not, and in Node).

/** A random hex string of n bytes. */
export function randomHex(n: number): string {
  const b = new Uint8Array(n);
  globalThis.crypto.getRandomValues(b);
  let s = "";
  for (const v of b) s += v.toString(16).padStart(2, "0");
  return s;
}

/** A fresh idempotency key of this client. */
export function newIdempotencyKey(): string {
  return "js-" + randomHex(16);
}
