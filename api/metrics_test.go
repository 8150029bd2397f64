package api

import (
	"fmt"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// TestMetricLabelsAreBounded: canvas_commands_total's type label takes only
// the verbs the reducer knows, "batch" and "other": an editor sending junk
// command types cannot grow the family (it grew from 25 to 225 series with
// 200 junk types).
func TestMetricLabelsAreBounded(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_metrics")
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	const junk = 40
	for i := range junk {
		if r := e.command(id, editor, env(fmt.Sprintf("junk_%d", i), 0, map[string]any{})); r.Status != 422 {
			t.Fatalf("junk type: %d %s", r.Status, r.Body)
		}
	}
	e.must(200, "POST", "/canvas_commands/"+id+"/command", editor, env("create_node", 0, map[string]any{"name": "n"}))
	e.must(200, "POST", "/canvas_commands/"+id+"/commands", editor,
		map[string]any{"base_rev": 1, "commands": []any{env("create_node", 1, map[string]any{"name": "m"})}})

	allowed := map[string]bool{"batch": true, "other": true}
	for _, v := range reducer.CommandTypes() {
		allowed[v] = true
	}
	// The engine counts a command once it has answered it: the counts are
	// read until they are whole.
	var counts map[string]float64
	whole := func() bool {
		fams, err := e.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		counts = map[string]float64{}
		for _, f := range fams {
			if f.GetName() != "canvas_commands_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "type" {
						counts[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		}
		return counts["other"] == junk && counts["create_node"] == 1 && counts["batch"] == 1
	}
	waitUntil(t, 10*time.Second, fmt.Sprintf("canvas_commands_total counts other=%d, create_node=1, batch=1", junk), whole)
	for v := range counts {
		if !allowed[v] {
			t.Errorf("canvas_commands_total has type %q, not a known verb, batch or other", v)
		}
	}
}
