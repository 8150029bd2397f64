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

test("a turn's start comes before the model's words of the same millisecond", () => {
  // As a fast model's run is recorded: the words 300 µs after the turn's start, listed before it.
  const lines = [
    { text: "Noting that down.", t: recordTime("2026-12-03T07:20:01.123700Z"), rank: Rank.said },
    { text: "Turn 1 started.", t: recordTime("2026-12-03T07:20:01.123400Z"), rank: Rank.turnStart },
    { text: "Turn 1 made 1 change.", t: recordTime("2026-12-03T07:20:01.125Z"), rank: Rank.turnChanges },
  ];
  assert.deepEqual(lines.sort(byRecord).map((l) => l.text), ["Turn 1 started.", "Noting that down.", "Turn 1 made 1 change."]);
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
