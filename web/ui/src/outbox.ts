// The page's writes survive an outage: a command the server did not answer
// (network error) or answered 502/503/504 is kept and sent again, the same
// envelope with the same idempotency key, until the server answers it; so
// an edit made while the server is unreachable is saved when it is back,
// never reverted, and a resend of one that did commit is answered from the
// server's idempotency store instead of applying twice.

import { CanvasError, ConflictError, randomHex, type ApplyResult, type CanvasClient } from "@canvasd/client";

/** Whether err leaves the write's fate open and the same request may be sent again. */
export function transient(err: unknown): boolean {
  return err instanceof CanvasError && !(err instanceof ConflictError) &&
    (err.status === 0 || err.status === 502 || err.status === 503 || err.status === 504);
}

/** The first wait between resends in ms, doubled each time up to maxWaitMs. */
const firstWaitMs = 1000;
const maxWaitMs = 10000;

export class Outbox {
  private queued = 0; // writes enqueued and not done yet
  private stalled = 0; // of those, the ones whose last attempt found the server unreachable
  private wakers = new Set<() => void>();
  /** Told the counts whenever they change (the page shows them). */
  onChange: (queued: number, stalled: number) => void = () => {};

  constructor() {
    // Closing the page would drop what is kept: ask first.
    addEventListener("beforeunload", (ev) => {
      if (this.stalled > 0) ev.preventDefault();
    });
    addEventListener("online", () => this.retryNow()); // the browser has a network again
  }

  /**
   * Calls send until it answers other than transiently, and returns or
   * throws what it did. send must make the same request each time (same
   * envelope, same idempotency key). Waits between attempts back off to
   * 10 s; retryNow() (say, when the event stream is back) and the
   * browser's "online" event end them early.
   */
  async deliver<T>(send: () => Promise<T>): Promise<T> {
    let stalled = 0;
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          return await send();
        } catch (err) {
          if (!transient(err)) throw err;
          if (!stalled) this.count(0, (stalled = 1));
          await this.wait(Math.min(maxWaitMs, firstWaitMs * 2 ** Math.min(attempt, 10)) * (0.5 + 0.5 * Math.random()));
        }
      }
    } finally {
      if (stalled) this.count(0, -stalled);
    }
  }

  /**
   * Counts a write of the page from now until the function returned is
   * called (once it is answered or given up): while the server is
   * unreachable the page shows how many wait, those queued behind the
   * one being resent included.
   */
  enqueue(): () => void {
    this.count(1, 0);
    let done = false;
    return () => {
      if (!done) this.count(-1, 0);
      done = true;
    };
  }

  /** Ends the waits of the writes that are waiting: they are sent again at once. */
  retryNow(): void {
    const ws = [...this.wakers];
    this.wakers.clear();
    for (const w of ws) w();
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => { clearTimeout(timer); this.wakers.delete(wake); resolve(); };
      const timer = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  private count(dq: number, ds: number): void {
    this.queued += dq;
    this.stalled += ds;
    this.onChange(this.queued, this.stalled);
  }
}

/** A new id for a command of this page (cmd_id and idempotency key). */
export const newCmdId = () => "cmd_ui_" + randomHex(9);

/**
 * Sends one command of this page to canvas cid through outbox: its id (also
 * its idempotency key, so a resend never applies twice) goes into mine, the
 * page's own commands, first.
 */
export function sendCommand(outbox: Outbox, client: CanvasClient, mine: Set<string>, cid: string,
  type: string, args: Record<string, unknown>, baseRev?: number): Promise<ApplyResult> {
  const id = newCmdId();
  mine.add(id);
  const done = outbox.enqueue();
  return outbox.deliver(() => client.applyResult(cid, type, args, { baseRev, cmdId: id, idempotencyKey: id })).finally(done);
}
