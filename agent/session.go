package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// TurnKind says why a turn runs; it chooses the turn's instruction and
// whether the model samples strictly.
type TurnKind string

// Turn kinds.
const (
	TurnInitial   TurnKind = "initial"    // the session's request
	TurnFollowup  TurnKind = "followup"   // a pass asked for with add_detail
	TurnLowAction TurnKind = "low_action" // the first turn applied too few actions
	TurnReplan    TurnKind = "replan"     // a concurrent edit made the plan stale
	TurnMessage   TurnKind = "message"    // a user message posted to the session (inbox.go)
	TurnLint      TurnKind = "lint"       // the shapes of the previous turn have layout problems (lint.go)
	TurnFeedback  TurnKind = "feedback"   // parts of the previous reply were not applied (what and why)
)

// task is one queued turn.
type task struct {
	kind     TurnKind
	text     string // the instruction of this turn
	conflict string // for replans: what conflicted
	image    string // a data: URL sent with the turn (user messages, inbox.go)
	from     string // for user messages: where the message came from (inbox.go)
}

type session struct {
	r      *Runner
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	rec      client.AgentSession
	queue    []task
	canceled bool
	ended    bool // the worker took its last task: a message must relaunch the session (inbox.go)
	// What this turn's page actions answered, for the next turn (host_actions.go).
	hostResults []string
	hostImage   string // the last snapshot, a data URL
	hostTurns   int    // host-results turns queued in this launch

	// worker-goroutine state
	spec      string
	san       *Sanitizer
	seq       int64
	knownRev  int64
	startRev  int64           // the head when this launch first read the canvas (-1 before): document diffs start there
	docs      map[string]bool // the doc nodes of the canvas (never protected: a conflict on one re-plans with fresh lines)
	place     *placer         // keeps new content in free space (placement.go)
	lastLints string          // the lints last reported, not reported again
	protected map[string]bool
	remote    bool // claimed from the shared queue: cancels arrive through the store
	followups int
	replans   int
	lowUsed   bool
	turn      int
	started   time.Time
	firstAct  bool
	cmdN      int

	dl *delivery // envelopes awaiting the host's ack (browser.go)
}

// work is the session's worker: it runs queued turns in FIFO order.
func (s *session) work() {
	r := s.r
	defer r.wg.Done()
	defer close(s.done)
	defer func() {
		r.mu.Lock()
		if r.sessions[s.rec.ID] == s { // a message may have relaunched it already
			delete(r.sessions, s.rec.ID)
		}
		r.mu.Unlock()
	}()
	defer s.cancel()
	final, detail := client.AgentDone, ""
	acksAwaited := false
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			// The host's acks of the last envelopes are awaited with the
			// session still taking messages: one posted meanwhile is its
			// next turn, not a wait for the session to end and reopen.
			if s.awaitAcks() {
				continue
			}
			s.mu.Lock()
			if len(s.queue) > 0 && s.ctx.Err() == nil {
				s.mu.Unlock()
				continue
			}
			s.ended = true
			s.mu.Unlock()
			acksAwaited = true
			break
		}
		t := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		if err := s.runTurn(t); err != nil {
			final, detail = client.AgentError, err.Error()
			if s.ctx.Err() != nil {
				final, detail = s.endReason()
			}
			break
		}
		if s.ctx.Err() != nil {
			final, detail = s.endReason()
			break
		}
		s.mu.Lock()
		more := len(s.queue) > 0
		s.mu.Unlock()
		if more {
			s.status(client.AgentScheduled, map[string]any{"queue": len(s.queue)})
		}
	}
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	if final != client.AgentCanceled && !acksAwaited {
		s.awaitAcks()
	}
	s.finish(final, detail)
	s.handOff(final)
}

func (s *session) endReason() (string, string) {
	s.mu.Lock()
	canceled := s.canceled
	s.mu.Unlock()
	if canceled {
		return client.AgentCanceled, "canceled"
	}
	if errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		return client.AgentError, fmt.Sprintf("watchdog: the run exceeded %s", s.r.d.Config.Watchdog)
	}
	return client.AgentCanceled, "runner stopped"
}

// finish saves the session's final state. A session claimed from the
// shared queue and canceled through the store as it ended is saved as
// canceled: its canceler (Queue.Cancel) waits for this save.
func (s *session) finish(state, detail string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := s.saveFinal(ctx, state, detail)
	if errors.Is(err, canvas.ErrConflict) && s.remote && state != client.AgentCanceled {
		if st, _ := s.r.d.Store.AgentSessionState(ctx, rec.ID); st == client.AgentCanceled {
			state, detail = client.AgentCanceled, "canceled"
			rec, err = s.saveFinal(ctx, state, detail)
		}
	}
	if err != nil && !errors.Is(err, canvas.ErrConflict) {
		s.r.log.Error("agent: saving session failed", "session_id", rec.ID, "err", err)
	}
	s.r.publish(rec.CanvasID, client.EventAgentStatus, StatusEvent{Type: "agent:status", SessionID: rec.ID, State: state, Detail: detailOrNil(detail)})
	s.r.d.Metrics.session(state)
	s.r.log.Info("agent: session ended", "session_id", rec.ID, "canvas_id", rec.CanvasID, "state", state, "detail", detail,
		"turns", rec.Stats.Turns, "applied", rec.Stats.ActionsApplied, "dropped", rec.Stats.ActionsDropped,
		"conflicts", rec.Stats.Conflicts, "followups", rec.Stats.FollowUps)
}

// saveFinal stores the session with its final state.
func (s *session) saveFinal(ctx context.Context, state, detail string) (client.AgentSession, error) {
	s.mu.Lock()
	s.rec.State, s.rec.Detail = state, detail
	s.rec.UpdatedAt = s.r.d.Now().UTC()
	rec := s.rec
	s.mu.Unlock()
	return rec, s.r.d.Store.SaveAgentSession(ctx, rec)
}

func detailOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (r *Runner) publish(canvasID, event string, v any) { r.d.Events.PublishEvent(canvasID, event, v) }

// status publishes agent:status and stores the state.
func (s *session) status(state string, detail any) {
	s.mu.Lock()
	if s.canceled && state != client.AgentCanceled {
		s.mu.Unlock()
		return
	}
	s.rec.State = state
	s.rec.UpdatedAt = s.r.d.Now().UTC()
	rec := s.rec
	s.mu.Unlock()
	s.r.publish(rec.CanvasID, client.EventAgentStatus, StatusEvent{Type: "agent:status", SessionID: rec.ID, State: state, Detail: detail})
	if err := s.r.d.Store.SaveAgentSession(s.ctx, rec); err != nil && s.ctx.Err() == nil {
		if errors.Is(err, canvas.ErrConflict) {
			s.markCanceled() // ended elsewhere (a cancel through another server)
			return
		}
		s.r.log.Warn("agent: saving session state failed", "session_id", rec.ID, "err", err)
	}
}

func (s *session) note(role, text string) {
	s.mu.Lock()
	s.rec.Transcript = append(s.rec.Transcript, client.TranscriptEntry{Role: role, Text: text, TS: s.r.d.Now().UTC()})
	if n := len(s.rec.Transcript); n > 500 {
		s.rec.Transcript = s.rec.Transcript[n-500:]
	}
	s.mu.Unlock()
}

func (s *session) chat(role, text string) {
	s.note(role, text)
	s.r.publish(s.rec.CanvasID, client.EventAgentChat, ChatEvent{Type: "agent:chat", SessionID: s.rec.ID, Message: ChatMessage{Role: role, Text: text}})
}

func (s *session) stats(f func(st *client.AgentStats)) {
	s.mu.Lock()
	f(&s.rec.Stats)
	s.mu.Unlock()
}

// countTokens adds a model call's usage (u.nonNegative) to the session's
// token counts.
func countTokens(st *client.AgentStats, u Usage) {
	st.InputTokens += u.Input
	st.OutputTokens += u.Output
	st.CacheReadTokens += u.CacheRead
	st.CacheCreationTokens += u.CacheCreation
}

// nextEnvelope numbers an agent:action envelope (seq strictly increasing per session).
func (s *session) nextEnvelope(partial bool, actions []Action) ActionEnvelope {
	s.seq++
	return ActionEnvelope{V: ActionsVersion, SessionID: s.rec.ID, Seq: s.seq, Partial: partial, Actions: actions, TS: s.r.d.Now().UnixMilli()}
}

// enqueue adds a follow-up turn if the session's bounds allow it.
func (s *session) enqueue(t task) bool {
	cfg := s.r.d.Config
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.canceled || len(s.queue) >= cfg.QueueDepth {
		return false
	}
	switch t.kind {
	case TurnReplan:
		if s.replans >= cfg.MaxReplans {
			return false
		}
		s.replans++
		s.rec.Stats.Replans++
		s.queue = append([]task{t}, s.queue...) // a re-plan goes first
	default:
		if s.followups >= cfg.MaxFollowups {
			return false
		}
		s.followups++
		s.rec.Stats.FollowUps++
		s.queue = append(s.queue, t)
	}
	s.r.d.Metrics.followup(string(t.kind))
	return true
}
