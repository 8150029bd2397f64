package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// apply carries out one sanitized action: a meta action in the runner, a
// canvas action as a command.
func (s *session) apply(ts *turnState, a Action, at time.Time) error {
	v, _ := verbByName(a.Name)
	if v.Meta {
		if isHostVerb(a.Name) {
			s.applyHost(a) // host_actions.go
			return nil
		}
		s.applyMeta(a)
		return nil
	}
	if a.Name == "place" {
		move, err := s.placeAt(a)
		if err != nil {
			return err
		}
		if move == nil {
			ts.unapplied = append(ts.unapplied, "place: the shapes it names are no longer on the canvas")
			return nil
		}
		return s.command(ts, *move, at)
	}
	return s.command(ts, a, at)
}

// placeAt turns a place action into the move it means, reading where the
// shapes are now (after the actions before it). nil: a shape is gone.
func (s *session) placeAt(a Action) (*Action, error) {
	snap, err := s.r.d.Client.Snapshot(s.ctx, s.rec.CanvasID)
	if err != nil {
		if s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		return nil, fmt.Errorf("reading the canvas to place a shape: %w", err)
	}
	s.learnSnapshot(snap)
	byID := make(map[string]*canvas.Node, len(snap.State.Nodes))
	for _, n := range snap.State.Nodes {
		byID[n.ID] = n
	}
	id, _ := a.Params["id"].(string)
	n := byID[id]
	if n == nil {
		return nil, nil
	}
	b := nodeRect(n)
	num := func(k string) float64 { f, _ := a.Params[k].(float64); return f }
	var x0, y0 float64 // where the shape's bounds go
	if ref, ok := a.Params["reference_id"].(string); ok {
		r := byID[ref]
		if r == nil {
			return nil, nil
		}
		rb := nodeRect(r)
		side, _ := a.Params["side"].(string)
		align, _ := a.Params["align"].(string)
		gap, shift := num("side_offset"), num("align_offset")
		along := func(lo, hi, size float64) float64 { // start, center or end along the side
			switch align {
			case "start":
				return lo + shift
			case "end":
				return hi - size - shift
			}
			return (lo+hi)/2 - size/2 + shift
		}
		switch side {
		case "top":
			x0, y0 = along(rb.x0, rb.x1, b.w()), rb.y0-b.h()-gap
		case "bottom":
			x0, y0 = along(rb.x0, rb.x1, b.w()), rb.y1+gap
		case "left":
			x0, y0 = rb.x0-b.w()-gap, along(rb.y0, rb.y1, b.h())
		default:
			x0, y0 = rb.x1+gap, along(rb.y0, rb.y1, b.h())
		}
	} else {
		anchor, _ := a.Params["anchor"].(string)
		f := kitAnchors[anchor]
		x0, y0 = num("x")-f[0]*b.w(), num("y")-f[1]*b.h()
	}
	// move takes the node's own corner: keep its offset from the bounds.
	x, y := x0+(n.X-b.x0), y0+(n.Y-b.y0)
	return &Action{ID: a.ID, Name: "move", Params: map[string]any{"id": id, "x": x, "y": y}}, nil
}

// applyMeta carries out think, todo, add_detail, save_snapshot and set_viewport.
func (s *session) applyMeta(a Action) {
	r := s.r
	switch a.Name {
	case "think":
		s.chat("assistant", a.Params["text"].(string))
		r.d.Metrics.action("meta")
	case "todo":
		s.todo(a)
		r.d.Metrics.action("meta")
	case "add_detail":
		hint, _ := a.Params["hint"].(string)
		if hint == "" {
			hint = "add detail to what you drew"
		}
		if s.enqueue(task{kind: TurnFollowup, text: hint}) {
			s.note("system", "follow-up scheduled: "+hint)
		} else {
			s.note("system", "follow-up not scheduled (limit reached): "+hint)
		}
		r.d.Metrics.action("meta")
	case "save_snapshot":
		label, _ := a.Params["label"].(string)
		desc, _ := a.Params["description"].(string)
		snap, err := r.d.Client.SaveSnapshot(s.ctx, s.rec.CanvasID, label, desc)
		if err != nil {
			r.log.Warn("agent: saving a snapshot failed", "session_id", s.rec.ID, "err", err)
			return
		}
		s.note("system", fmt.Sprintf("snapshot %s saved at revision %d", snap.ID, snap.Rev))
		r.d.Metrics.action("meta")
	case "set_viewport":
		r.d.Metrics.action("meta") // ephemeral: the envelope is the whole effect
	}
}

// todo records a todo of the session by its text (the same text again
// updates that item's status) and tells the chat what changed.
func (s *session) todo(a Action) {
	status, _ := a.Params["status"].(string)
	todo, changed, err := s.r.d.Store.UpsertAgentTodo(s.ctx, canvas.AgentTodo{SessionID: s.rec.ID,
		Text: a.Params["text"].(string), Status: status, CreatedAt: s.r.d.Now()})
	if err != nil {
		s.r.log.Warn("agent: storing todo failed", "session_id", s.rec.ID, "err", err)
		return
	}
	s.mu.Lock()
	i := 0
	for i < len(s.rec.Todos) && s.rec.Todos[i].ID != todo.ID {
		i++
	}
	if i == len(s.rec.Todos) {
		s.rec.Todos = append(s.rec.Todos, todo)
	} else {
		s.rec.Todos[i] = todo
	}
	s.mu.Unlock()
	switch {
	case !changed:
	case todo.Status == canvas.TodoOpen:
		s.chat("system", fmt.Sprintf("todo #%d: %s", todo.Position+1, todo.Text))
	default:
		s.chat("system", fmt.Sprintf("todo #%d %s: %s", todo.Position+1, todo.Status, todo.Text))
	}
}

// commandTimeout bounds one command request. The request does not end with
// the session: a canceled session waits for the answer to its command in
// flight, so that nothing is applied after Cancel returns.
const commandTimeout = 10 * time.Second

// command applies a canvas action through the API at the session's known
// revision. A 409 caused only by the session's own commits is retried once at
// the new head; any other conflict protects the conflicting shapes and stops
// the turn (ts.conflict) for a re-plan. A 4xx drops the action; transport
// errors and 5xx are retried twice with the same idempotency key.
func (s *session) command(ts *turnState, a Action, at time.Time) error {
	r := s.r
	// Never overwrite what someone else changed during this session.
	for _, id := range refsOf(a) {
		if s.protected[id] {
			ts.conflict = &errConflict{what: "shape " + id}
			s.stats(func(st *client.AgentStats) { st.Conflicts++ })
			r.d.Metrics.conflict()
			r.d.Metrics.action("skipped")
			return nil
		}
	}
	if s.remote && s.remoteCanceled() {
		s.markCanceled()
		return s.ctx.Err()
	}
	args, err := json.Marshal(a.Params)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", a.Name, err)
	}
	s.cmdN++
	for attempt := 0; ; attempt++ {
		if err := s.ctx.Err(); err != nil {
			return err // canceled: send nothing more
		}
		base := s.knownRev
		v, _ := verbByName(a.Name)
		env := canvas.Envelope{ID: fmt.Sprintf("cmd_%s_%d", s.rec.ID, s.cmdN), Type: v.commandType(), BaseRev: &base,
			IdempotencyKey: "idem_" + a.ID, Args: args}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), commandTimeout)
		rr, err := r.d.Client.Command(cctx, s.rec.CanvasID, env)
		cancel()
		var ce *client.ConflictError
		var pe *client.ProblemError
		switch {
		case err == nil:
			lat := r.d.Now().Sub(at)
			r.d.Metrics.observeCommit(lat)
			if r.d.OnActionCommit != nil {
				r.d.OnActionCommit(lat)
			}
			r.d.Metrics.action("applied")
			s.stats(func(st *client.AgentStats) { st.ActionsApplied++ })
			s.recordRev(rr.CurrentRev)
			ts.applied++
			for _, id := range append(refsOf(a), createdBy(a)...) {
				ts.touched[id] = true
			}
			return s.advance(rr.CurrentRev)
		case errors.As(err, &ce):
			ours := s.syncTo(ce.Result.CurrentRev, ce.Result.RecoveryOps)
			if ours && attempt == 0 {
				continue // only our own commits moved: retry at the new head
			}
			s.stats(func(st *client.AgentStats) { st.Conflicts++ })
			r.d.Metrics.conflict()
			r.d.Metrics.action("conflict")
			ids := append([]string(nil), ce.Result.ConflictingIDs...)
			sort.Strings(ids)
			for _, id := range ids {
				s.protect(id)
			}
			ts.conflict = &errConflict{what: strings.Join(ids, ", ")}
			return nil
		case errors.As(err, &pe) && (pe.Status == 400 || pe.Status == 422 || pe.Status == 404 || pe.Status == 413):
			r.log.Info("agent: command rejected", "session_id", s.rec.ID, "action", a.Name, "status", pe.Status, "detail", pe.Detail)
			s.stats(func(st *client.AgentStats) { st.ActionsDropped++ })
			r.d.Metrics.action("rejected")
			ts.unapplied = append(ts.unapplied, fmt.Sprintf("%s: refused by canvasd: %s", a.Name, problemText(pe)))
			switch a.Name {
			case "create_shape":
				s.san.Forget(a.Params["id"].(string))
			case "connect":
				s.san.LearnEdge(a.Params["id"].(string), true)
			}
			return nil
		case s.ctx.Err() != nil:
			return s.ctx.Err()
		case attempt < 2:
			// A transport error or 5xx: the same idempotency key makes the retry safe.
			t := time.NewTimer(time.Duration(50*(attempt+1)) * time.Millisecond)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return s.ctx.Err()
			case <-t.C:
			}
			continue
		default:
			return fmt.Errorf("applying %s: %w", a.Name, err)
		}
	}
}

// problemText is a refused command's problem: its detail, and the field it names.
func problemText(pe *client.ProblemError) string {
	if f, ok := pe.Extra["field"].(string); ok && f != "" {
		return pe.Detail + " (" + f + ")"
	}
	return pe.Detail
}

// createdBy lists the shapes and arrows an action creates.
func createdBy(a Action) []string {
	var out []string
	for _, k := range []string{"id", "group_id"} {
		if id, ok := a.Params[k].(string); ok && (a.Name == "create_shape" || a.Name == "group" || a.Name == "connect") {
			out = append(out, id)
		}
	}
	return out
}

// protect marks a shape someone else changed during this session: the
// session never changes it again. Documents are not protected: the next
// turn re-plans its line edits on their fresh lines.
func (s *session) protect(id string) {
	if !s.docs[id] {
		s.protected[id] = true
	}
}

// refsOf lists the existing shapes and documents an action modifies.
func refsOf(a Action) []string {
	var out []string
	if a.Name != "create_shape" && a.Name != "connect" {
		if id, ok := a.Params["id"].(string); ok {
			out = append(out, id)
		}
	}
	if id, ok := a.Params["node_id"].(string); ok {
		out = append(out, id)
	}
	if ids, ok := a.Params["ids"].([]any); ok {
		for _, x := range ids {
			out = append(out, x.(string))
		}
	}
	return out
}

// advance moves knownRev past our own commit, learning any commits of
// others in between (their shapes become protected).
func (s *session) advance(rev int64) error {
	if rev == s.knownRev+1 {
		s.knownRev = rev
		return nil
	}
	if rev <= s.knownRev {
		return nil // an idempotent replay
	}
	commits, err := s.r.d.Client.AllEvents(s.ctx, s.rec.CanvasID, s.knownRev)
	if err != nil {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		s.r.log.Warn("agent: reading concurrent commits failed", "session_id", s.rec.ID, "err", err)
		return nil // keep the old base: the server's conflict check still protects
	}
	s.learn(commits)
	if rev > s.knownRev {
		s.knownRev = rev
	}
	return nil
}

// learnSnapshot adds what a fresh read of the canvas shows to what the
// sanitizer knows (shapes and arrows others made since the turn began).
func (s *session) learnSnapshot(snap client.Snapshot) {
	for _, n := range snap.State.Nodes {
		if !s.san.Exists(n.ID) {
			s.san.Learn(n.ID)
		}
	}
	for _, e := range snap.State.Edges {
		s.san.LearnEdge(e.ID, false)
	}
}

// syncTo reads commits up to rev; it reports whether every commit in ops
// (the commits that touched the conflicting ids) was ours.
func (s *session) syncTo(rev int64, ops []canvas.Commit) bool {
	ours := len(ops) > 0
	for _, c := range ops {
		if !s.isOurs(c) {
			ours = false
		}
	}
	commits, err := s.r.d.Client.AllEvents(s.ctx, s.rec.CanvasID, s.knownRev)
	if err != nil {
		return false
	}
	s.learn(commits)
	if ours && rev > s.knownRev {
		s.knownRev = rev
	}
	return ours
}

func (s *session) isOurs(c canvas.Commit) bool {
	return strings.HasPrefix(c.CmdID, "cmd_"+s.rec.ID+"_")
}

// learn applies others' commits to what the session knows.
func (s *session) learn(commits []canvas.Commit) {
	for _, c := range commits {
		if c.Rev > s.knownRev {
			s.knownRev = c.Rev
		}
		if s.isOurs(c) {
			continue
		}
		for _, ch := range c.Changes {
			if ch.Kind == canvas.KindEdge {
				s.san.LearnEdge(ch.ID, ch.Op == canvas.OpDelete)
				continue
			}
			if ch.Kind != canvas.KindNode {
				continue
			}
			s.protect(ch.ID)
			if ch.Op == canvas.OpDelete {
				s.san.Forget(ch.ID)
			} else {
				s.san.Learn(ch.ID)
			}
		}
	}
}
