package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/migrations"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// openDB opens the SQLite database at dsn on one connection (closed at the
// test's end) and returns it with an exec that fails the test on an error.
func openDB(t *testing.T, dsn string) (*sql.DB, func(q string, args ...any)) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	return db, func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
}

// olderDatabase creates at dsn a database of schema version n, as canvasd
// left it before migration n+1 (which must be named next), and returns it
// open, with openDB's exec, and the migrations.
func olderDatabase(t *testing.T, dsn string, n int, next string) (*sql.DB, func(q string, args ...any), []migrations.Migration) {
	t.Helper()
	ms, err := migrations.Load(sqlitestore.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) <= n || ms[n].Name != next {
		t.Fatalf("migrations: %d, want %04d_%s", len(ms), n+1, next)
	}
	db, exec := openDB(t, dsn)
	exec(migrations.SchemaMigrationsDDL)
	for _, m := range ms[:n] {
		exec(m.Up)
		exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)`, m.Version, m.Name)
	}
	return db, exec, ms
}

// TestMigration0002KeepsData builds a version-1 database with a log and
// idempotency records, opens it (which applies 0002), and checks that the
// data reads back and behaves (duplicate key, append, delete), that the
// foreign keys of commits and idempotency are gone, and that 0002's down
// script restores them without losing rows.
func TestMigration0002KeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, mustExec, ms := olderDatabase(t, path+"?_pragma=foreign_keys(1)", 1, "append_path")
	mustExec(`INSERT INTO canvases (id, head_rev, created_at) VALUES ('c', 2, 1), ('e', 1, 2)`)
	mustExec(`INSERT INTO commits (canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes) VALUES
		('c', 1, '1-a', 'cmd_1', 'create_node', '{"id":"n"}', 'human-1', 'human', 10, '[]'),
		('e', 1, '1-e', 'cmd_e', 'create_node', NULL, 'human-1', 'human', 11, '[]'),
		('c', 2, '2-a', 'cmd_2', 'move', '{"x":1}', 'agent-1', 'agent', 12, '[{"op":"delete","kind":"node","id":"n"}]')`)
	mustExec(`INSERT INTO idempotency (canvas_id, key, fingerprint, status, body, rev, created_at) VALUES
		('c', 'k', 'fp', 200, X'7B7D', 2, 20), ('e', 'k', 'fpe', 200, X'7B7D', 1, 21)`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path)
	cs, err := s.ReadCommits(ctx, "c", 0, 0)
	if err != nil || len(cs) != 2 || cs[0].EventID != "1-a" || string(cs[1].Args) != `{"x":1}` || cs[1].ActorType != canvas.ActorAgent ||
		len(cs[1].Changes) != 1 || cs[1].Changes[0].Op != canvas.OpDelete || !cs[1].TS.Equal(time.UnixMicro(12)) {
		t.Fatalf("commits after the migration: %+v, %v", cs, err)
	}
	r, err := s.GetIdempotency(ctx, "c", "k")
	if err != nil || r.Fingerprint != "fp" || r.Rev != 2 || string(r.Result) != "{}" || !r.CreatedAt.Equal(time.UnixMicro(20)) {
		t.Fatalf("idempotency record after the migration: %+v, %v", r, err)
	}
	next := []canvas.Commit{{Rev: 3, EventID: "3-a", Type: "move", ActorID: "human-1", ActorType: canvas.ActorHuman, TS: time.Now()}}
	rec := func(key string) []store.IdempotencyRecord {
		return []store.IdempotencyRecord{{Key: key, Fingerprint: "f", Outcome: store.OutcomeApplied, Result: []byte(`{}`), Rev: 3, CreatedAt: time.Now()}}
	}
	if err := s.Append(ctx, "c", 2, next, rec("k")); !errors.Is(err, canvas.ErrDuplicateIdempotencyKey) {
		t.Fatalf("Append with a migrated key: %v", err)
	}
	if err := s.Append(ctx, "c", 2, next, rec("k3")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCanvas(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	db, mustExec = openDB(t, path+"?_pragma=foreign_keys(1)")
	count := func(q string) (n int) {
		t.Helper()
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM pragma_foreign_key_list('commits')`) + count(`SELECT count(*) FROM pragma_foreign_key_list('idempotency')`); n != 0 {
		t.Fatalf("%d foreign keys left on commits and idempotency", n)
	}
	if n := count(`SELECT count(*) FROM commits WHERE canvas_id = 'c'`) + count(`SELECT count(*) FROM idempotency WHERE canvas_id = 'c'`); n != 0 {
		t.Fatalf("DeleteCanvas left %d rows of its canvas", n)
	}
	if n := count(`SELECT count(*) FROM commits WHERE canvas_id = 'e'`) + count(`SELECT count(*) FROM idempotency WHERE canvas_id = 'e'`); n != 2 {
		t.Fatalf("the other canvas has %d rows, want 2", n)
	}

	mustExec(ms[2].Down)
	mustExec(ms[1].Down)
	mustExec(`DELETE FROM schema_migrations WHERE version IN (2, 3)`)
	if n := count(`SELECT count(*) FROM pragma_foreign_key_list('commits')`) + count(`SELECT count(*) FROM pragma_foreign_key_list('idempotency')`); n != 2 {
		t.Fatalf("after 0002 down: %d foreign keys on commits and idempotency, want 2", n)
	}
	if n := count(`SELECT count(*) FROM commits WHERE canvas_id = 'e'`) + count(`SELECT count(*) FROM idempotency WHERE canvas_id = 'e'`); n != 2 {
		t.Fatalf("after 0002 down: %d rows, want 2", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path) // applies 0002 and 0003 again
	defer s.Close()
	if cs, err := s.ReadCommits(ctx, "e", 0, 0); err != nil || len(cs) != 1 {
		t.Fatalf("after 0002 down and up: %+v, %v", cs, err)
	}
}

// TestMigration0003TypedOutcomes builds a version-2 database whose
// idempotency records hold HTTP statuses, opens it (which applies 0003), and
// checks that the records read back as outcomes with their result bytes, and
// that 0003's down script turns them back into statuses.
func TestMigration0003TypedOutcomes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	db, mustExec, ms := olderDatabase(t, path, 2, "typed_outcomes")
	mustExec(`INSERT INTO canvases (id, head_rev, created_at) VALUES ('c', 2, 1)`)
	mustExec(`INSERT INTO idempotency (canvas_id, key, fingerprint, status, body, rev, created_at) VALUES
		('c', 'ok', 'fp1', 200, X'7B2261227D', 1, 20), ('c', 'no', 'fp2', 409, X'7B2262227D', 2, 21)`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path)
	for key, want := range map[string]store.IdempotencyRecord{
		"ok": {Fingerprint: "fp1", Outcome: store.OutcomeApplied, Result: []byte(`{"a"}`), Rev: 1},
		"no": {Fingerprint: "fp2", Outcome: store.OutcomeConflict, Result: []byte(`{"b"}`), Rev: 2},
	} {
		r, err := s.GetIdempotency(ctx, "c", key)
		if err != nil || r.Fingerprint != want.Fingerprint || r.Outcome != want.Outcome || string(r.Result) != string(want.Result) || r.Rev != want.Rev {
			t.Fatalf("record %q after the migration: %+v, %v; want %+v", key, r, err, want)
		}
	}
	s.Close()

	db, mustExec = openDB(t, path)
	mustExec(ms[2].Down)
	var statuses string
	if err := db.QueryRowContext(ctx, `SELECT group_concat(key || '=' || status || ':' || CAST(body AS TEXT), ' ') FROM (SELECT * FROM idempotency ORDER BY key)`).Scan(&statuses); err != nil {
		t.Fatal(err)
	}
	if statuses != `no=409:{"b"} ok=200:{"a"}` {
		t.Fatalf("after 0003 down: %s", statuses)
	}
}

// TestMigration0007HeadFromLog builds a version-6 database whose canvases
// carry head_rev, opens it (which applies 0007), and checks that each head
// is now its log's (0 without commits), that appends are checked against
// it, and that 0007's down script brings head_rev back, set from the log.
func TestMigration0007HeadFromLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v6.db")
	db, mustExec, ms := olderDatabase(t, path, 6, "head_from_log")
	mustExec(`INSERT INTO canvases (id, head_rev, created_at) VALUES ('c', 2, 1), ('empty', 0, 2)`)
	mustExec(`INSERT INTO commits (canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes) VALUES
		('c', 1, '1-a', 'cmd_1', 'create_node', '{}', 'human-1', 'human', 10, '[]'),
		('c', 2, '2-a', 'cmd_2', 'create_node', '{}', 'human-1', 'human', 11, '[]')`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path)
	heads := func() map[string]int64 {
		t.Helper()
		cs, err := s.ListCanvases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		for _, c := range cs {
			m[c.ID] = c.HeadRev
			if g, err := s.GetCanvas(ctx, c.ID); err != nil || g.HeadRev != c.HeadRev {
				t.Fatalf("GetCanvas(%s) = %+v, %v; listed with head %d", c.ID, g, err, c.HeadRev)
			}
		}
		return m
	}
	if h := heads(); h["c"] != 2 || h["empty"] != 0 || len(h) != 2 {
		t.Fatalf("heads after the migration: %v, want c:2 empty:0", h)
	}
	commit := func(rev int64) []canvas.Commit {
		return []canvas.Commit{{Rev: rev, EventID: fmt.Sprintf("%d-b", rev), Type: "move", ActorID: "human-1", ActorType: canvas.ActorHuman, TS: time.Now()}}
	}
	if err := s.Append(ctx, "c", 1, commit(2), nil); !errors.Is(err, canvas.ErrHeadMismatch) {
		t.Fatalf("Append behind the log's head: %v, want ErrHeadMismatch", err)
	}
	if err := s.Append(ctx, "c", 2, commit(3), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "empty", 0, commit(1), nil); err != nil {
		t.Fatal(err)
	}
	if h := heads(); h["c"] != 3 || h["empty"] != 1 {
		t.Fatalf("heads after appends: %v, want c:3 empty:1", h)
	}
	s.Close()

	db, mustExec = openDB(t, path)
	mustExec(ms[6].Down)
	var got string
	if err := db.QueryRowContext(ctx, `SELECT group_concat(id || ':' || head_rev, ' ') FROM (SELECT * FROM canvases ORDER BY id)`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "c:3 empty:1" {
		t.Fatalf("after 0007 down: %s, want c:3 empty:1", got)
	}
}
