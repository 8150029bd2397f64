package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// The same todo text twice in a session is one row; the model marking it
// done resolves that row. Each turn lists the revisions it made.
func TestAgentTodosByTextAndTurns(t *testing.T) {
	model := newFakeOpenAI(t,
		scriptedReply{chunks: chunked(actionsJSON(
			`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"a"}}}`,
			`{"name":"todo","params":{"text":"Add a footer"}}`,
			`{"name":"todo","params":{"text":"Add a footer"}}`,
			`{"name":"add_detail","params":{"hint":"the footer"}}`), 19)},
		scriptedReply{chunks: chunked(actionsJSON(
			`{"name":"create_shape","params":{"type":"note","x":0,"y":400,"props":{"text":"footer"}}}`,
			`{"name":"create_shape","params":{"type":"note","x":300,"y":400,"props":{"text":"more"}}}`,
			`{"name":"todo","params":{"text":"Add a footer","status":"done"}}`,
			`{"name":"todo","params":{"text":"Polish","status":"skipped"}}`), 23)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.LowActionThreshold = 0 })
	e.newCanvas("td")
	sess := e.run(client.AgentRunRequest{RoomID: "td", Message: "a poster with a footer"})
	if sess.State != client.AgentDone {
		t.Fatalf("session %s: %s", sess.State, sess.Detail)
	}
	if len(sess.Todos) != 2 {
		t.Fatalf("todos %+v; want one row per text", sess.Todos)
	}
	footer, polish := sess.Todos[0], sess.Todos[1]
	if footer.Text != "Add a footer" || footer.Status != canvas.TodoDone || footer.ResolvedAt == nil || footer.Position != 0 ||
		polish.Text != "Polish" || polish.Status != canvas.TodoSkipped || polish.ResolvedAt == nil {
		t.Fatalf("todos %+v", sess.Todos)
	}
	if p, _ := model.requests()[1].last(); !strings.Contains(p, "Add a footer") {
		t.Errorf("the follow-up prompt does not list the open todo: %.300s", p)
	}
	if len(sess.Turns) != 2 || sess.Turns[0].Kind != "initial" || sess.Turns[1].Kind != "followup" ||
		len(sess.Turns[0].Revs) != 1 || len(sess.Turns[1].Revs) != 2 || sess.Turns[1].EndedAt == nil {
		t.Fatalf("turns %+v", sess.Turns)
	}
	commits, err := e.admin.AllEvents(context.Background(), "td", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{sess.Turns[0].Revs[0], sess.Turns[1].Revs[0], sess.Turns[1].Revs[1]}
	if len(commits) != 3 {
		t.Fatalf("%d commits", len(commits))
	}
	for i, c := range commits {
		if c.Rev != want[i] || c.ActorID != e.agentActor {
			t.Errorf("commit %d: rev %d by %s; turns say rev %d", i, c.Rev, c.ActorID, want[i])
		}
	}
}

// A turn is reverted as one command by the person asking, and again after
// that person undid the revert; a turn whose shapes someone changed since
// is a 409 that reverts nothing.
func TestAgentRevertTurn(t *testing.T) {
	model := newFakeOpenAI(t,
		scriptedReply{chunks: chunked(actionsJSON(
			`{"name":"create_shape","params":{"id":"a","type":"geo","x":0,"y":0,"w":100,"h":100}}`,
			`{"name":"create_shape","params":{"id":"b","type":"geo","x":300,"y":0,"w":100,"h":100}}`,
			`{"name":"add_detail","params":{"hint":"colour"}}`), 29)},
		scriptedReply{chunks: chunked(actionsJSON(
			`{"name":"update_shape","params":{"id":"a","props":{"color":"red"}}}`,
			`{"name":"move","params":{"ids":["b"],"dx":50,"dy":0}}`), 29)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.LowActionThreshold = 0 })
	e.newCanvas("rv")
	ctx := context.Background()
	// Someone else's shape, there before the run, never touched by the revert.
	e.humanCommand("rv", "create_shape", 0, `{"id":"mine","type":"note","x":0,"y":900}`)
	sess := e.run(client.AgentRunRequest{RoomID: "rv", Message: "two boxes"})
	if len(sess.Turns) != 2 || len(sess.Turns[0].Revs) != 2 || len(sess.Turns[1].Revs) != 2 {
		t.Fatalf("turns %+v %+v", sess.Turns, sess.Transcript)
	}
	nodeByName := func(snap client.Snapshot) map[string]*canvas.Node {
		out := map[string]*canvas.Node{}
		for _, n := range snap.State.Nodes {
			switch {
			case n.ID == "mine":
				out["mine"] = n
			case n.X == 0 && n.Y == 0:
				out["a"] = n
			default:
				out["b"] = n
			}
		}
		return out
	}
	before := nodeByName(e.snapshot("rv"))
	if before["a"].Props["color"] != "red" || before["b"].X != 350 {
		t.Fatalf("after the run: a %+v b %+v", before["a"], before["b"])
	}
	head := e.snapshot("rv").HeadRev

	res, err := e.human.RevertAgentTurns(ctx, sess.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.CurrentRev != head+1 {
		t.Fatalf("revert: rev %d, want one commit at %d", res.CurrentRev, head+1)
	}
	after := nodeByName(e.snapshot("rv"))
	if _, red := after["a"].Props["color"]; red || after["b"].X != 300 || len(after) != 3 {
		t.Fatalf("after reverting turn 2: a %+v b %+v (%d nodes)", after["a"], after["b"], len(after))
	}
	commits, err := e.admin.AllEvents(ctx, "rv", head)
	if err != nil || len(commits) != 1 || commits[0].Type != "revert_commits" || commits[0].ActorID != e.humanActor {
		t.Fatalf("revert commits %+v %v", commits, err)
	}
	if s, err := e.human.AgentSession(ctx, sess.ID); err != nil || s.Turns[0].RevertedRev != nil ||
		s.Turns[1].RevertedRev == nil || *s.Turns[1].RevertedRev != res.CurrentRev {
		t.Fatalf("the session after reverting turn 2: turns %+v, %v; want turn 2 reverted at %d", s.Turns, err, res.CurrentRev)
	}
	// The person who reverted undoes it: turn 2's changes are back, and
	// naming turn 2 reverts it again, marked with the newer revision.
	undo := e.humanCommand("rv", "undo", res.CurrentRev, `{}`)
	if back := nodeByName(e.snapshot("rv")); back["a"].Props["color"] != "red" || back["b"].X != 350 {
		t.Fatalf("after undoing the revert: a %+v b %+v", back["a"], back["b"])
	}
	res, err = e.human.RevertAgentTurns(ctx, sess.ID, 2)
	if err != nil {
		t.Fatalf("turn 2 reverted again after its revert was undone: %v", err)
	}
	if res.CurrentRev != undo.CurrentRev+1 {
		t.Fatalf("second revert: rev %d, want one commit at %d", res.CurrentRev, undo.CurrentRev+1)
	}
	after = nodeByName(e.snapshot("rv"))
	if _, red := after["a"].Props["color"]; red || after["b"].X != 300 || len(after) != 3 {
		t.Fatalf("after reverting turn 2 again: a %+v b %+v (%d nodes)", after["a"], after["b"], len(after))
	}
	if s, err := e.human.AgentSession(ctx, sess.ID); err != nil || s.Turns[1].RevertedRev == nil || *s.Turns[1].RevertedRev != res.CurrentRev {
		t.Fatalf("the session after reverting turn 2 again: turns %+v, %v; want turn 2 reverted at %d", s.Turns, err, res.CurrentRev)
	}
	// Its changes are off the canvas now: naming it once more commits nothing.
	_, err = e.human.RevertAgentTurns(ctx, sess.ID, 2)
	var pe *client.ProblemError
	if !errors.As(err, &pe) || !errors.Is(err, canvas.ErrUnprocessable) || !strings.Contains(pe.Detail, "not on the canvas") {
		t.Fatalf("turn 2 reverted once more: %v, want a 422 saying its changes are not on the canvas", err)
	}
	if h := e.snapshot("rv").HeadRev; h != res.CurrentRev {
		t.Fatalf("the refused revert moved the head from %d to %d", res.CurrentRev, h)
	}

	// Someone moves b: turn 1 (which created b) can no longer be reverted.
	e.humanCommand("rv", "move", res.CurrentRev, `{"id":"`+after["b"].ID+`","x":700,"y":0}`)
	_, err = e.human.RevertAgentTurns(ctx, sess.ID, 1)
	var ce *client.ConflictError
	if !errors.As(err, &ce) || len(ce.Result.ConflictingIDs) != 1 || ce.Result.ConflictingIDs[0] != after["b"].ID || len(ce.Result.RecoveryOps) == 0 {
		t.Fatalf("revert after a change by someone else: %v", err)
	}
	if n := len(e.snapshot("rv").State.Nodes); n != 3 {
		t.Fatalf("a refused revert changed the canvas: %d nodes", n)
	}
	if _, err := e.human.RevertAgentTurns(ctx, sess.ID, 1, 9); !errors.Is(err, canvas.ErrUnprocessable) {
		t.Fatalf("revert of a missing turn: %v", err)
	}
	if n := len(e.snapshot("rv").State.Nodes); n != 3 {
		t.Fatalf("a refused revert changed the canvas: %d nodes", n)
	}
	// turn and turns together are refused.
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/canvas-agent/sessions/"+sess.ID+"/revert", strings.NewReader(`{"turn":1,"turns":[1]}`))
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("turn with turns: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// overlapping lists the pairs of nodes of a and b whose boxes overlap.
func overlapping(a, b []*canvas.Node) []string {
	var out []string
	for _, n := range a {
		for _, o := range b {
			if n.ID != o.ID && n.X < o.X+o.W && o.X < n.X+n.W && n.Y < o.Y+o.H && o.Y < n.Y+n.H {
				out = append(out, n.ID+"/"+o.ID)
			}
		}
	}
	return out
}

// The debug/fake poster never lands on shapes that were there before: it
// goes into free space near the viewport, keeping its own layout.
func TestAgentFakePosterAvoidsExistingShapes(t *testing.T) {
	e := newAgentEnv(t, nil, nil)
	e.newCanvas("fp")
	ctx := context.Background()
	// A person's shapes where the poster would go (the viewport's top left),
	// and a wall of them across the middle.
	rev := int64(0)
	for i, box := range [][4]float64{{60, 60, 500, 300}, {600, 250, 300, 300}, {0, 700, 1600, 120}, {1000, 0, 400, 600}} {
		args, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("mine%d", i), "type": "geo", "x": box[0], "y": box[1], "w": box[2], "h": box[3]})
		rr, err := e.human.Command(ctx, "fp", canvas.Envelope{Type: "create_shape", BaseRev: &rev, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		rev = rr.CurrentRev
	}
	before := e.snapshot("fp").State.Nodes
	sess := e.run(client.AgentRunRequest{RoomID: "fp", Message: "Draft a brutalist poster concept", Viewport: &client.Box{X: 0, Y: 0, W: 1600, H: 900}})
	if sess.State != client.AgentDone || sess.Stats.ActionsApplied != 6 {
		t.Fatalf("session %s %+v", sess.State, sess.Stats)
	}
	var made []*canvas.Node
	for _, n := range e.snapshot("fp").State.Nodes {
		if n.CreatedBy == e.agentActor {
			made = append(made, n)
		}
	}
	if len(made) != 6 {
		t.Fatalf("%d shapes made", len(made))
	}
	if o := overlapping(made, before); len(o) > 0 {
		t.Fatalf("the poster covers shapes that were there: %v", o)
	}
	// Its layout is intact: the support block sits 200 below the headline.
	var hero, support *canvas.Node
	for _, n := range made {
		switch n.Props["text"] {
		case "RAW / HONEST / LOUD":
			hero = n
		case "Concrete, exposed, unapologetic.":
			support = n
		}
	}
	if hero == nil || support == nil || support.X != hero.X || support.Y-hero.Y != 200 {
		t.Fatalf("poster layout: hero %+v support %+v", hero, support)
	}
}

// A model that ignores the free space and draws over a person's shape gets
// its shape moved, and the shapes after it follow by the same offset.
func TestAgentPlacementMovesOverlappingCreates(t *testing.T) {
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(
		`{"name":"create_shape","params":{"id":"a","type":"geo","x":100,"y":100,"w":200,"h":100}}`,
		`{"name":"create_shape","params":{"id":"b","type":"geo","x":100,"y":250,"w":200,"h":100}}`), 31)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.LowActionThreshold = 0 })
	e.newCanvas("pl")
	e.humanCommand("pl", "create_shape", 0, `{"id":"mine","type":"geo","x":50,"y":50,"w":400,"h":200}`)
	before := e.snapshot("pl").State.Nodes
	sess := e.run(client.AgentRunRequest{RoomID: "pl", Message: "two boxes", Viewport: &client.Box{X: 0, Y: 0, W: 1600, H: 900}})
	if sess.State != client.AgentDone {
		t.Fatalf("session %s", sess.State)
	}
	var made []*canvas.Node
	for _, n := range e.snapshot("pl").State.Nodes {
		if n.CreatedBy == e.agentActor {
			made = append(made, n)
		}
	}
	if len(made) != 2 || len(overlapping(made, before)) > 0 {
		t.Fatalf("made %d shapes, overlaps %v", len(made), overlapping(made, before))
	}
	if a, b := made[0], made[1]; b.X-a.X != 0 || b.Y-a.Y != 150 {
		t.Fatalf("the second box did not follow the first: a (%v,%v) b (%v,%v)", a.X, a.Y, b.X, b.Y)
	}
	if len(model.requests()) != 1 {
		t.Fatalf("%d model calls: placement leaves no lint to fix", len(model.requests()))
	}
}

// Overlapping shapes of the agent's own make a lint follow-up, whose fix
// ends the run.
func TestAgentLintFollowUpFixesOverlap(t *testing.T) {
	model := newFakeOpenAI(t,
		scriptedReply{chunks: chunked(actionsJSON(
			`{"name":"create_shape","params":{"id":"left","type":"geo","x":100,"y":100,"w":200,"h":100}}`,
			`{"name":"create_shape","params":{"id":"right","type":"geo","x":250,"y":120,"w":200,"h":100}}`), 29)},
		scriptedReply{chunks: chunked(actionsJSON(`{"name":"move","params":{"id":"right","x":340,"y":100}}`), 17)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.LowActionThreshold = 0 })
	e.newCanvas("li")
	sess := e.run(client.AgentRunRequest{RoomID: "li", Message: "two boxes side by side", Viewport: &client.Box{X: 0, Y: 0, W: 1600, H: 900}})
	if sess.State != client.AgentDone || sess.Stats.FollowUps != 1 || len(sess.Turns) != 2 || sess.Turns[1].Kind != "lint" {
		t.Fatalf("session %s stats %+v turns %+v", sess.State, sess.Stats, sess.Turns)
	}
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	p, _ := reqs[1].last()
	if !strings.Contains(p, "overlap:") || !strings.Contains(p, `(your "left")`) || !strings.Contains(p, `(your "right")`) {
		t.Fatalf("lint prompt:\n%s", p)
	}
	if tp := reqs[1].Temperature; tp == nil || *tp != 0 {
		t.Errorf("lint turn temperature %v, want 0 on the wire", tp)
	}
	nodes := e.snapshot("li").State.Nodes
	if len(nodes) != 2 || len(overlapping(nodes, nodes)) > 0 {
		t.Fatalf("after the fix: %d nodes, overlaps %v", len(nodes), overlapping(nodes, nodes))
	}
}

// The server records which turns a revert took (reverted_rev, on both
// stores): a revert without a body takes the turns left, reverting
// reverted turns whose changes are off the canvas, or with none left, is a
// 422 that commits nothing, and a revert naming such a turn beside one whose
// revert was undone reverts only the latter.
func TestAgentRevertRecordsRevertedTurns(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testAgentRevertRecordsRevertedTurns(t, newTestEnv(t, withAgentQueue)) })
	t.Run("postgres", func(t *testing.T) {
		url, schema := pgTestSchema(t)
		testAgentRevertRecordsRevertedTurns(t, newPGTestEnv(t, url, schema, withAgentQueue))
	})
}

// withAgentQueue serves the agent endpoints from the store (an agent.Queue),
// as a server whose agents run as separate workers.
func withAgentQueue(c *Config) {
	c.Agent = agent.NewQueue(agent.DefaultConfig(), c.Store.(agent.SessionStore), nil)
}

func testAgentRevertRecordsRevertedTurns(t *testing.T, e *testEnv) {
	ctx := context.Background()
	as := e.st.(agent.SessionStore)
	cid := e.canvas("rr")
	// Three turns of a finished session, one shape each (revisions 1, 2, 3).
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := as.CreateAgentSession(ctx, canvas.AgentSession{ID: "as_rr", CanvasID: cid, ActorID: "agent", State: canvas.AgentDone,
		Model: "debug/fake", Message: "three notes", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for n := int64(1); n <= 3; n++ {
		e.must(200, "POST", "/canvas_commands/"+cid+"/command", testAdmin,
			env("create_node", n-1, map[string]any{"id": fmt.Sprintf("n%d", n), "name": "note"}))
		if err := as.SaveAgentTurn(ctx, "as_rr", canvas.AgentTurn{Turn: int(n), Kind: "initial", Revs: []int64{n}, StartedAt: now, EndedAt: &now}); err != nil {
			t.Fatal(err)
		}
	}
	path := "/api/canvas-agent/sessions/as_rr"
	// reverted reads the session and returns each turn's reverted_rev (0: none).
	reverted := func() map[int]int64 {
		t.Helper()
		var sess canvas.AgentSession
		if err := json.Unmarshal(e.do("GET", path, testAdmin, nil).Body, &sess); err != nil {
			t.Fatal(err)
		}
		out := map[int]int64{}
		for _, tr := range sess.Turns {
			out[tr.Turn] = 0
			if tr.RevertedRev != nil {
				out[tr.Turn] = *tr.RevertedRev
			}
		}
		return out
	}
	nodes := func() int { return len(e.snapshot(cid)["state"].(map[string]any)["nodes"].([]any)) }
	refused := func(what string, body any, wantDetail string) {
		t.Helper()
		head := e.snapshot(cid)["head_rev"]
		r := e.do("POST", path+"/revert", testAdmin, body)
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), wantDetail) {
			t.Fatalf("%s: %d %s, want a 422 saying %q", what, r.Status, r.Body, wantDetail)
		}
		if h := e.snapshot(cid)["head_rev"]; h != head {
			t.Fatalf("%s: the refused revert moved the head from %v to %v", what, head, h)
		}
	}
	if got := reverted(); fmt.Sprint(got) != "map[1:0 2:0 3:0]" {
		t.Fatalf("before any revert: reverted_rev %v", got)
	}

	if m := e.must(200, "POST", path+"/revert", testAdmin, map[string]any{"turn": 2}); m["current_rev"] != float64(4) {
		t.Fatalf("revert of turn 2: %v, want revision 4", m)
	}
	if got := reverted(); fmt.Sprint(got) != "map[1:0 2:4 3:0]" || nodes() != 2 {
		t.Fatalf("after reverting turn 2: reverted_rev %v, %d nodes", got, nodes())
	}
	refused("turn 2 again", map[string]any{"turn": 2}, "turn 2 was already reverted (turn 2 by revision 4)")

	// No body: the turns left (1 and 3), as one command.
	if m := e.must(200, "POST", path+"/revert", testAdmin, nil); m["current_rev"] != float64(5) {
		t.Fatalf("revert of the rest: %v, want revision 5", m)
	}
	if got := reverted(); fmt.Sprint(got) != "map[1:5 2:4 3:5]" || nodes() != 0 {
		t.Fatalf("after reverting the rest: reverted_rev %v, %d nodes", got, nodes())
	}
	refused("no body with every turn reverted", nil, "every turn was already reverted")
	refused("turn 3 again", map[string]any{"turn": 3}, "turn 3 was already reverted (turn 3 by revision 5)")
	refused("turns 1 and 2 again", map[string]any{"turns": []int{1, 2}}, "turns [1 2] were already reverted (turn 1 by revision 5, turn 2 by revision 4) and their changes are not on the canvas")
	if got := reverted(); fmt.Sprint(got) != "map[1:5 2:4 3:5]" {
		t.Fatalf("after the refused reverts: reverted_rev %v", got)
	}

	// Undoing the revert of 1 and 3 puts their notes back (revision 6).
	// Reverting turns 1 and 2 then reverts turn 1 again and leaves out turn
	// 2, whose revert still holds: it keeps its reverted_rev.
	e.must(200, "POST", "/canvas_commands/"+cid+"/command", testAdmin, env("undo", 5, map[string]any{}))
	if nodes() != 2 {
		t.Fatalf("after undoing the revert of turns 1 and 3: %d nodes, want 2", nodes())
	}
	if m := e.must(200, "POST", path+"/revert", testAdmin, map[string]any{"turns": []int{1, 2}}); m["current_rev"] != float64(7) {
		t.Fatalf("revert of turns 1 and 2: %v, want revision 7", m)
	}
	if got := reverted(); fmt.Sprint(got) != "map[1:7 2:4 3:5]" || nodes() != 1 {
		t.Fatalf("after reverting turns 1 (again) and 2 (still reverted): reverted_rev %v, %d nodes", got, nodes())
	}
	var page struct{ Commits []canvas.Commit }
	if err := json.Unmarshal(e.do("GET", "/canvas_commands/"+cid+"/events?after_rev=6", testAdmin, nil).Body, &page); err != nil || len(page.Commits) != 1 {
		t.Fatalf("events after 6: %v %+v", err, page)
	}
	if a := string(page.Commits[0].Args); !strings.Contains(a, `"revs":[1]`) || !strings.Contains(a, "revert of turn 1 of agent session as_rr") {
		t.Fatalf("the revert's args %s, want the revisions of turn 1 only", a)
	}
}

// notesByText returns the canvas's nodes by their props.text.
func notesByText(snap client.Snapshot) map[string]*canvas.Node {
	out := map[string]*canvas.Node{}
	for _, n := range snap.State.Nodes {
		text, _ := n.Props["text"].(string)
		out[text] = n
	}
	return out
}

// A turn of many commands (more than the 100 an actor's undo history
// keeps) is reverted as one command, which one undo brings back.
func TestAgentRevertLongTurn(t *testing.T) {
	const shapes = 130
	actions := make([]string, shapes)
	for i := range actions {
		actions[i] = fmt.Sprintf(`{"name":"create_shape","params":{"id":"s%d","type":"geo","x":%d,"y":%d,"w":100,"h":100,"props":{"text":"s%d"}}}`,
			i, (i%13)*150, (i/13)*150, i)
	}
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(actions...), 512)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.LowActionThreshold = 0 })
	e.newCanvas("lt")
	ctx := context.Background()
	e.humanCommand("lt", "create_shape", 0, `{"id":"mine","type":"note","x":0,"y":5000,"props":{"text":"mine"}}`)
	sess := e.run(client.AgentRunRequest{RoomID: "lt", Message: "many boxes"})
	if sess.State != client.AgentDone || len(sess.Turns) != 1 || len(sess.Turns[0].Revs) != shapes {
		t.Fatalf("session %s, turns %+v", sess.State, sess.Turns)
	}
	if n := len(e.snapshot("lt").State.Nodes); n != shapes+1 {
		t.Fatalf("%d nodes after the run", n)
	}
	head := e.snapshot("lt").HeadRev
	res, err := e.human.RevertAgentTurns(ctx, sess.ID, 1)
	if err != nil {
		t.Fatalf("revert of a turn of %d commands: %v", shapes, err)
	}
	if res.CurrentRev != head+1 {
		t.Fatalf("revert: rev %d, want one commit at %d", res.CurrentRev, head+1)
	}
	if got := notesByText(e.snapshot("lt")); len(got) != 1 || got["mine"] == nil {
		t.Fatalf("after the revert: %d nodes, want only mine", len(got))
	}
	// One undo step of the person who reverted brings the whole turn back.
	e.humanCommand("lt", "undo", res.CurrentRev, `{}`)
	if n := len(e.snapshot("lt").State.Nodes); n != shapes+1 {
		t.Fatalf("%d nodes after undoing the revert, want %d", n, shapes+1)
	}
}

// A turn whose commands include an undo, and a turn whose changes a later
// turn undid, revert to what their shapes were before them.
func TestAgentRevertTurnsWithUndo(t *testing.T) {
	model := newFakeOpenAI(t,
		scriptedReply{chunks: chunked(actionsJSON(
			`{"name":"create_shape","params":{"id":"a","type":"note","x":0,"y":0,"w":100,"h":100,"props":{"text":"a"}}}`,
			`{"name":"create_shape","params":{"id":"b","type":"note","x":300,"y":0,"w":100,"h":100,"props":{"text":"b"}}}`,
			`{"name":"move","params":{"ids":["a"],"dx":0,"dy":50}}`,
			`{"name":"undo","params":{}}`,
			`{"name":"add_detail","params":{"hint":"more"}}`), 29)},
		scriptedReply{chunks: chunked(actionsJSON(
			`{"name":"create_shape","params":{"id":"c","type":"note","x":600,"y":0,"w":100,"h":100,"props":{"text":"c"}}}`,
			`{"name":"undo","params":{}}`,
			`{"name":"undo","params":{}}`), 29)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.LowActionThreshold = 0 })
	e.newCanvas("ru")
	ctx := context.Background()
	e.humanCommand("ru", "create_shape", 0, `{"id":"mine","type":"note","x":0,"y":5000,"props":{"text":"mine"}}`)
	sess := e.run(client.AgentRunRequest{RoomID: "ru", Message: "notes"})
	if sess.State != client.AgentDone || len(sess.Turns) != 2 || len(sess.Turns[0].Revs) != 4 || len(sess.Turns[1].Revs) != 3 {
		t.Fatalf("session %s, turns %+v, transcript %+v", sess.State, sess.Turns, sess.Transcript)
	}
	// Turn 1 moved a and undid the move; turn 2 made c, undid it, and undid turn 1's b.
	got := notesByText(e.snapshot("ru"))
	if len(got) != 2 || got["a"] == nil || got["a"].Y != 0 || got["mine"] == nil {
		t.Fatalf("after the run: %v", got)
	}

	// Turn 2 reverted: b (which it undid) comes back, c stays gone.
	res, err := e.human.RevertAgentTurns(ctx, sess.ID, 2)
	if err != nil {
		t.Fatalf("revert of a turn of undos: %v", err)
	}
	got = notesByText(e.snapshot("ru"))
	if len(got) != 3 || got["b"] == nil || got["b"].X != 300 || got["c"] != nil {
		t.Fatalf("after reverting turn 2: %v", got)
	}
	// Turn 1 reverted: a and b, as the revert of turn 2 left b, go.
	res, err = e.human.RevertAgentTurns(ctx, sess.ID, 1)
	if err != nil {
		t.Fatalf("revert of a turn with an undo: %v", err)
	}
	if got = notesByText(e.snapshot("ru")); len(got) != 1 || got["mine"] == nil {
		t.Fatalf("after reverting turn 1: %v", got)
	}
	if s, err := e.human.AgentSession(ctx, sess.ID); err != nil || s.Turns[0].RevertedRev == nil || *s.Turns[0].RevertedRev != res.CurrentRev {
		t.Fatalf("the session after the reverts: %+v %v", s.Turns, err)
	}
}
