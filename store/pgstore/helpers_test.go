package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
)

// testURL returns CANVASD_TEST_DATABASE_URL, skipping the test only when it
// is unset (CI always sets it).
func testURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv("CANVASD_TEST_DATABASE_URL")
	if u == "" {
		tb.Skip("CANVASD_TEST_DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return u
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newSchema names a fresh schema for one test and drops it (with everything
// in it) at cleanup. Open(WithSchema) creates it.
func newSchema(tb testing.TB, url string) string {
	tb.Helper()
	name := "t_" + randHex(6)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openIn opens a Store on url in schema and closes it at cleanup.
func openIn(tb testing.TB, url, schema string, opts ...Option) *Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, url, append([]Option{WithSchema(schema), WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// openTest opens a Store in a fresh schema.
func openTest(tb testing.TB, opts ...Option) *Store {
	tb.Helper()
	url := testURL(tb)
	return openIn(tb, url, newSchema(tb, url), opts...)
}

// mkCommits returns n commits following head, as the engine builds them.
func mkCommits(canvasID string, head int64, n int, actor string) []canvas.Commit {
	out := make([]canvas.Commit, n)
	for i := range out {
		rev := head + int64(i) + 1
		id := fmt.Sprintf("shape:%s-%d", actor, rev)
		val, _ := json.Marshal(map[string]any{"id": id, "type": "geo", "x": rev})
		out[i] = canvas.Commit{
			CanvasID: canvasID, EventID: fmt.Sprintf("%d-%s", rev, randHex(4)), Rev: rev,
			CmdID: fmt.Sprintf("cmd_%s_%d", actor, rev), Type: "create_shape",
			Args:    json.RawMessage(fmt.Sprintf(`{"type":"geo","x":%d}`, rev)),
			ActorID: actor, ActorType: canvas.ActorService, TS: time.Now().UTC().Truncate(time.Microsecond),
			Changes: []canvas.Change{{Op: canvas.OpPut, Kind: canvas.KindNode, ID: id, Value: val}},
		}
	}
	return out
}

func mustCreateCanvas(tb testing.TB, s *Store, id string) {
	tb.Helper()
	if err := s.CreateCanvas(context.Background(), canvas.Canvas{ID: id, Title: id, CreatedAt: time.Now()}); err != nil {
		tb.Fatalf("CreateCanvas(%s): %v", id, err)
	}
}
