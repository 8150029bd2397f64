package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/pgstore"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// sessionStores opens the session store over each real backend with the
// canvas "c1" created: SQLite always, PostgreSQL when
// CANVASD_TEST_DATABASE_URL is set.
func sessionStores(t *testing.T) map[string]*SQLSessionStore {
	t.Helper()
	ctx := context.Background()
	out := map[string]*SQLSessionStore{}
	path := filepath.Join(t.TempDir(), "canvasd.db")
	st, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mkCanvas(t, st)
	ss, err := OpenSQLSessionStore(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	out["sqlite"] = ss

	url := os.Getenv("CANVASD_TEST_DATABASE_URL")
	if url == "" {
		t.Log("CANVASD_TEST_DATABASE_URL not set: PostgreSQL not tested")
		return out
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_agent_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err == nil {
			_, _ = conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(context.Background())
		}
	})
	pg, err := pgstore.Open(ctx, url, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	mkCanvas(t, pg)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	ps, err := OpenSQLSessionStore(ctx, url+sep+"search_path="+schema, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	out["postgres"] = ps
	return out
}

func mkCanvas(t *testing.T, st store.Store) {
	t.Helper()
	if err := st.CreateCanvas(context.Background(), canvas.Canvas{ID: "c1", Title: "t", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func TestSQLSessionStore(t *testing.T) {
	for name, ss := range sessionStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Millisecond)
			rec := client.AgentSession{ID: "as_1", CanvasID: "c1", ActorID: "agent-x", State: client.AgentWaitingContext, Model: "debug/fake",
				Message: "hi", Viewport: &client.Box{W: 10, H: 10}, Transcript: []client.TranscriptEntry{{Role: "user", Text: "hi", TS: now}}, CreatedAt: now}
			if err := ss.CreateSession(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if err := ss.CreateSession(ctx, rec); !errors.Is(err, canvas.ErrAlreadyExists) {
				t.Fatalf("duplicate: %v", err)
			}
			bad := rec
			bad.ID, bad.CanvasID = "as_2", "nope"
			if err := ss.CreateSession(ctx, bad); !errors.Is(err, canvas.ErrNotFound) {
				t.Fatalf("missing canvas: %v", err)
			}
			rec.State, rec.Stats.ActionsApplied = client.AgentStreaming, 3
			rec.Transcript = append(rec.Transcript, client.TranscriptEntry{Role: "assistant", Text: "ok", TS: now})
			if err := ss.SaveSession(ctx, rec); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				td, err := ss.AddTodo(ctx, client.AgentTodo{SessionID: "as_1", Text: fmt.Sprint("t", i)})
				if err != nil || td.Position != i || td.Status != "open" {
					t.Fatalf("todo %+v %v", td, err)
				}
			}
			if _, err := ss.AddTodo(ctx, client.AgentTodo{SessionID: "as_1", Text: "x", Status: "bogus"}); !errors.Is(err, canvas.ErrUnprocessable) {
				t.Fatalf("bad status: %v", err)
			}
			got, err := ss.GetSession(ctx, "as_1")
			if err != nil || got.State != client.AgentStreaming || got.Stats.ActionsApplied != 3 || len(got.Transcript) != 2 ||
				len(got.Todos) != 3 || got.Todos[2].Text != "t2" || got.Viewport == nil || !got.CreatedAt.Equal(now) {
				t.Fatalf("get %+v %v", got, err)
			}
			if err := ss.SetTodoStatus(ctx, "as_1", got.Todos[1].ID, "done"); err != nil {
				t.Fatal(err)
			}
			if err := ss.SetTodoStatus(ctx, "as_1", "nope", "done"); !errors.Is(err, canvas.ErrNotFound) {
				t.Fatalf("missing todo: %v", err)
			}
			if _, err := ss.GetSession(ctx, "as_none"); !errors.Is(err, canvas.ErrNotFound) {
				t.Fatalf("missing: %v", err)
			}
			// Ended sessions are final.
			if changed, err := ss.CancelSession(ctx, "as_1"); err != nil || !changed {
				t.Fatalf("cancel %v %v", changed, err)
			}
			if changed, err := ss.CancelSession(ctx, "as_1"); err != nil || changed {
				t.Fatalf("cancel again %v %v", changed, err)
			}
			rec.State = client.AgentDone
			if err := ss.SaveSession(ctx, rec); !errors.Is(err, canvas.ErrConflict) {
				t.Fatalf("save after cancel: %v", err)
			}
			if st, _ := ss.SessionState(ctx, "as_1"); st != client.AgentCanceled {
				t.Fatalf("state %q", st)
			}

			// Concurrent claims hand each queued session to exactly one worker, oldest first.
			for i := 0; i < 10; i++ {
				q := client.AgentSession{ID: fmt.Sprintf("as_q%02d", i), CanvasID: "c1", State: StateQueued, Model: "debug/fake", Message: "m",
					CreatedAt: now.Add(time.Duration(i) * time.Millisecond)}
				if err := ss.CreateSession(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			claimed := map[string]int{}
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for {
						s, err := ss.ClaimSession(ctx, fmt.Sprint("agent-w", w))
						if errors.Is(err, canvas.ErrNotFound) {
							return
						}
						if err != nil {
							if strings.Contains(err.Error(), "locked") || strings.Contains(err.Error(), "busy") {
								continue
							}
							t.Error(err)
							return
						}
						if s.State != client.AgentWaitingContext || !strings.HasPrefix(s.ActorID, "agent-w") {
							t.Errorf("claimed %+v", s)
						}
						mu.Lock()
						claimed[s.ID]++
						mu.Unlock()
					}
				}(w)
			}
			wg.Wait()
			if len(claimed) != 10 {
				t.Fatalf("claimed %d sessions: %v", len(claimed), claimed)
			}
			for id, n := range claimed {
				if n != 1 {
					t.Fatalf("%s claimed %d times", id, n)
				}
			}
		})
	}
}
