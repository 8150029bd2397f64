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
	INSERT INTO idempotency (canvas_id, key, fingerprint, status, body, rev, created_at)
	SELECT head.id, i.key, i.fingerprint, i.status, i.body, i.rev, i.created_at
	FROM head, unnest($13::text[], $14::bytea[], $15::int[], $16::bytea[], $17::bigint[], $18::timestamptz[])
	     AS i(key, fingerprint, status, body, rev, created_at)
	RETURNING 1
)
SELECT (SELECT count(*) FROM head), EXISTS (SELECT 1 FROM canvases WHERE id = $1), (SELECT key FROM dup)`

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

// newAppendJob checks an Append's arguments and encodes them as appendSQL's
// parameters.
func (s *Store) newAppendJob(ctx context.Context, canvasID string, expectedHead int64, commits []canvas.Commit, idem []store.IdempotencyRecord) (*appendJob, error) {
	if expectedHead < 0 {
		return nil, fmt.Errorf("pgstore: append to %q: expected head %d < 0: %w", canvasID, expectedHead, canvas.ErrInvalid)
	}
	n := len(commits)
	revs := make([]int64, n)
	eventIDs := make([]string, n)
	cmdIDs := make([]string, n)
	types := make([]string, n)
	args := make([]*string, n)
	actorIDs := make([]string, n)
	actorTypes := make([]string, n)
	tss := make([]time.Time, n)
	changes := make([]string, n)
	for i := range commits {
		c := &commits[i]
		if c.Rev != expectedHead+int64(i)+1 {
			return nil, fmt.Errorf("pgstore: append to %q: commit %d has rev %d, want %d: %w",
				canvasID, i, c.Rev, expectedHead+int64(i)+1, canvas.ErrInvalid)
		}
		if c.CanvasID != "" && c.CanvasID != canvasID {
			return nil, fmt.Errorf("pgstore: append to %q: commit %d belongs to canvas %q: %w", canvasID, i, c.CanvasID, canvas.ErrInvalid)
		}
		revs[i] = c.Rev
		eventIDs[i] = c.EventID
		cmdIDs[i] = c.CmdID
		types[i] = c.Type
		if len(c.Args) > 0 {
			a := string(c.Args)
			args[i] = &a
		}
		actorIDs[i] = c.ActorID
		actorTypes[i] = string(c.ActorType)
		tss[i] = c.TS
		ch := c.Changes
		if ch == nil {
			ch = []canvas.Change{}
		}
		b, err := json.Marshal(ch)
		if err != nil {
			return nil, fmt.Errorf("pgstore: append to %q: encode changes of rev %d: %v: %w", canvasID, c.Rev, err, canvas.ErrInvalid)
		}
		changes[i] = string(b)
	}
	m := len(idem)
	keys := make([]string, m)
	fps := make([][]byte, m)
	statuses := make([]int32, m)
	bodies := make([][]byte, m)
	irevs := make([]int64, m)
	created := make([]time.Time, m)
	for i := range idem {
		r := &idem[i]
		if r.CanvasID != "" && r.CanvasID != canvasID {
			return nil, fmt.Errorf("pgstore: append to %q: idempotency record %q belongs to canvas %q: %w", canvasID, r.Key, r.CanvasID, canvas.ErrInvalid)
		}
		keys[i], fps[i], statuses[i], irevs[i] = r.Key, []byte(r.Fingerprint), int32(r.Status), r.Rev
		bodies[i] = r.Body
		if bodies[i] == nil {
			bodies[i] = []byte{}
		}
		created[i] = r.CreatedAt
		if created[i].IsZero() {
			created[i] = time.Now()
		}
	}

	j := s.commit.jobPool.Get().(*appendJob)
	j.ctx, j.deadline, j.canvasID, j.head = ctx, s.opDeadline(ctx), canvasID, expectedHead
	j.args = append(j.args[:0], canvasID, expectedHead, int64(n),
		revs, eventIDs, cmdIDs, types, args, actorIDs, actorTypes, tss, changes,
		keys, fps, statuses, bodies, irevs, created)
	return j, nil
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
		if err := json.Unmarshal(changes, &c.Changes); err != nil {
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
			return nil, fmt.Errorf("pgstore: read commits of %q: %w", canvasID, canvas.ErrNotFound)
		}
	}
	return out, nil
}
