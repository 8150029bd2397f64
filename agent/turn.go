package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// errConflict aborts a turn whose plan met a concurrent edit.
type errConflict struct{ what string }

// Error names what conflicted.
func (e *errConflict) Error() string { return "conflict: " + e.what }

// turnState is one turn's bookkeeping.
type turnState struct {
	applied    int             // canvas actions applied
	touched    map[string]bool // shapes and documents they created or changed
	conflict   *errConflict
	lastPrev   string
	completeN  int
	overflowed bool // the reply exceeded Config.MaxOutputBytes
	truncated  bool // the reply stopped at the output-token bound (TruncationReporter)
	// unapplied lists what of the reply was not applied (a drop's action
	// and reason), for the feedback follow-up.
	unapplied []string
}

// runTurn runs one model turn: read the canvas, call the model, apply its
// actions while they stream, then queue what the turn calls for (a re-plan,
// a low-action follow-up). It returns an error only for failures that end
// the session (the model or canvasd unreachable); conflicts re-plan.
func (s *session) runTurn(t task) error {
	s.turn++
	s.stats(func(st *client.AgentStats) { st.Turns++ })
	s.openTurn(t.kind)
	defer s.closeTurn()
	s.status(client.AgentWaitingContext, map[string]any{"turn": s.turn, "kind": t.kind})
	// The host draws the turn's screenshot while the canvas is read.
	pre := s.r.prefetchShot(s)
	defer pre.stop()
	view, err := s.readCanvas()
	if err != nil {
		return err
	}
	provider, req, err := s.modelRequest(t, view, pre)
	if err != nil {
		return err
	}
	ts, err := s.streamReply(provider, req)
	if err != nil {
		return err
	}
	s.planNext(t, view, ts)
	return nil
}

// openTurn adds the turn to the session's list (what GET shows while it runs).
func (s *session) openTurn(kind TurnKind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Turns = append(s.rec.Turns, canvas.AgentTurn{Turn: s.turn, Kind: string(kind), Revs: []int64{}, StartedAt: s.r.d.Now().UTC()})
}

// recordRev adds the revision of a commit the current turn made.
func (s *session) recordRev(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.rec.Turns[len(s.rec.Turns)-1]
	if n := len(t.Revs); n == 0 || t.Revs[n-1] < rev {
		t.Revs = append(t.Revs, rev)
	}
}

// closeTurn ends the current turn and stores it (also when the turn failed
// or the session was canceled: its commits stay revertible).
func (s *session) closeTurn() {
	s.mu.Lock()
	t := &s.rec.Turns[len(s.rec.Turns)-1]
	end := s.r.d.Now().UTC()
	t.EndedAt = &end
	turn := *t
	turn.Revs = append([]int64(nil), t.Revs...)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 5*time.Second)
	defer cancel()
	if err := s.r.d.Store.SaveAgentTurn(ctx, s.rec.ID, turn); err != nil {
		s.r.log.Error("agent: saving the turn failed", "session_id", s.rec.ID, "turn", turn.Turn, "err", err)
	}
}

// turnView is what a turn read of the canvas.
type turnView struct {
	snap client.Snapshot
	pc   PromptContext
	free Box // empty space near the viewport for new content
	// doc is the node id of the document the turn edits ("" when the
	// target is the canvas), docPrompt its numbered lines and diff.
	doc, docPrompt string
}

// readCanvas reads the canvas (and the target document), resets the
// sanitizer to its shapes and returns what the turn's prompt is built from.
func (s *session) readCanvas() (turnView, error) {
	snap, err := s.r.d.Client.Snapshot(s.ctx, s.rec.CanvasID)
	if err != nil {
		return turnView{}, fmt.Errorf("reading the canvas: %w", err)
	}
	ids := make([]string, len(snap.State.Nodes))
	for i, n := range snap.State.Nodes {
		ids[i] = n.ID
		if n.Type == "doc" {
			s.docs[n.ID] = true
		}
	}
	if s.san == nil {
		s.san = NewSanitizer(ids, nil)
	} else {
		s.san.Reset(ids)
	}
	edges := make([]string, len(snap.State.Edges))
	for i, e := range snap.State.Edges {
		edges[i] = e.ID
	}
	s.san.ResetEdges(edges)
	s.knownRev = snap.HeadRev
	if s.startRev < 0 {
		s.startRev = snap.HeadRev
	}
	s.mu.Lock()
	transcript := append([]client.TranscriptEntry(nil), s.rec.Transcript...)
	vp, sel, doc, docSel := s.rec.Viewport, s.rec.Selection, s.rec.Document, s.rec.DocumentSelection
	s.mu.Unlock()
	v := turnView{snap: snap, pc: s.r.promptContext(s.rec.CanvasID, snap, vp, sel, transcript)}
	s.place.reset(snap.State.Nodes)
	v.free = s.place.freeSpace(v.pc.Viewport, max(1000, v.pc.Viewport.W/2), max(1000, v.pc.Viewport.H/2))
	s.san.SetOrigin(v.free.X+40, v.free.Y+40)
	if doc != "" { // the run's document (the one open in the UI): it, or no turn
		if docTargetOf(snap.State.Nodes, []string{doc}) == "" {
			return turnView{}, fmt.Errorf("the document %s of this run is not on the canvas (deleted?): %w", doc, canvas.ErrNotFound)
		}
		v.doc = doc
	} else {
		v.doc = docTargetOf(snap.State.Nodes, sel)
	}
	if v.doc != "" {
		if v.docPrompt, err = s.readDocument(v.doc, snap); err != nil {
			return turnView{}, err
		}
		if docSel != nil && v.doc == doc {
			v.docPrompt += selectionNote(*docSel)
		}
	}
	return v, nil
}

// readDocument returns the prompt part of the target document: its
// numbered lines and the diff of the edits since this launch started.
func (s *session) readDocument(nodeID string, snap client.Snapshot) (string, error) {
	dc, err := s.r.d.Client.DocContent(s.ctx, s.rec.CanvasID, nodeID)
	if err != nil {
		return "", fmt.Errorf("reading document %s: %w", nodeID, err)
	}
	var diff client.DocDiff
	if snap.HeadRev > s.startRev {
		if diff, err = s.r.d.Client.DocDiff(s.ctx, s.rec.CanvasID, nodeID, s.startRev); err != nil {
			return "", fmt.Errorf("diffing document %s: %w", nodeID, err)
		}
	}
	name := ""
	for _, n := range snap.State.Nodes {
		if n.ID == nodeID {
			name = n.Name
		}
	}
	return docPrompt(dc, name, diff), nil
}

// modelRequest builds the turn's model call: the system prompt, the canvas
// context (or the target document) with the turn's instruction and the
// session's todos, a screenshot when the provider takes images, and the
// user's image of a message turn.
func (s *session) modelRequest(t task, v turnView, pre *shotPrefetch) (Provider, ModelRequest, error) {
	r := s.r
	provider, model, err := r.d.Providers.Get(s.spec)
	if err != nil {
		return nil, ModelRequest{}, err
	}
	// The context (the canvas, or the target document) is the static part of
	// the user message: providers with prompt caching may cache it.
	system, static := r.system, "Canvas context (JSON):\n"+v.pc.JSON+"\n\n"
	var rest string
	if v.doc != "" {
		system, static = r.docSystem, v.docPrompt+"\n"
		rest = s.docInstruction(t) + s.todoList()
	} else {
		rest = s.instruction(t) + s.todoList() +
			fmt.Sprintf("\nFree space for new content, near the viewport: x %.0f, y %.0f, w %.0f, h %.0f (new shapes that would cover existing ones are moved).",
				v.free.X, v.free.Y, v.free.W, v.free.H)
	}
	user := Message{Role: "user", Text: static + rest, Static: len(static)}
	var shotMsg []Message
	if provider.Vision() && v.doc == "" {
		shot, err := r.screenshot(s, v.pc, pre)
		if err != nil {
			s.stats(func(st *client.AgentStats) { st.ScreenshotMissed++ })
			r.log.Warn("agent: no screenshot, continuing text-only (degraded run)", "session_id", s.rec.ID, "err", err)
		} else {
			user.ImageDataURL = shot.DataURL
		}
	}
	if t.image != "" { // the user's image is the turn's subject; a screenshot goes before it
		if user.ImageDataURL != "" {
			shotMsg = []Message{{Role: "user", Text: "Screenshot of the current viewport.", ImageDataURL: user.ImageDataURL}}
		}
		user.ImageDataURL = t.image
	}
	req := ModelRequest{Model: model, Task: t.text, Kind: t.kind, Viewport: v.pc.Viewport, Document: v.doc, FreeSpace: v.free,
		Messages: append(append([]Message{{Role: "system", Text: system, Static: len(system)}}, shotMsg...), user)}
	if t.kind != TurnInitial && t.kind != TurnMessage {
		zero := float32(0)
		req.Temperature = &zero // stricter sampling for follow-ups
	}
	if r.d.Config.Debug {
		r.log.Info("agent: prompt", "session_id", s.rec.ID, "turn", s.turn, "system_bytes", len(system), "user", user.Text,
			"temperature", req.Temperature)
	}
	r.log.Info("agent: calling model", "session_id", s.rec.ID, "turn", s.turn, "kind", t.kind, "model", s.spec, "document", v.doc,
		"shapes", v.pc.Stats.Count, "shape_state_bytes", v.pc.Stats.Bytes, "shape_state_truncated", v.pc.Stats.Truncated,
		"prompt_bytes", len(system)+len(user.Text), "image_bytes", len(user.ImageDataURL), "doc_version", v.pc.DocVersion)
	return provider, req, nil
}

// todoList is the prompt line of the session's todos, or "".
func (s *session) todoList() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rec.Todos) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nYour todos in this session (mark them with todo {text, status: \"done\"} or \"skipped\" when resolved):")
	for _, td := range s.rec.Todos {
		fmt.Fprintf(&b, "\n- [%s] %s", td.Status, td.Text)
	}
	return b.String()
}

// streamReply calls the model and applies each complete action as it
// arrives (previews are published for partial ones). A conflict stops the
// stream; otherwise the sanitizer's deferred actions are flushed at the end.
func (s *session) streamReply(provider Provider, req ModelRequest) (*turnState, error) {
	r := s.r
	cfg := r.d.Config
	s.status(client.AgentCallingModel, map[string]any{"model": s.spec})
	tctx, tcancel := context.WithCancel(s.ctx)
	defer tcancel()
	callStart := r.d.Now()
	stream, err := provider.Stream(tctx, req)
	if err != nil {
		if s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		return nil, fmt.Errorf("model %s: %w", s.spec, err)
	}
	defer stream.Close()
	if ur, ok := stream.(UsageReporter); ok {
		// What the call used, also when it failed or was stopped early.
		prov, _, _ := ParseModel(s.spec)
		defer func() {
			u := ur.Usage().nonNegative()
			r.d.Metrics.addUsage(prov, u)
			s.stats(func(st *client.AgentStats) { countTokens(st, u) })
		}()
	}

	p := NewParser(cfg.MaxOutputBytes)
	ts := &turnState{touched: map[string]bool{}}
	first := true
	var text strings.Builder
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return nil, s.ctx.Err()
			}
			return nil, fmt.Errorf("model %s stream: %w", s.spec, err)
		}
		if first {
			first = false
			if s.turn == 1 {
				d := r.d.Now().Sub(s.started)
				s.stats(func(st *client.AgentStats) { st.TTFBMS = ms(d) })
			}
			s.status(client.AgentStreaming, nil)
		}
		if cfg.Debug {
			text.WriteString(chunk)
		}
		done, part := p.Feed(chunk)
		for _, pa := range done {
			if err := s.handleComplete(ts, pa); err != nil {
				return nil, err
			}
			if ts.conflict != nil {
				break
			}
		}
		if ts.conflict != nil {
			tcancel() // the plan is stale: stop the stream
			break
		}
		if part != nil {
			s.preview(ts, *part)
		}
	}
	ts.overflowed = p.Overflowed()
	if tr, ok := stream.(TruncationReporter); ok {
		ts.truncated = tr.Truncated()
	}
	r.d.Metrics.observeModel(r.d.Now().Sub(callStart))
	s.stats(func(st *client.AgentStats) { st.ModelLatencyMS += ms(r.d.Now().Sub(callStart)) })
	if cfg.Debug {
		r.log.Info("agent: model reply", "session_id", s.rec.ID, "turn", s.turn, "text", text.String())
	}
	if s.ctx.Err() != nil {
		return nil, s.ctx.Err()
	}
	if ts.conflict == nil {
		ready, drops := s.san.Flush()
		s.dropped(ts, drops)
		if err := s.applyReady(ts, ready, r.d.Now()); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// planNext queues what the finished turn calls for: a re-plan after a
// conflict, or (once, after the first turn on the canvas) a low-action
// follow-up. A reply cut off at the output-token bound is logged and said
// in the session's chat.
func (s *session) planNext(t task, v turnView, ts *turnState) {
	s.hostFollowUp() // what the page actions answered (host_actions.go)
	if ts.truncated {
		s.r.log.Warn("agent: the model reply hit the output-token bound and was cut off", "session_id", s.rec.ID, "turn", s.turn,
			"model", s.spec, "max_tokens", s.r.d.Config.MaxTokens)
		s.chat("system", "The model's reply hit the output-token bound (--agent-max-tokens) and was cut off; what came after the cut is missing.")
	}
	if ts.completeN == 0 {
		s.r.log.Warn("agent: the model reply held no actions", "session_id", s.rec.ID, "turn", s.turn, "overflow", ts.overflowed)
		s.note("system", "The model's reply contained no valid actions.")
	}
	s.feedbackFollowUp(ts)
	if ts.conflict != nil {
		rt := task{kind: TurnReplan, text: s.rec.Message, conflict: ts.conflict.what}
		if t.kind == TurnMessage {
			rt.text, rt.image, rt.from = t.text, t.image, t.from // re-plan the message, not the session's first request
		}
		if s.enqueue(rt) {
			s.chat("system", "Someone else changed "+ts.conflict.what+"; re-planning with the fresh canvas.")
		} else {
			s.chat("system", "Someone else changed "+ts.conflict.what+"; not re-planning again (limit reached).")
		}
		return
	}
	if v.doc == "" && len(ts.touched) > 0 {
		s.lintFollowUp(v, ts)
	}
	if t.kind == TurnInitial && v.doc == "" && !s.lowUsed && ts.applied < s.r.d.Config.LowActionThreshold && ts.completeN > 0 {
		s.lowUsed = true
		s.enqueue(task{kind: TurnLowAction, text: s.rec.Message})
	}
}

// maxFeedback bounds the lines of one feedback follow-up.
const maxFeedback = 30

// feedbackFollowUp tells the model, in a follow-up turn, what of its reply
// was not applied and why: actions or fields it named that the runner
// cannot map (of the tldraw kit's vocabulary too), values out of range,
// references to shapes that do not exist. Within the follow-up bound; past
// it, the chat says what was left out.
func (s *session) feedbackFollowUp(ts *turnState) {
	if len(ts.unapplied) == 0 {
		return
	}
	lines := ts.unapplied
	if len(lines) > maxFeedback {
		lines = append(lines[:maxFeedback:maxFeedback], fmt.Sprintf("(and %d more)", len(ts.unapplied)-maxFeedback))
	}
	text := "- " + strings.Join(lines, "\n- ")
	if s.enqueue(task{kind: TurnFeedback, text: text}) {
		s.note("system", fmt.Sprintf("Not applied from the model's reply (%d); telling the model:\n%s", len(ts.unapplied), text))
	} else {
		s.note("system", fmt.Sprintf("Not applied from the model's reply (%d; not told to the model, follow-up limit reached):\n%s", len(ts.unapplied), text))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *session) instruction(t task) string {
	switch t.kind {
	case TurnFollowup:
		return "Follow-up pass for the task: " + s.rec.Message + "\nAdd detail: " + t.text +
			"\nThe shapes you already made are in the context: update or extend them, do not create them again."
	case TurnLowAction:
		return "Your previous reply applied few actions. Complete the task now with concrete create_shape / update_shape actions: " + t.text +
			"\nThe shapes you already made are in the context; do not create them again."
	case TurnMessage:
		return messageInstruction(t)
	case TurnHostResults:
		return hostResultsInstruction(t, s.rec.Message)
	case TurnLint:
		return "The shapes you just made or changed have layout problems. Fix them with update_shape, move or resize " +
			"(do not create shapes again, and do not touch shapes of others):\n" + t.text + "\nThe task was: " + s.rec.Message
	case TurnReplan:
		return "While you worked, someone else changed " + t.conflict + ". Their edits stand: do not change those shapes back. " +
			"Continue the task with the fresh canvas above: " + t.text
	case TurnFeedback:
		return "Parts of your previous reply were not applied:\n" + t.text +
			"\nDo what they meant with the actions of the catalog (the canvas above shows what was applied; do not create those shapes again). The task was: " + s.rec.Message
	}
	return "Task: " + t.text
}

// preview publishes a partial envelope when the sanitized preview changed.
func (s *session) preview(ts *turnState, pa ParsedAction) {
	a, ok := s.san.SanitizePreview(Action{ID: s.actionID(pa.Index), Name: pa.Name, Params: pa.Params, Kit: pa.Kit})
	if !ok || a.Name == "set_viewport" { // set_viewport goes to the host alone, once complete
		return
	}
	b, _ := json.Marshal(a)
	if string(b) == ts.lastPrev {
		return
	}
	ts.lastPrev = string(b)
	s.r.publish(s.rec.CanvasID, client.EventAgentAction, s.nextEnvelope(true, []Action{a}))
}

func (s *session) actionID(idx int) string {
	return fmt.Sprintf("%s.%d.%d", s.rec.ID, s.turn, idx)
}

// handleComplete sanitizes and applies one complete parsed action.
func (s *session) handleComplete(ts *turnState, pa ParsedAction) error {
	at := s.r.d.Now()
	ts.completeN++
	ts.lastPrev = ""
	s.stats(func(st *client.AgentStats) { st.ActionsParsed++ })
	ready, drops := s.san.Push(Action{ID: s.actionID(pa.Index), Name: pa.Name, Params: pa.Params, Kit: pa.Kit})
	s.dropped(ts, drops)
	return s.applyReady(ts, ready, at)
}

func (s *session) dropped(ts *turnState, drops []Drop) {
	for _, d := range drops {
		name := d.Action.Name
		if name == "" {
			name = "(an element without a name)"
		}
		if !strings.HasPrefix(d.Reason, "duplicate") {
			ts.unapplied = append(ts.unapplied, name+": "+d.Reason)
		}
		if d.Partial {
			s.r.log.Info("agent: part of an action not applied", "session_id", s.rec.ID, "action", d.Action.Name, "reason", d.Reason)
			continue
		}
		outcome := "dropped"
		if strings.HasPrefix(d.Reason, "duplicate") {
			outcome = "duplicate"
			s.stats(func(st *client.AgentStats) { st.DuplicatesDropped++ })
			s.r.log.Info("[CanvasAgent:Dedupe] duplicate create dropped", "session_id", s.rec.ID, "action", d.Action.Name, "reason", d.Reason)
		} else {
			s.r.log.Info("[CanvasAgent:SchemaGuard] action dropped", "session_id", s.rec.ID, "action", d.Action.Name, "reason", d.Reason)
			if s.r.d.Config.Debug {
				s.r.log.Info("agent: dropped action", "session_id", s.rec.ID, "action", d.Action.Name, "params", d.Action.Params)
			}
		}
		s.stats(func(st *client.AgentStats) { st.ActionsDropped++ })
		s.r.d.Metrics.action(outcome)
	}
}

// applyReady publishes the sanitized actions as one envelope and applies them in order.
func (s *session) applyReady(ts *turnState, ready []Action, at time.Time) error {
	if len(ready) == 0 {
		return nil
	}
	if !s.firstAct {
		s.firstAct = true
		d := s.r.d.Now().Sub(s.started)
		s.stats(func(st *client.AgentStats) { st.TimeToFirstAction = ms(d) })
		s.r.d.Metrics.observeTTFA(d)
		if d > s.r.d.Config.TTFBSLO {
			s.r.log.Warn("agent: time to first action over the SLO", "session_id", s.rec.ID, "ms", ms(d), "slo_ms", s.r.d.Config.TTFBSLO.Milliseconds())
		}
	}
	for _, a := range ready {
		s.place.place(a)
	}
	s.sendEnvelope(ready)
	for _, a := range ready {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		if ts.conflict != nil {
			return nil
		}
		if err := s.apply(ts, a, at); err != nil {
			return err
		}
	}
	return nil
}
