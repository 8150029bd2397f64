// Errors of the canvasd client. Every failed request raises a CanvasError;
// the server's RFC 9457 problem document, when there is one, is in `problem`.

import type { ConflictResult, Problem } from "./types.js";

/** A request that failed: an HTTP error status (with the problem document) or a network error (status 0). */
export class CanvasError extends Error {
  /** The HTTP status, or 0 when no answer arrived (network error, abort). */
  readonly status: number;
  /** The problem document of the answer, when it had one. */
  readonly problem?: Problem & Record<string, unknown>;
  readonly method: string;
  readonly url: string;
  /** The idempotency key the request carried, if any (resend it to retry safely). */
  readonly idempotencyKey?: string;
  /** The answer's Retry-After in ms, if it had one: how long a 429 or 503 asks the caller to wait before trying again. */
  readonly retryAfterMs?: number;

  constructor(message: string, init: { status: number; method: string; url: string; problem?: Problem & Record<string, unknown>; idempotencyKey?: string; retryAfterMs?: number; cause?: unknown }) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "CanvasError";
    this.status = init.status;
    this.problem = init.problem;
    this.method = init.method;
    this.url = init.url;
    this.idempotencyKey = init.idempotencyKey;
    this.retryAfterMs = init.retryAfterMs;
  }

  /**
   * On a 503 to a write: "not_written" (nothing was written) or "unknown"
   * (problem type outcome-unknown: the write reached the database but was not
   * confirmed, so it may have committed; resend it with the same idempotency
   * key, which returns the original result if it did). Undefined otherwise.
   */
  get outcome(): "not_written" | "unknown" | undefined {
    const o = this.problem?.["outcome"];
    return o === "not_written" || o === "unknown" ? o : undefined;
  }

  /** The field the problem names (`field` of a 400/422 problem), if any. */
  get field(): string | undefined {
    const f = this.problem?.["field"];
    return typeof f === "string" ? f : undefined;
  }
}

/** A 409 answer to a command: someone changed what the command touches since its baseRev. */
export class ConflictError extends CanvasError {
  /** The conflict body: current_rev, conflicting_ids, recovery_ops (the commits that conflicted), suggestion. */
  readonly conflict: ConflictResult;

  constructor(conflict: ConflictResult, init: { method: string; url: string; idempotencyKey?: string }) {
    super(`conflict at revision ${conflict.current_rev}: ${conflict.suggestion || "re-read and re-plan"}`, { ...init, status: 409 });
    this.name = "ConflictError";
    this.conflict = conflict;
  }

  get currentRev(): number { return this.conflict.current_rev; }
  get conflictingIds(): string[] { return this.conflict.conflicting_ids; }
  get recoveryOps(): ConflictResult["recovery_ops"] { return this.conflict.recovery_ops; }
}
