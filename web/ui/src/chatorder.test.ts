// Unit tests of the order of a chat rebuilt from a run's record (chatorder.ts).

import assert from "node:assert/strict";
import { test } from "node:test";
import { byRecord, Rank, recordTime } from "./chatorder";

test("a record time keeps the fraction of a millisecond", () => {
  assert.equal(recordTime("2026-12-03T07:20:01.123Z"), Date.parse("2026-12-03T07:20:01.123Z"));
  // A double holds today's times in milliseconds to about a quarter of a microsecond.
  assert.ok(Math.abs(recordTime("2026-12-03T07:20:01.123456789Z") - Date.parse("2026-12-03T07:20:01.123Z") - 0.456789) < 0.0003);
  assert.ok(recordTime("2026-12-03T07:20:01.123457Z") > recordTime("2026-12-03T07:20:01.123456Z"));
  assert.equal(recordTime("2026-12-03T07:20:01.5Z"), Date.parse("2026-12-03T07:20:01.500Z"));
  assert.equal(recordTime("2026-12-03T07:20:01Z"), Date.parse("2026-12-03T07:20:01Z"));
  assert.equal(recordTime(undefined), 0);
  assert.equal(recordTime("not a time"), 0);
});

test("lines within one millisecond keep the record's order of their microseconds", () => {
  // A fast model's run as recorded, the transcript listed before the turns: turn 1 starts, the
  // model's words come 100 µs later, turn 2 starts 500 µs after them, all in one millisecond. By
  // the millisecond and the rank alone, both turns' starts would come before the words.
  const lines = [
    { text: "Noting that down.", t: recordTime("2026-12-03T07:20:01.123200Z"), rank: Rank.said },
    { text: "Turn 1 started.", t: recordTime("2026-12-03T07:20:01.123100Z"), rank: Rank.turnStart },
    { text: "Turn 2 started.", t: recordTime("2026-12-03T07:20:01.123700Z"), rank: Rank.turnStart },
  ];
  assert.deepEqual(lines.sort(byRecord).map((l) => l.text), ["Turn 1 started.", "Noting that down.", "Turn 2 started."]);
});

test("at an equal time the rank orders: a turn's start, what was said, the turn's changes, the run's end", () => {
  const t = recordTime("2026-12-03T07:20:01.123Z");
  const lines = [
    { text: "Done.", t, rank: Rank.end },
    { text: "made", t, rank: Rank.turnChanges },
    { text: "said", t, rank: Rank.said },
    { text: "said later in the record", t, rank: Rank.said },
    { text: "started", t, rank: Rank.turnStart },
  ];
  assert.deepEqual(lines.sort(byRecord).map((l) => l.text), ["started", "said", "said later in the record", "made", "Done."]);
});
