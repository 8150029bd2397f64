package api

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// flakyStore is a SQLite store whose next Append fails as a remote
// database can: before writing (nothing written), or after committing with
// the answer lost (outcome unknown).
type flakyStore struct {
	*sqlitestore.Store
	mu   sync.Mutex
	next string // "", "not-written", "committed-unknown", "unknown", "unmarked"
}

func (f *flakyStore) failNext(mode string) {
	f.mu.Lock()
	f.next = mode
	f.mu.Unlock()
}

func (f *flakyStore) Append(ctx context.Context, canvasID string, head int64, commits []canvas.Commit, idem []store.IdempotencyRecord) error {
	f.mu.Lock()
	mode := f.next
	f.next = ""
	f.mu.Unlock()
	switch mode {
	case "not-written":
		return fmt.Errorf("test: connection refused: %w: %w", canvas.ErrUnavailable, canvas.ErrNotWritten)
	case "unmarked": // an I/O error at commit: the store cannot say
		return fmt.Errorf("test: disk I/O error: %w", canvas.ErrUnavailable)
	case "unknown":
		return fmt.Errorf("test: answer lost: %w: %w", canvas.ErrUnavailable, canvas.ErrOutcomeUnknown)
	case "committed-unknown":
		if err := f.Store.Append(ctx, canvasID, head, commits, idem); err != nil {
			return err
		}
		return fmt.Errorf("test: committed, answer lost: %w: %w", canvas.ErrUnavailable, canvas.ErrOutcomeUnknown)
	}
	return f.Store.Append(ctx, canvasID, head, commits, idem)
}

// TestUnavailableSaysWhatItKnows: a 503 for a command says whether it was
// written. Nothing written: type unavailable, outcome not_written. Sent but
// not confirmed: type outcome-unknown, outcome unknown, and a detail telling
// the client to retry with the same idempotency key; that retry returns the
// original answer when the command had in fact committed, and writes
// nothing more.
func TestUnavailableSaysWhatItKnows(t *testing.T) {
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "canvasd.db"))
	if err != nil {
		t.Fatal(err)
	}
	f := &flakyStore{Store: st}
	e := newTestEnvOn(t, f)
	id := e.canvas("c1")
	head := func() float64 { return e.snapshot(id)["head_rev"].(float64) }
	cmd := func(key, node string) map[string]any {
		return map[string]any{"type": "create_node", "base_rev": 0, "idempotency_key": key, "args": map[string]any{"id": node, "name": node}}
	}
	check := func(r response, slug, outcome, detail string) {
		t.Helper()
		if r.Status != 503 {
			t.Fatalf("status %d, want 503: %s", r.Status, r.Body)
		}
		p := r.json(t)
		if p["type"] != problemBase+slug || p["outcome"] != outcome {
			t.Errorf("problem %s, want type %s and outcome %q", r.Body, slug, outcome)
		}
		if d, _ := p["detail"].(string); !strings.Contains(d, detail) {
			t.Errorf("detail %q does not say %q", d, detail)
		}
		if r.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
	}
	before := head()
	f.failNext("not-written")
	check(e.command(id, testAdmin, cmd("k1", "a")), "unavailable", "not_written", "nothing was written")
	if h := head(); h != before {
		t.Fatalf("head %v → %v after a not-written 503", before, h)
	}
	f.failNext("unknown")
	check(e.command(id, testAdmin, cmd("k2", "b")), "outcome-unknown", "unknown", "same idempotency_key")
	if h := head(); h != before {
		t.Fatalf("head %v → %v after an unknown outcome that did not commit", before, h)
	}
	// A store that cannot say whether its append happened: unknown, never
	// "nothing was written".
	f.failNext("unmarked")
	check(e.command(id, testAdmin, cmd("k2", "b")), "outcome-unknown", "unknown", "same idempotency_key")
	// It did commit, the answer was lost: readers see the commit once the
	// canvas has read its log again (with no further write), and the retry
	// replays it.
	f.failNext("committed-unknown")
	check(e.command(id, testAdmin, cmd("k3", "c")), "outcome-unknown", "unknown", "outcome is unknown")
	for pl := newPoller(10*time.Second, 20*time.Millisecond); head() != before+1; pl.wait() {
		if pl.expired() {
			t.Fatalf("head %v 10 s after an unknown outcome that committed, want %v", head(), before+1)
		}
	}
	r := e.command(id, testAdmin, cmd("k3", "c"))
	if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after a committed unknown outcome: %d %s (Idempotent-Replayed %q), want the replayed answer", r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
	}
	if h := head(); h != before+1 {
		t.Fatalf("head %v → %v: want exactly one commit for k3", before, h)
	}
	// The retries of the others apply them now, once.
	for _, k := range []string{"k1", "k2"} {
		node := map[string]string{"k1": "a", "k2": "b"}[k]
		if r := e.command(id, testAdmin, cmd(k, node)); r.Status != 200 || r.Header.Get("Idempotent-Replayed") == "true" {
			t.Fatalf("retry of %s: %d %s", k, r.Status, r.Body)
		}
	}
	if h := head(); h != before+3 {
		t.Fatalf("head %v, want %v", h, before+3)
	}

	// An MCP tool call: the tool error carries the advice, and when the call
	// had no idempotency_key it says to read the canvas first instead.
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin,
		map[string]any{"type": "create_node", "base_rev": 0, "args": map[string]any{"id": "doc", "type": "doc", "props": map[string]any{"text": "one\n"}}})
	insert := func(key string) string {
		f.failNext("unknown")
		extra := ""
		if key != "" {
			extra = `,"idempotency_key":"` + key + `"`
		}
		_, _, body := mcpPost(t, e, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"canvas_insert_lines","arguments":{"canvas_id":"`+id+
			`","node_id":"doc","insert_after_line":0,"content":"zero"`+extra+`}}}`, "application/json", "application/json, text/event-stream", "")
		return string(body)
	}
	if b := insert(""); !strings.Contains(b, `"isError":true`) || !strings.Contains(b, "carried no idempotency_key") || !strings.Contains(b, "canvas_get_state") {
		t.Errorf("MCP without a key after an unknown outcome: %s", b)
	}
	if b := insert("mk1"); !strings.Contains(b, `"isError":true`) || !strings.Contains(b, "same idempotency_key") || strings.Contains(b, "carried no idempotency_key") {
		t.Errorf("MCP with a key after an unknown outcome: %s", b)
	}
}
