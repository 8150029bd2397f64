package pgstore

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/migrations"
	"github.com/canvasd/canvasd/store"
)

func TestAppendReadRoundTrip(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	mustCreateCanvas(t, s, "c1")
	want := mkCommits("c1", 0, 3, "svc")
	want[1].Args = nil // no args: stored as NULL, read back as nil
	want[2].Changes = []canvas.Change{}
	idem := []store.IdempotencyRecord{{CanvasID: "c1", Key: "k1", Fingerprint: "fp", Outcome: store.OutcomeApplied,
		Result: []byte(`{"status":"applied"}`), Rev: 3, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}}
	if err := s.Append(ctx, "c1", 0, want, idem); err != nil {
		t.Fatalf("Append: %v", err)
	}
	got, err := s.ReadCommits(ctx, "c1", 0, 0)
	if err != nil {
		t.Fatalf("ReadCommits: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadCommits:\n got %+v\nwant %+v", got, want)
	}
	rec, err := s.GetIdempotency(ctx, "c1", "k1")
	if err != nil || !reflect.DeepEqual(rec, idem[0]) {
		t.Fatalf("GetIdempotency = %+v, %v; want %+v", rec, err, idem[0])
	}
	c, err := s.GetCanvas(ctx, "c1")
	if err != nil || c.HeadRev != 3 {
		t.Fatalf("GetCanvas = %+v, %v; want head 3", c, err)
	}
	if got, err := s.ReadCommits(ctx, "c1", 1, 1); err != nil || len(got) != 1 || got[0].Rev != 2 {
		t.Fatalf("ReadCommits(after 1, limit 1) = %+v, %v", got, err)
	}
	if got, err := s.ReadCommits(ctx, "c1", 3, 10); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ReadCommits past head = %#v, %v; want empty slice", got, err)
	}
}

func TestAppendErrorsWriteNothing(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	mustCreateCanvas(t, s, "c1")
	rec := func(key string, rev int64) store.IdempotencyRecord {
		return store.IdempotencyRecord{Key: key, Fingerprint: "fp", Outcome: store.OutcomeApplied, Result: []byte(`{}`), Rev: rev, CreatedAt: time.Now()}
	}
	if err := s.Append(ctx, "c1", 0, mkCommits("c1", 0, 1, "a"), []store.IdempotencyRecord{rec("k1", 1)}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		canvas string
		head   int64
		cs     []canvas.Commit
		idem   []store.IdempotencyRecord
		want   error
	}{
		{"stale head", "c1", 0, mkCommits("c1", 0, 1, "b"), nil, canvas.ErrHeadMismatch},
		{"head ahead", "c1", 5, mkCommits("c1", 5, 1, "b"), nil, canvas.ErrHeadMismatch},
		{"missing canvas", "nope", 0, mkCommits("nope", 0, 1, "b"), nil, canvas.ErrNotFound},
		{"stored key", "c1", 1, mkCommits("c1", 1, 2, "b"), []store.IdempotencyRecord{rec("k2", 2), rec("k1", 3)}, canvas.ErrDuplicateIdempotencyKey},
		{"key twice in one call", "c1", 1, mkCommits("c1", 1, 2, "b"), []store.IdempotencyRecord{rec("k3", 2), rec("k3", 3)}, canvas.ErrDuplicateIdempotencyKey},
		{"rev gap", "c1", 1, mkCommits("c1", 2, 1, "b"), nil, canvas.ErrInvalid},
		{"negative head", "c1", -1, nil, nil, canvas.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Append(ctx, tc.canvas, tc.head, tc.cs, tc.idem)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Append = %v, want %v", err, tc.want)
			}
			c, _ := s.GetCanvas(ctx, "c1")
			got, _ := s.ReadCommits(ctx, "c1", 0, 0)
			if c.HeadRev != 1 || len(got) != 1 {
				t.Fatalf("after failed Append: head %d, %d commits; want 1, 1", c.HeadRev, len(got))
			}
			for _, k := range []string{"k2", "k3"} {
				if _, err := s.GetIdempotency(ctx, "c1", k); !errors.Is(err, canvas.ErrNotFound) {
					t.Fatalf("GetIdempotency(%s) = %v, want not found", k, err)
				}
			}
		})
	}
}

// TestMigrationsRaceFree opens several stores on one fresh schema at once:
// the advisory lock makes exactly one of them apply each version.
func TestMigrationsRaceFree(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := Open(context.Background(), url, WithSchema(schema), WithLogger(quietLogger()))
			if err != nil {
				errs <- err
				return
			}
			_ = s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Open: %v", err)
	}
	s := openIn(t, url, schema)
	rows, _ := s.pool.Query(context.Background(), `SELECT version FROM schema_migrations ORDER BY version`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := migrations.Load("postgres")
	if len(got) != len(ms) {
		t.Fatalf("schema_migrations = %v, want versions 1..%d once each", got, len(ms))
	}
}

// TestMigrationsDownUp checks that the down scripts undo the up scripts
// completely (the schema is empty afterwards) and that up runs again.
func TestMigrationsDownUp(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	s := openIn(t, url, schema)
	ctx := context.Background()
	if err := s.migrateDown(ctx, 0); err != nil {
		t.Fatalf("migrateDown: %v", err)
	}
	var tables []string
	rows, _ := s.pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 AND table_name <> 'schema_migrations' ORDER BY 1`, schema)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) != 0 {
		t.Fatalf("after down: tables %v, %v; want none", tables, err)
	}
	if err := s.migrate(ctx); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	mustCreateCanvas(t, s, "c1")
}

// TestAgentTodosTable checks canvas_agent_todos against the agent design:
// generated uuid ids, the status check and the defaults.
func TestAgentTodosTable(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	var id, status string
	var pos int
	err := s.pool.QueryRow(ctx, `INSERT INTO canvas_agent_todos (session_id, text) VALUES ('s1', 'do it')
		RETURNING id::text, status, position`).Scan(&id, &status, &pos)
	if err != nil || len(id) != 36 || status != "open" || pos != 0 {
		t.Fatalf("insert todo = %q %q %d, %v", id, status, pos, err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO canvas_agent_todos (session_id, text, status) VALUES ('s1', 'x', 'maybe')`)
	if err == nil {
		t.Fatal("status 'maybe' accepted; the design allows open, done, skipped")
	}
}

func TestDeleteCanvasRemovesEverything(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	mustCreateCanvas(t, s, "c1")
	mustCreateCanvas(t, s, "c2")
	for _, id := range []string{"c1", "c2"} {
		if err := s.Append(ctx, id, 0, mkCommits(id, 0, 2, "a"), []store.IdempotencyRecord{{Key: "k", Rev: 1, Outcome: store.OutcomeApplied, Result: []byte("{}")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state) VALUES ($1, $2, 'a', 'done');
			`, "sess-"+id, id); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO canvas_agent_todos (session_id, text) VALUES ($1, 'todo')`, "sess-"+id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteCanvas(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCanvas(ctx, "c1"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("second DeleteCanvas = %v, want not found", err)
	}
	var n int
	_ = s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM commits) + (SELECT count(*) FROM idempotency)
		+ (SELECT count(*) FROM canvas_agent_sessions) + (SELECT count(*) FROM canvas_agent_todos)`).Scan(&n)
	if n != 2+1+1+1 { // only c2's rows remain
		t.Fatalf("rows left after deleting c1: %d, want 5 (c2's)", n)
	}
}
