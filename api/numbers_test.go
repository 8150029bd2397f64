package api

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// TestNumbersComeBackExactly: numbers in props came back through float64
// (1795461385736852721 as 1795461385736852700). They come back as sent in
// the snapshot, changes (value and patch), events, SSE, time travel, and
// after a restart that loads a stored state snapshot, whose undo history
// restores them exactly too; on both stores.
func TestNumbersComeBackExactly(t *testing.T) {
	// (props.meta: the client's own data, kept verbatim; opacity: a number of the model)
	const props = `{"opacity":0.50,"meta":{"big":1795461385736852721,"neg":-9007199254740993,"pi":3.141592653589793238462643383279,` +
		`"huge":1e400,"dec":0.10,"tiny":1E-7,"deep":{"list":[1795461385736852721]}}}`
	// The state's props as the server encodes them (keys sorted): in
	// snapshots and in changes[].value, unlike args, which are kept as sent.
	state := func(big string) string {
		return `"props":{"meta":{"big":` + big + `,"dec":0.10,"deep":{"list":[1795461385736852721]},"huge":1e400,` +
			`"neg":-9007199254740993,"pi":3.141592653589793238462643383279,"tiny":1E-7},"opacity":0.50}`
	}
	first, second := state("1795461385736852721"), state("1795461385736852723")
	const patch = `"patch":{"props":{"meta":{"big":1795461385736852723}}}`
	has := func(t *testing.T, where string, body []byte, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s lacks %s: %.600s", where, w, body)
			}
		}
	}
	run := func(t *testing.T, e *testEnv, reopen func() *testEnv) {
		id := e.canvas("c_numbers")
		editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman, id)
		sse := e.stream("/sse/canvas/"+id, testAdmin, nil)
		if m := sse.next(); m.Event != "caught_up" {
			t.Fatalf("stream starts with %+v", m)
		}
		e.must(200, "POST", "/canvas_commands/"+id+"/command", editor,
			`{"type":"create_node","base_rev":0,"args":{"id":"n1","name":"n","props":`+props+`}}`)
		e.must(200, "POST", "/canvas_commands/"+id+"/command", editor,
			`{"type":"update_node","base_rev":1,"args":{"id":"n1","props":{"meta":{"big":1795461385736852723}}}}`)

		has(t, "snapshot", e.do("GET", "/canvas_commands/snapshot/"+id, testAdmin, nil).Body, second)
		has(t, "snapshot at_rev=1", e.do("GET", "/canvas_commands/snapshot/"+id+"?at_rev=1", testAdmin, nil).Body, first)
		has(t, "events", e.do("GET", "/canvas_commands/"+id+"/events?after_rev=0", testAdmin, nil).Body, first, patch)
		has(t, "SSE commit 1", []byte(sse.next().Data), first)
		has(t, "SSE commit 2", []byte(sse.next().Data), patch)
		_, _, mcpState := mcpPost(t, e, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"canvas_get_state","arguments":{"canvas_id":"`+id+`"}}}`,
			"application/json", "application/json, text/event-stream", "")
		has(t, "MCP canvas_get_state", mcpState, second)

		// Enough commits for a stored state snapshot, then a restart that loads it.
		cmds := make([]string, 1000)
		for i := range cmds {
			cmds[i] = fmt.Sprintf(`{"type":"create_node","base_rev":%d,"args":{"name":"filler %d"}}`, 2+i, i)
		}
		e.must(200, "POST", "/canvas_commands/"+id+"/commands", testAdmin, `{"base_rev":2,"commands":[`+strings.Join(cmds, ",")+`]}`)
		pl := newPoller(30*time.Second, 20*time.Millisecond)
		for {
			snap, err := e.st.LoadStateSnapshot(context.Background(), id, 1<<62)
			if err == nil && snap.Rev >= 1000 {
				break
			}
			if pl.expired() {
				t.Fatalf("no state snapshot stored after 1002 commits: %v", err)
			}
			pl.wait()
		}
		e2 := reopen()
		has(t, "snapshot after restart", e2.do("GET", "/canvas_commands/snapshot/"+id, testAdmin, nil).Body, second)
		has(t, "events after restart", e2.do("GET", "/canvas_commands/"+id+"/events?after_rev=0&limit=2", testAdmin, nil).Body, first, patch)
		has(t, "snapshot at_rev=1 after restart", e2.do("GET", "/canvas_commands/snapshot/"+id+"?at_rev=1", testAdmin, nil).Body, first)
		// The editor's undo history came back from the stored snapshot.
		e2.must(200, "POST", "/canvas_commands/"+id+"/command", editor, `{"type":"undo","base_rev":1002}`)
		has(t, "snapshot after undo", e2.do("GET", "/canvas_commands/snapshot/"+id, testAdmin, nil).Body, first)
	}
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "canvasd.db")
		open := func() *testEnv {
			st, err := sqlitestore.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			return newTestEnvOn(t, st)
		}
		run(t, open(), open)
	})
	t.Run("postgres", func(t *testing.T) {
		url, schema := pgTestSchema(t)
		run(t, newPGTestEnv(t, url, schema), func() *testEnv { return newPGTestEnv(t, url, schema) })
	})
}
