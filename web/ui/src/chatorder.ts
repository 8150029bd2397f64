// The order of a chat rebuilt from the server's record of a run (agent.ts):
// what was said and what the run's turns did, by the record's times.

/** One line of a rebuilt chat, with its time in the record and its rank (byRecord). */
export interface RecordLine {
  t: number;
  rank: number;
}

/** The rank of a line among those of an equal time: a turn's start, what was said, the turn's changes, the run's end. */
export const Rank = { turnStart: 0, said: 1, turnChanges: 2, end: 3 } as const;

/**
 * A record time (RFC 3339, to the nanosecond) in milliseconds, with the
 * fraction of a millisecond kept (to about a quarter of a microsecond, a
 * double's precision at today's times): Date.parse stops at the
 * millisecond, within which a fast model's first words and its turn's start
 * may fall. 0 for none or a malformed one.
 */
export function recordTime(ts: string | undefined): number {
  const ms = ts ? Date.parse(ts) || 0 : 0;
  const sub = ms ? /\.\d{3}(\d+)/.exec(ts!) : null;
  return sub ? ms + Number("0." + sub[1]) : ms;
}

/** Compares two lines for Array.prototype.sort (stable): by time, then by rank. */
export function byRecord(a: RecordLine, b: RecordLine): number {
  return a.t - b.t || a.rank - b.rank;
}
