package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
)

// endsWithDeletion reads s up to its reset, which must say the canvas was
// deleted and carry the last revision the stream sent, and then requires the
// stream to end (no heartbeat forever, no commit of a canvas created again).
func endsWithDeletion(t *testing.T, e *testEnv, s *sseStream, path string, headRev float64) {
	t.Helper()
	m := untilEvent(t, s, canvas.EventReset)
	checkSSEEvent(t, e.spec, path, m.Event, m.ID, m.Data)
	if r := m.json(t); r["head_rev"] != headRev || !strings.Contains(r["reason"].(string), "deleted") {
		t.Fatalf("%s: reset %v, want head_rev %v and a reason saying the canvas was deleted", path, r, headRev)
	}
	endsAfterReset(t, s, path)
}

// endsAfterReset requires stream s (of path) to end within 5 s, with no
// event but heartbeats: what follows a reset that ends a stream.
func endsAfterReset(t *testing.T, s *sseStream, path string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case m, ok := <-s.events:
			if !ok {
				return
			}
			if m.Event != "comment" {
				t.Fatalf("%s: %s %s after the reset that ends the stream", path, m.Event, m.Data)
			}
		case <-deadline:
			t.Fatalf("%s: the stream did not end within 5s of its reset", path)
		}
	}
}

// wantStreamGone requires GET path (a canvas stream) to be a 404 problem, and
// fails rather than hangs when a stream opens instead.
func wantStreamGone(t *testing.T, e *testEnv, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET %s: %d, want 404: the deleted canvas is still served", path, resp.StatusCode)
	}
	body, _ := io.ReadAll(resp.Body)
	checkResponse(t, e.spec, req, resp, body)
}

// TestDeleteCanvasEndsItsStreams: DELETE /api/canvases/{id} ends every stream
// of the canvas with a reset saying so (live and declared-browser streams,
// whichever fan-out shard they are on), the canvas then answers 404, and a
// canvas created again under the same id is followed by new streams only,
// from its revision 1; streams of other canvases go on.
func TestDeleteCanvasEndsItsStreams(t *testing.T) {
	e := newTestEnv(t)
	id, other := e.canvas("c_deleted"), e.canvas("c_kept")
	for i := int64(0); i < 3; i++ {
		e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", i, map[string]any{"name": "old"}))
	}
	paths := []string{
		"/sse/canvas/" + id,
		"/sse/canvas/" + id + "?last_event_id=1",
		browserPath(id, "tab-1", "screenshot"),
		browserPath(id, "tab-2", ""),
	}
	var streams []*sseStream
	for _, p := range paths {
		s := e.stream(p, testAdmin, nil)
		untilEvent(t, s, canvas.EventCaughtUp)
		streams = append(streams, s)
	}
	if got := e.api.hub.Host(id); got != "tab-1" {
		t.Fatalf("host %q, want tab-1", got)
	}
	kept := e.stream("/sse/canvas/"+other, testAdmin, nil)
	untilEvent(t, kept, canvas.EventCaughtUp)

	e.must(204, "DELETE", "/api/canvases/"+id, testAdmin, nil)
	for i, s := range streams {
		endsWithDeletion(t, e, s, paths[i], 3)
	}
	waitUntil(t, 5*time.Second, "the deleted canvas's streams are unsubscribed", func() bool { return e.api.hub.Subscribers(id) == 0 })
	if got := e.api.hub.Host(id); got != "" {
		t.Fatalf("the deleted canvas still has host %q", got)
	}
	e.must(404, "GET", "/api/canvases/"+id, testAdmin, nil)
	wantStreamGone(t, e, "/sse/canvas/"+id)

	// Created again: a new stream sees its commits from revision 1, in order.
	e.canvas(id)
	fresh := e.stream("/sse/canvas/"+id, testAdmin, nil)
	if m := untilEvent(t, fresh, canvas.EventCaughtUp); m.json(t)["head_rev"] != 0.0 {
		t.Fatalf("caught_up of the new canvas %s", m.Data)
	}
	for i := int64(0); i < 4; i++ {
		e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", i, map[string]any{"name": "new"}))
	}
	for rev := 1.0; rev <= 4; rev++ {
		if m := fresh.next(); m.Event != canvas.EventCommit || m.json(t)["rev"] != rev {
			t.Fatalf("new canvas: want commit %v, got %s %s", rev, m.Event, m.Data)
		}
	}
	// The other canvas's stream was not touched.
	e.must(200, "POST", "/canvas_commands/"+other+"/command", testAdmin, env("create_node", 0, map[string]any{"name": "x"}))
	if m := kept.next(); m.Event != canvas.EventCommit || m.json(t)["rev"] != 1.0 {
		t.Fatalf("other canvas: %s %s", m.Event, m.Data)
	}
}

// TestDeleteCanvasEndsStreamsAcrossProcessesPG: a canvas deleted through one
// process ends its streams on the other processes sharing the database too
// (through the relay), and those processes answer 404 for it from then on
// (their engines drop it), also on a new stream.
func TestDeleteCanvasEndsStreamsAcrossProcessesPG(t *testing.T) {
	url, schema := pgTestSchema(t)
	a := newPGTestEnv(t, url, schema)
	b := newPGTestEnv(t, url, schema)
	id := a.canvas("c_deleted")
	for i := int64(0); i < 2; i++ {
		a.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", i, map[string]any{"name": "old"}))
	}
	sa := a.stream("/sse/canvas/"+id, testAdmin, nil)
	sb := b.stream("/sse/canvas/"+id, testAdmin, nil)
	caughtUp(t, sa)
	caughtUp(t, sb)
	waitSubscribers(t, a, id, 2)

	a.must(204, "DELETE", "/api/canvases/"+id, testAdmin, nil)
	endsWithDeletion(t, a, sa, "/sse/canvas/"+id, 2)
	endsWithDeletion(t, b, sb, "/sse/canvas/"+id, 2)
	wantStreamGone(t, b, "/sse/canvas/"+id)
	b.must(404, "GET", "/canvas_commands/snapshot/"+id, testAdmin, nil)

	// Created again through A: B serves the new canvas, not its old copy.
	a.canvas(id)
	a.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 0, map[string]any{"name": "new"}))
	snap := b.snapshot(id)
	if snap["head_rev"] != 1.0 || len(snap["state"].(map[string]any)["nodes"].([]any)) != 1 {
		t.Fatalf("process b serves %v, want the new canvas at revision 1", snap)
	}
}

// terminateListeners ends the LISTEN connections of the stores on schema,
// as a network blip would; the stores reconnect by themselves.
func terminateListeners(t *testing.T, schema string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), os.Getenv("CANVASD_TEST_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN%' AND query LIKE '%' || $1 || '%'`, schema).Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminating the listeners of %s: %d, %v", schema, n, err)
	}
}

// TestDeleteMissedWhileListenerDownPG: a deletion whose notice process b
// missed (its listener was reconnecting) is found when b catches up: b
// answers 404 and ends the canvas's streams. A canvas deleted and created
// again under its id while b missed both is found too: b ends the old
// copy's streams, then serves and writes the new canvas.
func TestDeleteMissedWhileListenerDownPG(t *testing.T) {
	url, schema := pgTestSchema(t)
	a := newPGTestEnv(t, url, schema)
	b := newPGTestEnv(t, url, schema)
	seed := func(id string) *sseStream {
		a.canvas(id)
		for i := int64(0); i < 2; i++ {
			a.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", i, map[string]any{"name": "old"}))
		}
		s := b.stream("/sse/canvas/"+id, testAdmin, nil)
		caughtUp(t, s)
		return s
	}
	deleted, remade := seed("c_missed"), seed("c_remade")

	terminateListeners(t, schema)
	a.must(204, "DELETE", "/api/canvases/c_missed", testAdmin, nil)
	a.must(204, "DELETE", "/api/canvases/c_remade", testAdmin, nil)
	a.canvas("c_remade") // with more commits than b's copy: b must not read them onto it
	for i := int64(0); i < 3; i++ {
		a.must(200, "POST", "/canvas_commands/c_remade/command", testAdmin, env("create_node", i, map[string]any{"name": "new"}))
	}

	endsWithDeletion(t, b, deleted, "/sse/canvas/c_missed", 2)
	b.must(404, "GET", "/canvas_commands/snapshot/c_missed", testAdmin, nil)
	endsWithDeletion(t, b, remade, "/sse/canvas/c_remade", 2)
	snap := b.snapshot("c_remade")
	if nodes := snap["state"].(map[string]any)["nodes"].([]any); snap["head_rev"] != 3.0 || len(nodes) != 3 || strings.Contains(fmt.Sprint(nodes), "old") {
		t.Fatalf("b serves %v, want the new canvas: 3 new nodes at revision 3", snap)
	}
	b.must(200, "POST", "/canvas_commands/c_remade/command", testAdmin, env("create_node", 3, map[string]any{"name": "from b"}))
}
