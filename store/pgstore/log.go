package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// appendSQL is the whole append of one canvas in one statement (one of the
// statements of a group-commit batch, see commit.go): the per-canvas row
// lock (the UPDATE, which under READ COMMITTED waits for a concurrent
// appender and then re-checks head_rev), the commits and the idempotency
// records. The inserts join the UPDATE's output, and the UPDATE happens only
// when none of the keys is stored yet, so when the head does not match or a
// key is taken nothing is written and the statement does not fail (which
// would abort the other Appends of its transaction). The last columns read
// the canvas as of the statement's snapshot, to tell a missing canvas from a
// moved head, and the first stored key.
const appendSQL = `
WITH dup AS (
	SELECT key FROM idempotency WHERE canvas_id = $1 AND key = ANY($13::text[]) LIMIT 1
), head AS (
	UPDATE canvases SET head_rev = head_rev + $3
	WHERE id = $1 AND head_rev = $2 AND NOT EXISTS (SELECT 1 FROM dup)
	RETURNING id
), log AS (
	INSERT INTO commits (canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes)
	SELECT head.id, c.rev, c.event_id, c.cmd_id, c.type, c.args::json, c.actor_id, c.actor_type, c.ts, c.changes::json
	FROM head, unnest($4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
	                  $11::timestamptz[], $12::text[])
	     AS c(rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes)
	RETURNING 1
), idem AS (
	INSERT INTO idempotency (canvas_id, key, fingerprint, outcome, result, rev, created_at)
	SELECT head.id, i.key, i.fingerprint, i.outcome, i.result, i.rev, i.created_at
	FROM head, unnest($13::text[], $14::bytea[], $15::text[], $16::bytea[], $17::bigint[], $18::timestamptz[])
	     AS i(key, fingerprint, outcome, result, rev, created_at)
	RETURNING 1
)
SELECT (SELECT count(*) FROM head), EXISTS (SELECT 1 FROM canvases WHERE id = $1), (SELECT key FROM dup)`

// batchSQL is several Appends, to distinct canvases, in one statement: the
// same steps as appendSQL for all of them at once. The canvas rows are
// locked first, in id order (so batches of different committers and
// processes do not deadlock one another), then the heads that match and
// have no stored key move, and the rows of those Appends are inserted. It
// returns, per Append in order, whether it was written, whether its canvas
// exists and the first of its keys that is already stored.
const batchSQL = `
WITH a AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS a(id, head, n, ord)
), locked AS MATERIALIZED (
	SELECT id, head_rev FROM canvases WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE
), dup AS (
	SELECT DISTINCT ON (i.canvas_id) i.canvas_id, i.key
	FROM unnest($14::text[], $15::text[]) AS k(canvas_id, key)
	JOIN idempotency i ON i.canvas_id = k.canvas_id AND i.key = k.key
	ORDER BY i.canvas_id, i.key
), head AS (
	UPDATE canvases c SET head_rev = a.head + a.n
	FROM a JOIN locked l ON l.id = a.id
	WHERE c.id = a.id AND l.head_rev = a.head AND NOT EXISTS (SELECT 1 FROM dup WHERE dup.canvas_id = a.id)
	RETURNING c.id
), log AS (
	INSERT INTO commits (canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes)
	SELECT x.canvas_id, x.rev, x.event_id, x.cmd_id, x.type, x.args::json, x.actor_id, x.actor_type, x.ts, x.changes::json
	FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
	            $12::timestamptz[], $13::text[])
	     AS x(canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes)
	WHERE x.canvas_id IN (SELECT id FROM head)
	RETURNING 1
), idem AS (
	INSERT INTO idempotency (canvas_id, key, fingerprint, outcome, result, rev, created_at)
	SELECT i.canvas_id, i.key, i.fingerprint, i.outcome, i.result, i.rev, i.created_at
	FROM unnest($14::text[], $15::text[], $16::bytea[], $17::text[], $18::bytea[], $19::bigint[], $20::timestamptz[])
	     AS i(canvas_id, key, fingerprint, outcome, result, rev, created_at)
	WHERE i.canvas_id IN (SELECT id FROM head)
	RETURNING 1
)
SELECT (a.id IN (SELECT id FROM head))::int, l.id IS NOT NULL, (SELECT key FROM dup WHERE dup.canvas_id = a.id)
FROM a LEFT JOIN locked l ON l.id = a.id ORDER BY a.ord`

// Append atomically appends commits (revisions expectedHead+1, +2, ... in
// order) to the canvas's log, moves its head to the last one and stores the
// idempotency records, in one transaction that is durable when Append
// returns nil. A stored head other than expectedHead is
// canvas.ErrHeadMismatch, a key already stored for the canvas (or repeated
// within idem) canvas.ErrDuplicateIdempotencyKey, a missing canvas
// canvas.ErrNotFound; in each case nothing is written. Commits whose Rev is
// not the next revision are canvas.ErrInvalid. An error wrapping
// canvas.ErrUnavailable (the database went away or did not answer in time)
// leaves the outcome unknown, as with any remote commit: the statement may
// have committed, so re-read the head and the log before deciding again.
// After the commit, other processes are notified (asynchronously; see Listen).
//
// Concurrent Appends, to any canvases, share one transaction (group commit,
// see commit.go); each still succeeds or fails on its own, and returns only
// once that transaction has committed. A lone Append does not wait for
// company.
func (s *Store) Append(ctx context.Context, canvasID string, expectedHead int64, commits []canvas.Commit, idem []store.IdempotencyRecord) error {
	j, err := s.newAppendJob(ctx, canvasID, expectedHead, commits, idem)
	if err != nil {
		return err
	}
	err = s.commit.submit(ctx, j)
	s.commit.put(j)
	return err
}

// newAppendJob checks an Append's arguments and encodes its rows as the
// columns appendSQL and batchSQL take.
func (s *Store) newAppendJob(ctx context.Context, canvasID string, expectedHead int64, commits []canvas.Commit, idem []store.IdempotencyRecord) (*appendJob, error) {
	if expectedHead < 0 {
		return nil, fmt.Errorf("pgstore: append to %q: expected head %d < 0: %w", canvasID, expectedHead, canvas.ErrInvalid)
	}
	j := s.commit.jobPool.Get().(*appendJob)
	j.ctx, j.deadline, j.canvasID, j.head = ctx, s.opDeadline(ctx), canvasID, expectedHead
	if err := j.cols.add(canvasID, expectedHead, commits, idem, s.now); err != nil {
		s.commit.put(j)
		return nil, err
	}
	return j, nil
}

// appendCols are the rows of one or more Appends as columns: one entry per
// commit (canvas..changes) and per idempotency record (idemCanvas..created).
type appendCols struct {
	canvas, eventIDs, cmdIDs, types, actorIDs, actorTypes, changes []string
	revs                                                           []int64
	args                                                           []*string
	tss                                                            []time.Time

	idemCanvas, keys, outcomes []string
	fps, results               [][]byte
	irevs                      []int64
	created                    []time.Time
}

// add appends the rows of one Append, checking them; an idempotency record
// without a CreatedAt gets now().
func (a *appendCols) add(canvasID string, expectedHead int64, commits []canvas.Commit, idem []store.IdempotencyRecord, now func() time.Time) error {
	for i := range commits {
		c := &commits[i]
		if c.Rev != expectedHead+int64(i)+1 {
			return fmt.Errorf("pgstore: append to %q: commit %d has rev %d, want %d: %w",
				canvasID, i, c.Rev, expectedHead+int64(i)+1, canvas.ErrInvalid)
		}
		if c.CanvasID != "" && c.CanvasID != canvasID {
			return fmt.Errorf("pgstore: append to %q: commit %d belongs to canvas %q: %w", canvasID, i, c.CanvasID, canvas.ErrInvalid)
		}
		text, ok, changes, err := c.StoredText()
		if err != nil {
			return fmt.Errorf("pgstore: append to %q: encode changes of rev %d: %v: %w", canvasID, c.Rev, err, canvas.ErrInvalid)
		}
		var args *string
		if ok && len(c.Args) > 0 {
			args = &text
		}
		a.canvas, a.revs, a.eventIDs, a.cmdIDs = append(a.canvas, canvasID), append(a.revs, c.Rev), append(a.eventIDs, c.EventID), append(a.cmdIDs, c.CmdID)
		a.types, a.args, a.actorIDs = append(a.types, c.Type), append(a.args, args), append(a.actorIDs, c.ActorID)
		a.actorTypes, a.tss, a.changes = append(a.actorTypes, string(c.ActorType)), append(a.tss, c.TS), append(a.changes, changes)
	}
	for i := range idem {
		r := &idem[i]
		if r.CanvasID != "" && r.CanvasID != canvasID {
			return fmt.Errorf("pgstore: append to %q: idempotency record %q belongs to canvas %q: %w", canvasID, r.Key, r.CanvasID, canvas.ErrInvalid)
		}
		result := r.Result
		if result == nil {
			result = []byte{}
		}
		created := r.CreatedAt
		if created.IsZero() {
			created = now()
		}
		a.idemCanvas, a.keys, a.fps = append(a.idemCanvas, canvasID), append(a.keys, r.Key), append(a.fps, []byte(r.Fingerprint))
		a.outcomes, a.results, a.irevs, a.created = append(a.outcomes, string(r.Outcome)), append(a.results, result), append(a.irevs, r.Rev), append(a.created, created)
	}
	return nil
}

// commitArgs and idemArgs are the column parameters of appendSQL and batchSQL.
func (a *appendCols) commitArgs() []any {
	return []any{a.revs, a.eventIDs, a.cmdIDs, a.types, a.args, a.actorIDs, a.actorTypes, a.tss, a.changes}
}

func (a *appendCols) idemArgs() []any {
	return []any{a.keys, a.fps, a.outcomes, a.results, a.irevs, a.created}
}

// reset empties the columns, keeping their room.
func (a *appendCols) reset() {
	for _, col := range []*[]string{&a.canvas, &a.eventIDs, &a.cmdIDs, &a.types, &a.actorIDs, &a.actorTypes, &a.changes,
		&a.idemCanvas, &a.keys, &a.outcomes} {
		clear(*col)
		*col = (*col)[:0]
	}
	clear(a.args)
	clear(a.fps)
	clear(a.results)
	a.revs, a.args, a.tss, a.fps, a.results, a.irevs, a.created = a.revs[:0], a.args[:0], a.tss[:0], a.fps[:0], a.results[:0], a.irevs[:0], a.created[:0]
}

// ReadCommits returns up to limit commits (limit ≤ 0: all) with rev >
// afterRev in ascending order, an empty slice past the head, or
// canvas.ErrNotFound for a missing canvas.
func (s *Store) ReadCommits(ctx context.Context, canvasID string, afterRev int64, limit int) ([]canvas.Commit, error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	rows, _ := s.pool.Query(ctx,
		`SELECT rev, event_id, cmd_id, type, args::text, actor_id, actor_type, ts, changes::text
		 FROM commits WHERE canvas_id = $1 AND rev > $2 ORDER BY rev LIMIT $3`,
		canvasID, afterRev, lim)
	out := []canvas.Commit{}
	var args, changes []byte
	var actorType string
	for rows.Next() {
		var c canvas.Commit
		if err := rows.Scan(&c.Rev, &c.EventID, &c.CmdID, &c.Type, &args, &c.ActorID, &actorType, &c.TS, &changes); err != nil {
			rows.Close()
			return nil, s.wrap(ctx, "read commits", err)
		}
		c.CanvasID = canvasID
		c.ActorType = canvas.ActorType(actorType)
		c.TS = c.TS.UTC()
		if args != nil {
			c.Args = json.RawMessage(append([]byte(nil), args...))
		}
		if err := canvas.UnmarshalChanges(changes, &c.Changes); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: read commits of %q: decode changes of rev %d: %w", canvasID, c.Rev, err)
		}
		if c.Changes == nil {
			c.Changes = []canvas.Change{}
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, "read commits", err)
	}
	if len(out) == 0 {
		ok, err := s.canvasExists(ctx, canvasID)
		if err != nil {
			return nil, s.wrap(ctx, "read commits", err)
		}
		if !ok {
			return nil, fmt.Errorf("canvas %q: %w", canvasID, canvas.ErrNotFound)
		}
	}
	return out, nil
}
