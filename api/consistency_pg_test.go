package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/canvasd/canvasd/hub"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/pgstore"
	"github.com/canvasd/canvasd/store/pgstore/faultproxy"
)

// deafListener is a PostgreSQL store whose Listen delivers no notice: a
// server process whose commit notifications are late (here: never).
type deafListener struct{ *pgstore.Store }

func (d deafListener) Listen(ctx context.Context, _ func(string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// Capabilities names d, not the store inside it, as the engine's Notifier.
func (d deafListener) Capabilities() store.Capabilities {
	c := d.Store.Capabilities()
	c.Notifier = d
	return c
}

// TestReadsLinearizableAcrossServers: two servers on one database; B never
// hears of A's commits. A snapshot, an events page, a document read and a
// stream resume on B after A acknowledged a commit all show it;
// ?consistency=local answers from B's copy, which trails; another value is
// a 400.
func TestReadsLinearizableAcrossServers(t *testing.T) {
	dbURL, schema := pgTestSchema(t)
	a := newPGTestEnv(t, dbURL, schema)
	bst, err := pgstore.Open(context.Background(), dbURL, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	b := newTestEnvHub(t, deafListener{bst}, hub.Config{Broadcaster: bst})
	id := a.canvas("c_lin")
	b.snapshot(id) // B holds the canvas at rev 0
	for i := range 3 {
		m := a.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin,
			env("create_node", 0, map[string]any{"id": fmt.Sprint("d", i), "type": "doc", "props": map[string]any{"text": fmt.Sprintf("line %d\n", i)}}))
		rev, evt := m["current_rev"].(float64), m["event_id"].(string)
		if i == 0 {
			local := b.must(200, "GET", "/canvas_commands/snapshot/"+id+"?consistency=local", testAdmin, nil)
			if local["head_rev"].(float64) != 0 {
				t.Errorf("a local snapshot on B: head %v, want its copy's 0", local["head_rev"])
			}
		}
		if s := b.snapshot(id); s["head_rev"] != rev || s["head_event_id"] != evt {
			t.Errorf("snapshot on B after A acknowledged rev %v: head %v %v", rev, s["head_rev"], s["head_event_id"])
		}
		m = a.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 0, map[string]any{"name": "n"}))
		rev = m["current_rev"].(float64)
		if ev := b.must(200, "GET", fmt.Sprintf("/canvas_commands/%s/events?after_rev=%d", id, int(rev)-1), testAdmin, nil); ev["head_rev"] != rev || len(ev["commits"].([]any)) != 1 {
			t.Errorf("events on B after A acknowledged rev %v: %v", rev, ev)
		}
		doc := fmt.Sprint("e", i)
		a.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin,
			env("create_node", 0, map[string]any{"id": doc, "type": "doc", "props": map[string]any{"text": "fresh\n"}}))
		if d := b.must(200, "GET", "/api/canvases/"+id+"/docs/"+doc, testAdmin, nil); !strings.Contains(fmt.Sprint(d), "fresh") {
			t.Errorf("document read on B: %v", d)
		}
		m = a.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 0, map[string]any{"name": "n"}))
		s := b.stream("/sse/canvas/"+id, testAdmin, map[string]string{"Last-Event-ID": fmt.Sprint(int(m["current_rev"].(float64)) - 1)})
		if c := s.next(); c.Event != "canvas_commit" || c.ID != m["event_id"] {
			t.Errorf("stream resume on B: %+v, want the commit %v", c, m["event_id"])
		}
		s.close()
	}
	p := b.must(400, "GET", "/canvas_commands/snapshot/"+id+"?consistency=eventual", testAdmin, nil)
	if p["field"] != "consistency" {
		t.Errorf("consistency=eventual: %v", p)
	}
}

// TestServerCutOffFromTheDatabase: a server that cannot reach the database
// answers a read with 503 and Retry-After (a local read from its copy), a
// stream resume with 503 (it was a reset to its stale head, tens of
// revisions behind the client), and a write with 503 within the store
// timeout; once the database is back it answers everything acknowledged.
func TestServerCutOffFromTheDatabase(t *testing.T) {
	dbURL, schema := pgTestSchema(t)
	a := newPGTestEnv(t, dbURL, schema)
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	u, _ := url.Parse(dbURL)
	u.Host = proxy.Addr()
	const op = 500 * time.Millisecond
	bst, err := pgstore.Open(context.Background(), u.String(), pgstore.WithSchema(schema), pgstore.WithOpTimeout(op))
	if err != nil {
		t.Fatal(err)
	}
	b := newTestEnvHub(t, bst, hub.Config{Broadcaster: bst})
	id := a.canvas("c_cut")
	b.snapshot(id)
	proxy.Cut()
	var last map[string]any
	for range 5 { // A goes on; B does not hear of it
		last = a.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 0, map[string]any{"name": "n"}))
	}
	for _, path := range []string{"/canvas_commands/snapshot/" + id, "/canvas_commands/" + id + "/events", "/sse/canvas/" + id} {
		start := time.Now()
		r := b.do("GET", path, testAdmin, nil)
		if r.Status != 503 || r.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s on a server cut off: %d (Retry-After %q) %s; want 503 with Retry-After", path, r.Status, r.Header.Get("Retry-After"), r.Body)
		}
		if d := time.Since(start); d > op+time.Second {
			t.Errorf("GET %s on a server cut off took %v", path, d)
		}
	}
	// A client that saw A's last commit resumes on B: 503, not a reset to B's stale head.
	if status, body := getWith(t, b, "/sse/canvas/"+id, map[string]string{"Last-Event-ID": last["event_id"].(string)}); status != 503 {
		t.Errorf("stream resume on a server cut off: %d %.200s; want 503", status, body)
	}
	if s := b.must(200, "GET", "/canvas_commands/snapshot/"+id+"?consistency=local", testAdmin, nil); s["head_rev"].(float64) != 0 {
		t.Errorf("a local snapshot on a server cut off: head %v, want its copy's 0", s["head_rev"])
	}
	start := time.Now()
	if r := b.command(id, testAdmin, env("create_node", 0, map[string]any{"name": "n"})); r.Status != 503 {
		t.Errorf("a write on a server cut off: %d %s", r.Status, r.Body)
	}
	if d := time.Since(start); d > op+300*time.Millisecond {
		t.Errorf("a write on a server cut off was answered after %v, want ≤ the store timeout %v", d, op)
	}
	proxy.Restore()
	waitUntil(t, 15*time.Second, "B reaches the database again", func() bool {
		return b.do("GET", "/canvas_commands/snapshot/"+id, testAdmin, nil).Status == 200
	})
	if s := b.snapshot(id); s["head_rev"] != last["current_rev"] {
		t.Errorf("snapshot on B once the database is back: head %v, want %v", s["head_rev"], last["current_rev"])
	}
}

// getWith sends a GET with the admin token and headers, checks the answer
// against openapi.yaml and returns its status and (a stream's first bytes
// aside) body.
func getWith(t *testing.T, e *testEnv, path string, header map[string]string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, nil
	}
	body, _ := io.ReadAll(resp.Body)
	checkResponse(t, e.spec, req, resp, body)
	return resp.StatusCode, body
}
