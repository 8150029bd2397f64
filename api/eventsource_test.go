package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestEventSourceNeverLoopsOnAReset drives Chromium's own EventSource, which
// reconnects by itself with the last id it saw, against the canvas stream:
//
//   - "stale": a resume that cannot be served (an id this canvas never had)
//     is reset with the head's event id, so the EventSource reconnects from
//     the head and catches up (without an id in the reset it came back every
//     3 s with the same id, to be reset again, for ever);
//   - "deleted": the stream of a deleted canvas ends with a reset and the
//     reconnect is a 404, so the EventSource stops (readyState CLOSED);
//   - "recreated": a canvas deleted and created again under its id is
//     followed from its first commit, not resumed at a revision of the old.
func TestEventSourceNeverLoopsOnAReset(t *testing.T) {
	e := newTestEnv(t)
	for _, id := range []string{"stale", "deleted", "recreated"} {
		e.canvas(id)
		for i := range 3 {
			e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", int64(i), map[string]any{"name": "n"}))
		}
	}
	p := uiBrowser(t, 60*time.Second)(e.srv.URL + "/healthz")
	open := func(name, query string) {
		p.eval(fmt.Sprintf(`(() => {
			const log = window.log = window.log || {};
			const l = log[%[1]q] = [];
			const es = new EventSource("/sse/canvas/%[1]s?access_token=%[2]s%[3]s");
			(window.es = window.es || {})[%[1]q] = es;
			for (const ev of ["canvas_commit", "caught_up", "reset"]) {
				es.addEventListener(ev, (m) => l.push(ev + " " + m.lastEventId + " " + (ev === "canvas_commit" ? JSON.parse(m.data).rev : m.data)));
			}
			es.onerror = () => l.push("error " + es.readyState);
			return true;
		})()`, name, url.QueryEscape(testAdmin), query), nil)
	}
	events := func(name string) []string {
		var out []string
		p.eval(fmt.Sprintf(`window.log[%q]`, name), &out)
		return out
	}
	count := func(evs []string, prefix string) int {
		n := 0
		for _, ev := range evs {
			if strings.HasPrefix(ev, prefix) {
				n++
			}
		}
		return n
	}

	open("stale", "&last_event_id=999-0123456789ab")
	open("deleted", "")
	open("recreated", "")
	p.poll("the live streams caught up", `window.log.deleted.some(e => e.startsWith("caught_up")) && window.log.recreated.some(e => e.startsWith("caught_up"))`)
	e.must(204, "DELETE", "/api/canvases/deleted", testAdmin, nil)
	e.must(204, "DELETE", "/api/canvases/recreated", testAdmin, nil)
	e.canvas("recreated")
	fresh := e.must(200, "POST", "/canvas_commands/recreated/command", testAdmin, env("create_node", 0, map[string]any{"name": "new"}))

	// An EventSource reconnects about 3 s after its stream ends.
	p.pollFor(30*time.Second, "the stale resume caught up after one reset",
		`window.log.stale.some(e => e.startsWith("caught_up"))`)
	p.pollFor(30*time.Second, "the deleted canvas's EventSource stopped", `window.es.deleted.readyState === 2`)
	p.pollFor(30*time.Second, "the recreated canvas's stream caught up again",
		`window.log.recreated.filter(e => e.startsWith("caught_up")).length === 2`)

	stale := events("stale")
	if count(stale, "reset") != 1 || !strings.HasPrefix(stale[0], "reset 3-") {
		t.Errorf("stale resume: %q; want one reset whose id is the head's event id (3-...), then caught_up", stale)
	}
	deleted := events("deleted")
	if count(deleted, "reset") != 1 || count(deleted, "caught_up") != 1 {
		t.Errorf("deleted canvas: %q; want caught_up, one reset, then the EventSource closed", deleted)
	}
	recreated := events("recreated")
	want := "canvas_commit " + fresh["event_id"].(string) + " 1"
	if count(recreated, "reset") != 1 || !strings.Contains(strings.Join(recreated, "\n"), want) {
		t.Errorf("recreated canvas: %q; want one reset, then the new canvas's first commit (%s) and caught_up", recreated, want)
	}
	var reset map[string]any
	for _, ev := range recreated {
		if rest, ok := strings.CutPrefix(ev, "reset 0 "); ok {
			_ = json.Unmarshal([]byte(rest), &reset)
		}
	}
	if reset == nil {
		t.Errorf("recreated canvas: the deletion's reset does not carry the id 0: %q", recreated)
	}
}
