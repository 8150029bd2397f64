package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// The store.AgentStore part of the suite.

// agentStore returns the store under test as a store.AgentStore.
func (h *harness) agentStore(t *testing.T) store.AgentStore {
	t.Helper()
	as := h.s.Capabilities().Agents
	if as == nil {
		t.Skipf("%T does not implement store.AgentStore", h.s)
	}
	return as
}

func agentSession(id, canvasID, state string, created time.Time) canvas.AgentSession {
	return canvas.AgentSession{ID: id, CanvasID: canvasID, ActorID: "agent-1", State: state, Model: "debug/fake",
		Message: "draw " + id, Viewport: &canvas.Box{X: 1, Y: 2, W: 300, H: 200}, Selection: []string{"n1"},
		Transcript: []canvas.TranscriptEntry{{Role: "user", Text: "draw " + id, TS: created.Truncate(time.Microsecond)}},
		Stats:      canvas.AgentStats{Turns: 1, ActionsApplied: 2, TTFBMS: 1.5},
		CreatedAt:  created, UpdatedAt: created}
}

func mustCreateSession(t *testing.T, as store.AgentStore, a canvas.AgentSession) {
	t.Helper()
	if err := as.CreateAgentSession(ctxT(t), a); err != nil {
		t.Fatalf("CreateAgentSession(%q): %v", a.ID, err)
	}
}

func mustGetSession(t *testing.T, as store.AgentStore, id string) canvas.AgentSession {
	t.Helper()
	got, err := as.GetAgentSession(ctxT(t), id)
	if err != nil {
		t.Fatalf("GetAgentSession(%q): %v", id, err)
	}
	return got
}

// checkSession compares everything but Todos and Turns.
func checkSession(t *testing.T, got, want canvas.AgentSession) {
	t.Helper()
	g, w := got, want
	g.Todos, g.Turns, w.Todos, w.Turns = nil, nil, nil, nil
	if !sameTime(g.CreatedAt, w.CreatedAt) || !sameTime(g.UpdatedAt, w.UpdatedAt) {
		t.Errorf("session %s times: got created %v updated %v, want %v %v", want.ID, g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt)
	}
	g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("session %s:\n got %+v\nwant %+v", want.ID, g, w)
	}
}

func testAgentSessions(t *testing.T, h *harness) {
	as := h.agentStore(t)
	ctx := ctxT(t)
	mustCreate(t, h.s, "c1")
	a := agentSession("as_1", "c1", canvas.AgentWaitingContext, t0)
	mustCreateSession(t, as, a)
	got := mustGetSession(t, as, "as_1")
	checkSession(t, got, a)
	if got.Todos == nil || len(got.Todos) != 0 || got.Turns == nil || len(got.Turns) != 0 {
		t.Errorf("new session: todos %v turns %v, want empty lists", got.Todos, got.Turns)
	}
	wantErr(t, "CreateAgentSession of an existing id", as.CreateAgentSession(ctx, a), canvas.ErrAlreadyExists)
	wantErr(t, "CreateAgentSession on a missing canvas", as.CreateAgentSession(ctx, agentSession("as_x", "nope", "queued", t0)), canvas.ErrNotFound)
	_, err := as.GetAgentSession(ctx, "as_missing")
	wantErr(t, "GetAgentSession of a missing id", err, canvas.ErrNotFound)

	a.State, a.Detail, a.Message = canvas.AgentStreaming, "turn 2", "draw more"
	a.Transcript = append(a.Transcript, canvas.TranscriptEntry{Role: "assistant", Text: "ok", TS: t0.Add(time.Second).Truncate(time.Microsecond)})
	a.Stats.Conflicts = 3
	a.Stats.InputTokens, a.Stats.OutputTokens, a.Stats.CacheReadTokens, a.Stats.CacheCreationTokens = 120, 45, 2000, 300
	a.UpdatedAt = t0.Add(2 * time.Second)
	if err := as.SaveAgentSession(ctx, a); err != nil {
		t.Fatalf("SaveAgentSession: %v", err)
	}
	checkSession(t, mustGetSession(t, as, "as_1"), a)
	if st, err := as.AgentSessionState(ctx, "as_1"); err != nil || st != canvas.AgentStreaming {
		t.Errorf("AgentSessionState = %q, %v", st, err)
	}
	_, err = as.AgentSessionState(ctx, "as_missing")
	wantErr(t, "AgentSessionState of a missing id", err, canvas.ErrNotFound)
	wantErr(t, "SaveAgentSession of a missing id", as.SaveAgentSession(ctx, agentSession("as_missing", "c1", "done", t0)), canvas.ErrNotFound)

	was, at, err := as.CancelAgentSession(ctx, "as_1")
	if err != nil || was != canvas.AgentStreaming {
		t.Fatalf("CancelAgentSession = %q, %v; want streaming, nil", was, err)
	}
	if got := mustGetSession(t, as, "as_1"); got.State != canvas.AgentCanceled || !sameTime(got.UpdatedAt, at) {
		t.Errorf("after CancelAgentSession: state %q updated %v, want canceled at %v", got.State, got.UpdatedAt, at)
	}
	if was, at, err := as.CancelAgentSession(ctx, "as_1"); err != nil || was != "" || !at.IsZero() {
		t.Errorf("CancelAgentSession of a canceled session = %q, %v, %v; want \"\", zero, nil", was, at, err)
	}
	_, _, err = as.CancelAgentSession(ctx, "as_missing")
	wantErr(t, "CancelAgentSession of a missing id", err, canvas.ErrNotFound)
	a.State = canvas.AgentDone
	wantErr(t, "SaveAgentSession of a canceled session", as.SaveAgentSession(ctx, a), canvas.ErrConflict)
	if st, _ := as.AgentSessionState(ctx, "as_1"); st != canvas.AgentCanceled {
		t.Errorf("state after the refused save = %q, want canceled", st)
	}
	// The final save of the worker that ran it: canceled over canceled lands.
	a.State, a.Detail, a.UpdatedAt = canvas.AgentCanceled, "canceled", at.Add(time.Second)
	a.Stats.ActionsApplied = 7
	if err := as.SaveAgentSession(ctx, a); err != nil {
		t.Fatalf("SaveAgentSession canceled over canceled: %v", err)
	}
	checkSession(t, mustGetSession(t, as, "as_1"), a)
	// A session that ended done or in error is not saved over as canceled.
	for _, st := range []string{canvas.AgentDone, canvas.AgentError} {
		ended := agentSession("as_"+st, "c1", st, t0)
		mustCreateSession(t, as, ended)
		ended.State = canvas.AgentCanceled
		wantErr(t, "SaveAgentSession canceled over "+st, as.SaveAgentSession(ctx, ended), canvas.ErrConflict)
		if got, _ := as.AgentSessionState(ctx, ended.ID); got != st {
			t.Errorf("state after the refused save = %q, want %s", got, st)
		}
	}

	h.reopen(t)
	as = h.agentStore(t)
	if got := mustGetSession(t, as, "as_1"); got.State != canvas.AgentCanceled || got.Stats.Conflicts != 3 {
		t.Errorf("after reopen: %+v", got)
	}
}

func testAgentClaim(t *testing.T, h *harness) {
	as := h.agentStore(t)
	ctx := ctxT(t)
	mustCreate(t, h.s, "c1")
	_, err := as.ClaimAgentSession(ctx, "agent-w")
	wantErr(t, "ClaimAgentSession with none queued", err, canvas.ErrNotFound)
	const n = 8
	for i := 0; i < n; i++ {
		mustCreateSession(t, as, agentSession(fmt.Sprintf("as_%02d", i), "c1", canvas.AgentQueued, t0.Add(time.Duration(n-i)*time.Second)))
	}
	mustCreateSession(t, as, agentSession("as_running", "c1", canvas.AgentStreaming, t0))
	first, err := as.ClaimAgentSession(ctx, "agent-w")
	if err != nil || first.ID != fmt.Sprintf("as_%02d", n-1) || first.State != canvas.AgentWaitingContext || first.ActorID != "agent-w" {
		t.Fatalf("ClaimAgentSession = %+v, %v; want the oldest queued session, claimed", first, err)
	}
	// A queued session canceled is never claimed.
	if was, _, err := as.CancelAgentSession(ctx, "as_00"); err != nil || was != canvas.AgentQueued {
		t.Fatalf("CancelAgentSession of a queued session = %q, %v; want queued, nil", was, err)
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				got, err := as.ClaimAgentSession(ctx, fmt.Sprintf("agent-%d", w))
				if errors.Is(err, canvas.ErrNotFound) {
					return
				}
				if err != nil {
					t.Errorf("concurrent ClaimAgentSession: %v", err)
					return
				}
				mu.Lock()
				claimed[got.ID]++
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if len(claimed) != n-2 {
		t.Errorf("concurrent claimers got %d sessions, want %d: %v", len(claimed), n-2, claimed)
	}
	for id, k := range claimed {
		if k != 1 || id == first.ID || id == "as_running" || id == "as_00" {
			t.Errorf("session %s claimed %d times", id, k)
		}
	}
}

func testAgentReopenAndLatest(t *testing.T, h *harness) {
	as := h.agentStore(t)
	ctx := ctxT(t)
	mustCreate(t, h.s, "c1")
	mustCreate(t, h.s, "c2")
	ids := func(canvasID string, limit int) []string {
		t.Helper()
		list, err := as.ListAgentSessions(ctx, canvasID, limit)
		if err != nil {
			t.Fatalf("ListAgentSessions(%s, %d): %v", canvasID, limit, err)
		}
		out := []string{}
		for _, a := range list {
			out = append(out, a.ID)
		}
		return out
	}
	if got := ids("c1", 5); len(got) != 0 {
		t.Errorf("ListAgentSessions of a canvas without sessions = %v", got)
	}
	_, err := as.ListAgentSessions(ctx, "c1", 0)
	wantErr(t, "ListAgentSessions with limit 0", err, canvas.ErrUnprocessable)
	running := agentSession("as_run", "c1", canvas.AgentStreaming, t0)
	mustCreateSession(t, as, running)
	queued := agentSession("as_q", "c1", canvas.AgentQueued, t0.Add(time.Second))
	mustCreateSession(t, as, queued)
	mustCreateSession(t, as, agentSession("as_other", "c2", canvas.AgentDone, t0.Add(2*time.Second)))
	if got := ids("c1", 1); fmt.Sprint(got) != "[as_q]" {
		t.Errorf("the latest session of c1 = %v; want [as_q]", got)
	}
	if got := ids("c1", 10); fmt.Sprint(got) != "[as_q as_run]" {
		t.Errorf("the sessions of c1 = %v; want [as_q as_run], newest first", got)
	}
	if list, _ := as.ListAgentSessions(ctx, "c1", 10); len(list) == 2 && (list[1].Todos == nil || list[1].Turns == nil) {
		t.Errorf("a listed session without its todos and turns: %+v", list[1])
	}

	re := running
	re.State, re.Message, re.UpdatedAt = canvas.AgentWaitingContext, "again", t0.Add(time.Minute)
	wantErr(t, "ReopenAgentSession of a fresh running session", as.ReopenAgentSession(ctx, re, t0.Add(-time.Second)), canvas.ErrConflict)
	if err := as.ReopenAgentSession(ctx, re, t0.Add(time.Second)); err != nil {
		t.Fatalf("ReopenAgentSession of a stale running session: %v", err)
	}
	checkSession(t, mustGetSession(t, as, "as_run"), re)
	q := queued
	q.State = canvas.AgentWaitingContext
	wantErr(t, "ReopenAgentSession of a queued session", as.ReopenAgentSession(ctx, q, t0.Add(time.Hour)), canvas.ErrConflict)

	re.State, re.UpdatedAt = canvas.AgentDone, t0.Add(2*time.Minute)
	if err := as.SaveAgentSession(ctx, re); err != nil {
		t.Fatal(err)
	}
	again := re
	again.State, again.UpdatedAt = canvas.AgentWaitingContext, t0.Add(3*time.Minute)
	if err := as.ReopenAgentSession(ctx, again, t0); err != nil {
		t.Fatalf("ReopenAgentSession of a done session: %v", err)
	}
	checkSession(t, mustGetSession(t, as, "as_run"), again)
	wantErr(t, "ReopenAgentSession of a missing session", as.ReopenAgentSession(ctx, agentSession("as_none", "c1", "done", t0), t0), canvas.ErrNotFound)

	// Of concurrent reopeners of one ended session, exactly one wins.
	again.State, again.UpdatedAt = canvas.AgentError, t0.Add(4*time.Minute)
	if err := as.SaveAgentSession(ctx, again); err != nil {
		t.Fatal(err)
	}
	var wins, conflicts int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := again
			r.State, r.UpdatedAt = canvas.AgentWaitingContext, time.Now()
			err := as.ReopenAgentSession(ctx, r, t0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, canvas.ErrConflict):
				conflicts++
			default:
				t.Errorf("concurrent ReopenAgentSession: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != 5 {
		t.Errorf("concurrent reopens: %d won, %d conflicts; want 1 and 5", wins, conflicts)
	}
}

func testAgentTurns(t *testing.T, h *harness) {
	as := h.agentStore(t)
	ctx := ctxT(t)
	mustCreate(t, h.s, "c1")
	mustCreateSession(t, as, agentSession("as_1", "c1", canvas.AgentStreaming, t0))
	end := t0.Add(3 * time.Second).Truncate(time.Microsecond)
	t1 := canvas.AgentTurn{Turn: 1, Kind: "initial", Revs: []int64{3}, StartedAt: t0.Truncate(time.Microsecond)}
	t2 := canvas.AgentTurn{Turn: 2, Kind: "lint", Revs: []int64{}, StartedAt: end, EndedAt: &end}
	for _, tr := range []canvas.AgentTurn{t2, t1} {
		if err := as.SaveAgentTurn(ctx, "as_1", tr); err != nil {
			t.Fatalf("SaveAgentTurn(%d): %v", tr.Turn, err)
		}
	}
	t1.Revs, t1.EndedAt = []int64{3, 5, 9}, &end
	if err := as.SaveAgentTurn(ctx, "as_1", t1); err != nil {
		t.Fatalf("SaveAgentTurn(1) again: %v", err)
	}
	wantErr(t, "SaveAgentTurn of a missing session", as.SaveAgentTurn(ctx, "as_missing", t1), canvas.ErrNotFound)
	check := func(what string) {
		t.Helper()
		got := mustGetSession(t, as, "as_1").Turns
		if len(got) != 2 || !reflect.DeepEqual(got[0].Revs, t1.Revs) || !reflect.DeepEqual(got[1].Revs, []int64{}) ||
			got[0].Turn != 1 || got[0].Kind != "initial" || got[1].Turn != 2 || got[1].Kind != "lint" ||
			!sameTime(got[0].StartedAt, t1.StartedAt) || got[0].EndedAt == nil || !sameTime(*got[0].EndedAt, end) {
			t.Errorf("%s: turns %+v", what, got)
		}
	}
	check("turns")
	h.reopen(t)
	as = h.agentStore(t)
	check("turns after reopen")
}

// testAgentTurnsReverted: MarkAgentTurnsReverted records a turn's newest
// revert (a turn reverted again moves to the newer revision, never back to
// an older one), skips unknown turns, survives SaveAgentTurn and a reopen.
func testAgentTurnsReverted(t *testing.T, h *harness) {
	as := h.agentStore(t)
	ctx := ctxT(t)
	mustCreate(t, h.s, "c1")
	mustCreateSession(t, as, agentSession("as_1", "c1", canvas.AgentStreaming, t0))
	for n := 1; n <= 3; n++ {
		if err := as.SaveAgentTurn(ctx, "as_1", canvas.AgentTurn{Turn: n, Kind: "initial", Revs: []int64{int64(n)}, StartedAt: t0}); err != nil {
			t.Fatalf("SaveAgentTurn(%d): %v", n, err)
		}
	}
	reverted := func(what string, want map[int]int64) {
		t.Helper()
		for _, tr := range mustGetSession(t, as, "as_1").Turns {
			var got int64 // 0: none
			if tr.RevertedRev != nil {
				got = *tr.RevertedRev
			}
			if got != want[tr.Turn] {
				t.Errorf("%s: turn %d reverted_rev = %d, want %d (0: none)", what, tr.Turn, got, want[tr.Turn])
			}
		}
	}
	reverted("new turns", nil)
	mark := func(turns []int, rev int64, want []int) {
		t.Helper()
		got, err := as.MarkAgentTurnsReverted(ctx, "as_1", turns, rev)
		if err != nil {
			t.Fatalf("MarkAgentTurnsReverted(%v, %d): %v", turns, rev, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("MarkAgentTurnsReverted(%v, %d) marked %v, want %v", turns, rev, got, want)
		}
	}
	mark([]int{2}, 10, []int{2})
	reverted("turn 2 reverted", map[int]int64{2: 10})
	mark([]int{3, 1, 9}, 11, []int{1, 3}) // 9 does not exist
	reverted("the rest reverted", map[int]int64{1: 11, 2: 10, 3: 11})
	mark([]int{2, 1}, 12, []int{1, 2})
	reverted("turns 1 and 2 reverted again", map[int]int64{1: 12, 2: 12, 3: 11})
	mark([]int{1, 2, 3}, 11, []int{})
	reverted("an older revert moves nothing back", map[int]int64{1: 12, 2: 12, 3: 11})
	mark([]int{1, 2, 3}, 12, []int{3})
	reverted("turn 3 reverted again", map[int]int64{1: 12, 2: 12, 3: 12})
	end := t0.Add(time.Second)
	if err := as.SaveAgentTurn(ctx, "as_1", canvas.AgentTurn{Turn: 2, Kind: "initial", Revs: []int64{2, 4}, StartedAt: t0, EndedAt: &end}); err != nil {
		t.Fatalf("SaveAgentTurn(2) again: %v", err)
	}
	reverted("turn 2 saved again", map[int]int64{1: 12, 2: 12, 3: 12})
	_, err := as.MarkAgentTurnsReverted(ctx, "as_missing", []int{1}, 13)
	wantErr(t, "MarkAgentTurnsReverted of a missing session", err, canvas.ErrNotFound)
	_, err = as.MarkAgentTurnsReverted(ctx, "as_1", []int{1}, 0)
	wantErr(t, "MarkAgentTurnsReverted at revision 0", err, canvas.ErrUnprocessable)
	h.reopen(t)
	as = h.agentStore(t)
	reverted("after reopen", map[int]int64{1: 12, 2: 12, 3: 12})
}

func testAgentTodos(t *testing.T, h *harness) {
	as := h.agentStore(t)
	ctx := ctxT(t)
	mustCreate(t, h.s, "c1")
	mustCreateSession(t, as, agentSession("as_1", "c1", canvas.AgentStreaming, t0))
	upsert := func(text, status string, at time.Time) (canvas.AgentTodo, bool) {
		t.Helper()
		td, changed, err := as.UpsertAgentTodo(ctx, canvas.AgentTodo{SessionID: "as_1", Text: text, Status: status, CreatedAt: at})
		if err != nil {
			t.Fatalf("UpsertAgentTodo(%q, %q): %v", text, status, err)
		}
		return td, changed
	}
	a, changed := upsert("Add a footer", "", t0)
	if !changed || a.ID == "" || a.Status != canvas.TodoOpen || a.Position != 0 || a.ResolvedAt != nil || !sameTime(a.CreatedAt, t0) {
		t.Fatalf("new todo = %+v, changed %v", a, changed)
	}
	b, _ := upsert("Add a header", canvas.TodoSkipped, t0.Add(time.Second))
	if b.Position != 1 || b.ID == a.ID || b.ResolvedAt == nil || !sameTime(*b.ResolvedAt, t0.Add(time.Second)) {
		t.Errorf("second todo = %+v", b)
	}
	if again, changed := upsert("Add a footer", "", t0.Add(2*time.Second)); changed || again.ID != a.ID || again.Status != canvas.TodoOpen {
		t.Errorf("same text again = %+v, changed %v; want the same todo, unchanged", again, changed)
	}
	done := t0.Add(3 * time.Second)
	if d, changed := upsert("Add a footer", canvas.TodoDone, done); !changed || d.ID != a.ID || d.Status != canvas.TodoDone ||
		d.ResolvedAt == nil || !sameTime(*d.ResolvedAt, done) || !sameTime(d.CreatedAt, t0) || d.Position != 0 {
		t.Errorf("marked done = %+v, changed %v", d, changed)
	}
	if d, changed := upsert("Add a footer", canvas.TodoDone, done.Add(time.Second)); changed || !sameTime(*d.ResolvedAt, done) {
		t.Errorf("done again = %+v, changed %v; want unchanged", d, changed)
	}
	if o, changed := upsert("Add a header", canvas.TodoOpen, done); !changed || o.Status != canvas.TodoOpen || o.ResolvedAt != nil {
		t.Errorf("reopened = %+v, changed %v", o, changed)
	}
	_, _, err := as.UpsertAgentTodo(ctx, canvas.AgentTodo{SessionID: "as_1", Text: "x", Status: "later", CreatedAt: t0})
	wantErr(t, "UpsertAgentTodo with a bad status", err, canvas.ErrUnprocessable)
	_, _, err = as.UpsertAgentTodo(ctx, canvas.AgentTodo{SessionID: "as_missing", Text: "x", CreatedAt: t0})
	wantErr(t, "UpsertAgentTodo of a missing session", err, canvas.ErrNotFound)

	todos := mustGetSession(t, as, "as_1").Todos
	if len(todos) != 2 || todos[0].Text != "Add a footer" || todos[0].Status != canvas.TodoDone || todos[1].Text != "Add a header" ||
		todos[1].Status != canvas.TodoOpen {
		t.Errorf("todos = %+v; want one row per text in position order", todos)
	}
}

func testAgentDeleteCanvas(t *testing.T, h *harness) {
	as := h.agentStore(t)
	ctx := ctxT(t)
	mustCreate(t, h.s, "c1")
	mustCreateSession(t, as, agentSession("as_1", "c1", canvas.AgentDone, t0))
	if _, _, err := as.UpsertAgentTodo(ctx, canvas.AgentTodo{SessionID: "as_1", Text: "t", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := as.SaveAgentTurn(ctx, "as_1", canvas.AgentTurn{Turn: 1, Kind: "initial", Revs: []int64{1}, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := h.s.DeleteCanvas(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	_, err := as.GetAgentSession(ctx, "as_1")
	wantErr(t, "GetAgentSession after DeleteCanvas", err, canvas.ErrNotFound)
	mustCreate(t, h.s, "c1")
	mustCreateSession(t, as, agentSession("as_1", "c1", canvas.AgentDone, t0))
	if got := mustGetSession(t, as, "as_1"); len(got.Todos) != 0 || len(got.Turns) != 0 {
		t.Errorf("a new session with the id of a deleted one has todos %v turns %v", got.Todos, got.Turns)
	}
}
