// Package storetest is the conformance suite every store.Store must pass. It
// checks the contract written in store/store.go, nothing backend-specific:
// change store semantics here first, then in every backend.
//
// Usage from a backend's tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) (store.Store, storetest.Reopen) {
//			path := filepath.Join(t.TempDir(), "canvas.db")
//			open := func(t *testing.T) store.Store {
//				s, err := sqlitestore.Open(context.Background(), path)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return s
//			}
//			return open(t), open
//		})
//	}
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// Reopen opens a new Store over the same data as the Store it was returned
// with. The suite calls it after it has closed that Store, and for the
// Notifier, Broadcaster and MigrateModel1 cases while that Store is still
// open (a second process on the same data).
type Reopen func(t *testing.T) store.Store

// Opener opens a fresh, EMPTY store for one subtest (no canvases, tokens or
// records; the suite checks exact listings) and returns it with a Reopen
// for the same data. The suite closes every Store it receives exactly once
// (also on failure), so an Opener must not close it itself; it should
// remove its own resources (files, schemas) with t.Cleanup.
type Opener func(t *testing.T) (store.Store, Reopen)

// Run runs the whole suite as subtests of t. Subtests run one after another.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"Ping", testPing},
		{"CreateGetCanvas", testCreateGetCanvas},
		{"ListCanvases", testListCanvases},
		{"DeleteCanvas", testDeleteCanvas},
		{"DeleteCanvasRemovesEverything", testDeleteCanvasRemovesEverything},
		{"AppendAndRead", testAppendAndRead},
		{"AppendMultiCommitAtomic", testAppendMultiCommit},
		{"AppendHeadMismatchWritesNothing", testAppendHeadMismatch},
		{"AppendDuplicateIdempotencyKeyWritesNothing", testAppendDuplicateKey},
		{"AppendMissingCanvas", testAppendMissingCanvas},
		{"ReadCommitsRanges", testReadCommitsRanges},
		{"CommitRoundTrip", testCommitRoundTrip},
		{"ConcurrentAppendSameHeadOneWins", testConcurrentSameHead},
		{"ConcurrentAppendAcrossCanvases", testConcurrentAcrossCanvases},
		{"ConcurrentFailuresDoNotAffectOthers", testConcurrentMixedFailures},
		{"StateSnapshots", testStateSnapshots},
		{"Idempotency", testIdempotency},
		{"PruneIdempotency", testPruneIdempotency},
		{"NamedSnapshots", testNamedSnapshots},
		{"Tokens", testTokens},
		{"TokenExpiry", testTokenExpiry},
		{"SurvivesReopen", testReopen},
		{"AgentSessions", testAgentSessions},
		{"AgentClaim", testAgentClaim},
		{"AgentReopenAndLatest", testAgentReopenAndLatest},
		{"AgentTurns", testAgentTurns},
		{"AgentTurnsReverted", testAgentTurnsReverted},
		{"AgentTodos", testAgentTodos},
		{"AgentDeleteCanvas", testAgentDeleteCanvas},
		{"HostFiles", testHostFiles},
		{"HostState", testHostState},
		{"SharedSecret", testSharedSecret},
		{"Notifier", testNotifier},
		{"Broadcaster", testBroadcaster},
		{"MigrateModel1", testMigrateModel1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, reopen := open(t)
			h := &harness{reopenFn: reopen}
			h.adopt(t, s)
			tc.fn(t, h)
		})
	}
}

// harness holds the store under test and closes it exactly once.
type harness struct {
	s        store.Store
	close    func() error
	reopenFn Reopen
}

func (h *harness) adopt(t *testing.T, s store.Store) {
	if s == nil {
		t.Fatal("storetest: opener returned a nil store")
	}
	var once sync.Once
	var err error
	h.s = s
	h.close = func() error {
		once.Do(func() { err = s.Close() })
		return err
	}
	t.Cleanup(func() { _ = h.close() })
}

// reopen closes the current store and opens a new one on the same data.
func (h *harness) reopen(t *testing.T) {
	t.Helper()
	if err := h.close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	h.adopt(t, h.reopenFn(t))
}

// ---- fixtures and helpers ----

// t0 has nanoseconds on purpose: stores keep microseconds.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, s store.Store, id string) canvas.Canvas {
	t.Helper()
	c := canvas.Canvas{ID: id, Title: "title of " + id, CreatedAt: t0, CreatedBy: "human-1"}
	if err := s.CreateCanvas(ctxT(t), c); err != nil {
		t.Fatalf("CreateCanvas(%q): %v", id, err)
	}
	return c
}

// commitAt builds a realistic commit for rev of canvasID.
func commitAt(canvasID string, rev int64) canvas.Commit {
	id := fmt.Sprintf("shape:seed%d-0", rev)
	val, _ := json.Marshal(map[string]any{"id": id, "type": "geo", "x": float64(rev), "y": 2.5, "name": "n"})
	return canvas.Commit{
		CanvasID:  canvasID,
		EventID:   fmt.Sprintf("%d-%016x", rev, rev*7919),
		Rev:       rev,
		CmdID:     fmt.Sprintf("cmd_%d", rev),
		Type:      "create_node",
		Args:      json.RawMessage(fmt.Sprintf(`{"name":"n","transform":{"x":%d,"y":2.5}}`, rev)),
		ActorID:   "agent-00000000-0000-4000-8000-000000000001",
		ActorType: canvas.ActorAgent,
		TS:        t0.Add(time.Duration(rev) * time.Millisecond),
		Changes: []canvas.Change{
			{Op: canvas.OpPut, Kind: canvas.KindNode, ID: id, Value: val},
		},
	}
}

func commitsFrom(canvasID string, firstRev int64, n int) []canvas.Commit {
	out := make([]canvas.Commit, n)
	for i := range out {
		out[i] = commitAt(canvasID, firstRev+int64(i))
	}
	return out
}

func idemRecord(canvasID, key string, rev int64) store.IdempotencyRecord {
	return store.IdempotencyRecord{
		CanvasID:    canvasID,
		Key:         key,
		Fingerprint: "fp\x00" + key,
		Outcome:     store.OutcomeApplied,
		Result:      []byte(fmt.Sprintf(`{"status":"applied","current_rev":%d}`, rev)),
		Rev:         rev,
		CreatedAt:   t0,
	}
}

func mustAppend(t *testing.T, s store.Store, canvasID string, head int64, commits []canvas.Commit, idem ...store.IdempotencyRecord) {
	t.Helper()
	if err := s.Append(ctxT(t), canvasID, head, commits, idem); err != nil {
		t.Fatalf("Append(%q, head %d, %d commits): %v", canvasID, head, len(commits), err)
	}
}

func mustRead(t *testing.T, s store.Store, canvasID string, after int64, limit int) []canvas.Commit {
	t.Helper()
	cs, err := s.ReadCommits(ctxT(t), canvasID, after, limit)
	if err != nil {
		t.Fatalf("ReadCommits(%q, after %d, limit %d): %v", canvasID, after, limit, err)
	}
	return cs
}

// wantErr checks err wraps sentinel. A not-found or already-exists message
// reaches clients as a problem detail, so it must not name the backend.
func wantErr(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got error %v, want one wrapping %q", what, err, sentinel)
	}
	if (sentinel == canvas.ErrNotFound || sentinel == canvas.ErrAlreadyExists) && strings.Contains(err.Error(), "store") {
		t.Fatalf("%s: the message %q names the backend; say what was asked for (`canvas \"x\": not found`)", what, err)
	}
}

func headOf(t *testing.T, s store.Store, id string) int64 {
	t.Helper()
	c, err := s.GetCanvas(ctxT(t), id)
	if err != nil {
		t.Fatalf("GetCanvas(%q): %v", id, err)
	}
	return c.HeadRev
}

// sameTime: stores keep at least microsecond precision.
func sameTime(got, want time.Time) bool {
	d := got.Sub(want)
	return d > -time.Microsecond && d < time.Microsecond
}

// jsonEqual compares two JSON texts semantically (stores may re-encode).
func jsonEqual(a, b []byte) bool {
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// checkCommit compares every field of a stored commit with what was appended.
func checkCommit(t *testing.T, got, want canvas.Commit) {
	t.Helper()
	if got.CanvasID != want.CanvasID || got.EventID != want.EventID || got.Rev != want.Rev ||
		got.CmdID != want.CmdID || got.Type != want.Type || got.ActorID != want.ActorID || got.ActorType != want.ActorType {
		t.Fatalf("commit rev %d: got %+v, want %+v", want.Rev, got, want)
	}
	if !sameTime(got.TS, want.TS) {
		t.Fatalf("commit rev %d: ts %v, want %v (to the microsecond)", want.Rev, got.TS, want.TS)
	}
	if !jsonEqual(got.Args, want.Args) {
		t.Fatalf("commit rev %d: args %s, want %s", want.Rev, got.Args, want.Args)
	}
	gc, _ := json.Marshal(got.Changes)
	wc, _ := json.Marshal(want.Changes)
	if len(got.Changes) == 0 && len(want.Changes) == 0 {
		return
	}
	if !jsonEqual(gc, wc) {
		t.Fatalf("commit rev %d: changes %s, want %s", want.Rev, gc, wc)
	}
}

// checkLog checks that canvasID's log is exactly revs 1..head, gap-free.
func checkLog(t *testing.T, s store.Store, canvasID string, head int64) []canvas.Commit {
	t.Helper()
	cs := mustRead(t, s, canvasID, 0, int(head)+10)
	if int64(len(cs)) != head {
		t.Fatalf("canvas %q: %d commits in the log, want %d", canvasID, len(cs), head)
	}
	for i, c := range cs {
		if c.Rev != int64(i+1) {
			t.Fatalf("canvas %q: commit %d has rev %d, want %d (gap or disorder)", canvasID, i, c.Rev, i+1)
		}
	}
	if got := headOf(t, s, canvasID); got != head {
		t.Fatalf("canvas %q: head %d, want %d", canvasID, got, head)
	}
	return cs
}

// ---- tests ----

func testPing(t *testing.T, h *harness) {
	if err := h.s.Ping(ctxT(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testCreateGetCanvas(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	want := mustCreate(t, s, "c-create")
	got, err := s.GetCanvas(ctx, "c-create")
	if err != nil {
		t.Fatalf("GetCanvas: %v", err)
	}
	if got.ID != want.ID || got.Title != want.Title || got.CreatedBy != want.CreatedBy || got.HeadRev != 0 || !sameTime(got.CreatedAt, want.CreatedAt) {
		t.Fatalf("GetCanvas = %+v, want %+v with head 0", got, want)
	}
	err = s.CreateCanvas(ctx, canvas.Canvas{ID: "c-create", Title: "other", CreatedAt: t0})
	wantErr(t, "CreateCanvas of an existing id", err, canvas.ErrAlreadyExists)
	if got2, _ := s.GetCanvas(ctx, "c-create"); got2.Title != want.Title {
		t.Fatalf("a failed create changed the canvas: title %q", got2.Title)
	}
	_, err = s.GetCanvas(ctx, "c-missing")
	wantErr(t, "GetCanvas of a missing id", err, canvas.ErrNotFound)

	// A non-zero HeadRev in the argument does not matter: new canvases start at 0.
	if err := s.CreateCanvas(ctx, canvas.Canvas{ID: "c-head", HeadRev: 7, CreatedAt: t0}); err != nil {
		t.Fatalf("CreateCanvas: %v", err)
	}
	if h := headOf(t, s, "c-head"); h != 0 {
		t.Fatalf("new canvas head = %d, want 0", h)
	}
}

func testListCanvases(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	list, err := s.ListCanvases(ctx)
	if err != nil {
		t.Fatalf("ListCanvases on an empty store: %v", err)
	}
	if len(list) != 0 {
		t.Fatalf("ListCanvases on an empty store = %d canvases, want 0", len(list))
	}
	// Created out of order; equal times tie-break on id.
	for _, c := range []canvas.Canvas{
		{ID: "c-b", CreatedAt: t0.Add(2 * time.Second)},
		{ID: "c-z", CreatedAt: t0},
		{ID: "c-a", CreatedAt: t0.Add(2 * time.Second)},
		{ID: "c-m", CreatedAt: t0.Add(time.Second)},
	} {
		if err := s.CreateCanvas(ctx, c); err != nil {
			t.Fatalf("CreateCanvas(%q): %v", c.ID, err)
		}
	}
	mustAppend(t, s, "c-m", 0, commitsFrom("c-m", 1, 2))
	list, err = s.ListCanvases(ctx)
	if err != nil {
		t.Fatalf("ListCanvases: %v", err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
		if c.ID == "c-m" && c.HeadRev != 2 {
			t.Fatalf("listed canvas c-m has head %d, want 2", c.HeadRev)
		}
	}
	if want := []string{"c-z", "c-m", "c-a", "c-b"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ListCanvases order = %v, want %v (creation time, then id)", ids, want)
	}
}

func testDeleteCanvas(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	mustCreate(t, s, "c-del")
	mustCreate(t, s, "c-keep")
	if err := s.DeleteCanvas(ctx, "c-del"); err != nil {
		t.Fatalf("DeleteCanvas: %v", err)
	}
	_, err := s.GetCanvas(ctx, "c-del")
	wantErr(t, "GetCanvas after delete", err, canvas.ErrNotFound)
	wantErr(t, "DeleteCanvas twice", s.DeleteCanvas(ctx, "c-del"), canvas.ErrNotFound)
	wantErr(t, "DeleteCanvas of a missing id", s.DeleteCanvas(ctx, "c-never"), canvas.ErrNotFound)
	if _, err := s.GetCanvas(ctx, "c-keep"); err != nil {
		t.Fatalf("deleting one canvas affected another: %v", err)
	}
	list, err := s.ListCanvases(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "c-keep" {
		t.Fatalf("ListCanvases after delete = %v, %v; want only c-keep", list, err)
	}
}

func testDeleteCanvasRemovesEverything(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	const id = "c-gone"
	mustCreate(t, s, id)
	mustCreate(t, s, "c-other")
	mustAppend(t, s, id, 0, commitsFrom(id, 1, 3), idemRecord(id, "k1", 1))
	mustAppend(t, s, "c-other", 0, commitsFrom("c-other", 1, 1), idemRecord("c-other", "k1", 1))
	if err := s.SaveStateSnapshot(ctx, id, store.StateSnapshot{Rev: 3, Schema: 1, Data: []byte(`{"rev":3}`)}); err != nil {
		t.Fatalf("SaveStateSnapshot: %v", err)
	}
	if err := s.CreateNamedSnapshot(ctx, store.NamedSnapshot{CanvasID: id, ID: "snap1", Label: "l", Rev: 3, CreatedAt: t0}); err != nil {
		t.Fatalf("CreateNamedSnapshot: %v", err)
	}
	if err := s.DeleteCanvas(ctx, id); err != nil {
		t.Fatalf("DeleteCanvas: %v", err)
	}
	check := func(stage string) {
		t.Helper()
		if _, err := s.LoadStateSnapshot(ctx, id, 100); !errors.Is(err, canvas.ErrNotFound) {
			t.Fatalf("%s: LoadStateSnapshot = %v, want ErrNotFound", stage, err)
		}
		if _, err := s.GetIdempotency(ctx, id, "k1"); !errors.Is(err, canvas.ErrNotFound) {
			t.Fatalf("%s: GetIdempotency = %v, want ErrNotFound", stage, err)
		}
		if _, err := s.GetNamedSnapshot(ctx, id, "snap1"); !errors.Is(err, canvas.ErrNotFound) {
			t.Fatalf("%s: GetNamedSnapshot = %v, want ErrNotFound", stage, err)
		}
	}
	_, err := s.ReadCommits(ctx, id, 0, 10)
	wantErr(t, "ReadCommits of a deleted canvas", err, canvas.ErrNotFound)
	check("after delete")

	// The same id created again starts from nothing.
	mustCreate(t, s, id)
	if cs := mustRead(t, s, id, 0, 10); len(cs) != 0 {
		t.Fatalf("recreated canvas has %d old commits", len(cs))
	}
	check("after re-create")
	if ns, err := s.ListNamedSnapshots(ctx, id); err != nil || len(ns) != 0 {
		t.Fatalf("recreated canvas lists named snapshots %v, %v; want none", ns, err)
	}
	// The old key is free again; the other canvas kept its records.
	mustAppend(t, s, id, 0, commitsFrom(id, 1, 1), idemRecord(id, "k1", 1))
	if _, err := s.GetIdempotency(ctx, "c-other", "k1"); err != nil {
		t.Fatalf("other canvas lost its idempotency record: %v", err)
	}
	checkLog(t, s, "c-other", 1)
}

func testAppendAndRead(t *testing.T, h *harness) {
	s := h.s
	mustCreate(t, s, "c1")
	want := commitsFrom("c1", 1, 3)
	for i := range want {
		mustAppend(t, s, "c1", int64(i), want[i:i+1])
		if got := headOf(t, s, "c1"); got != int64(i+1) {
			t.Fatalf("head after append %d = %d", i+1, got)
		}
	}
	got := checkLog(t, s, "c1", 3)
	for i := range got {
		checkCommit(t, got[i], want[i])
	}
}

func testAppendMultiCommit(t *testing.T, h *harness) {
	s := h.s
	mustCreate(t, s, "c1")
	want := commitsFrom("c1", 1, 5)
	mustAppend(t, s, "c1", 0, want[:3], idemRecord("c1", "a", 1), idemRecord("c1", "b", 3))
	mustAppend(t, s, "c1", 3, want[3:])
	got := checkLog(t, s, "c1", 5)
	for i := range got {
		checkCommit(t, got[i], want[i])
	}
	for _, k := range []string{"a", "b"} {
		if _, err := s.GetIdempotency(ctxT(t), "c1", k); err != nil {
			t.Fatalf("idempotency record %q stored with the commits: %v", k, err)
		}
	}
}

func testAppendHeadMismatch(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	mustCreate(t, s, "c1")
	mustAppend(t, s, "c1", 0, commitsFrom("c1", 1, 3))
	for _, head := range []int64{0, 2, 4, 10} {
		err := s.Append(ctx, "c1", head, commitsFrom("c1", head+1, 2), []store.IdempotencyRecord{idemRecord("c1", fmt.Sprintf("k%d", head), head+1)})
		wantErr(t, fmt.Sprintf("Append with expected head %d at head 3", head), err, canvas.ErrHeadMismatch)
		if _, err := s.GetIdempotency(ctx, "c1", fmt.Sprintf("k%d", head)); !errors.Is(err, canvas.ErrNotFound) {
			t.Fatalf("a failed Append stored its idempotency record (err %v)", err)
		}
		// The common Append of one command, without a key, too.
		err = s.Append(ctx, "c1", head, commitsFrom("c1", head+1, 1), nil)
		wantErr(t, fmt.Sprintf("Append of one commit with expected head %d at head 3", head), err, canvas.ErrHeadMismatch)
	}
	wantErr(t, "Append of one commit to a missing canvas", s.Append(ctx, "nope", 0, commitsFrom("nope", 1, 1), nil), canvas.ErrNotFound)
	got := checkLog(t, s, "c1", 3)
	for i, c := range got {
		checkCommit(t, c, commitAt("c1", int64(i+1)))
	}
	// The canvas still accepts the right head.
	mustAppend(t, s, "c1", 3, commitsFrom("c1", 4, 1))
	checkLog(t, s, "c1", 4)
}

func testAppendDuplicateKey(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	mustCreate(t, s, "c1")
	mustCreate(t, s, "c2")
	mustAppend(t, s, "c1", 0, commitsFrom("c1", 1, 1), idemRecord("c1", "dup", 1))

	other := idemRecord("c1", "dup", 2)
	other.Fingerprint, other.Result = "different", []byte(`{"other":true}`)
	err := s.Append(ctx, "c1", 1, commitsFrom("c1", 2, 2), []store.IdempotencyRecord{idemRecord("c1", "fresh", 2), other})
	wantErr(t, "Append with a stored idempotency key", err, canvas.ErrDuplicateIdempotencyKey)
	checkLog(t, s, "c1", 1)
	if _, err := s.GetIdempotency(ctx, "c1", "fresh"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("the failed Append stored its other key (err %v)", err)
	}
	rec, err := s.GetIdempotency(ctx, "c1", "dup")
	if err != nil || rec.Fingerprint != "fp\x00dup" || rec.Rev != 1 {
		t.Fatalf("the original record changed: %+v, %v", rec, err)
	}
	// Keys are per canvas.
	mustAppend(t, s, "c2", 0, commitsFrom("c2", 1, 1), idemRecord("c2", "dup", 1))
	// And the canvas still accepts new commits.
	mustAppend(t, s, "c1", 1, commitsFrom("c1", 2, 1), idemRecord("c1", "fresh", 2))
	checkLog(t, s, "c1", 2)
}

func testAppendMissingCanvas(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	err := s.Append(ctx, "c-nope", 0, commitsFrom("c-nope", 1, 1), []store.IdempotencyRecord{idemRecord("c-nope", "k", 1)})
	wantErr(t, "Append to a missing canvas", err, canvas.ErrNotFound)
	_, err = s.ReadCommits(ctx, "c-nope", 0, 10)
	wantErr(t, "ReadCommits of a missing canvas", err, canvas.ErrNotFound)
	// Creating it afterwards shows nothing was written.
	mustCreate(t, s, "c-nope")
	checkLog(t, s, "c-nope", 0)
	if _, err := s.GetIdempotency(ctx, "c-nope", "k"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("the failed Append stored its idempotency record (err %v)", err)
	}
}

func testReadCommitsRanges(t *testing.T, h *harness) {
	s := h.s
	mustCreate(t, s, "c1")
	mustCreate(t, s, "c2")
	mustAppend(t, s, "c1", 0, commitsFrom("c1", 1, 10))
	mustAppend(t, s, "c2", 0, commitsFrom("c2", 1, 4))
	revs := func(cs []canvas.Commit) []int64 {
		out := []int64{}
		for _, c := range cs {
			if c.CanvasID != "c1" {
				t.Fatalf("ReadCommits(c1) returned a commit of %q", c.CanvasID)
			}
			out = append(out, c.Rev)
		}
		return out
	}
	for _, tc := range []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 3, []int64{1, 2, 3}},
		{3, 2, []int64{4, 5}},
		{7, 100, []int64{8, 9, 10}},
		{0, 10, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{9, 1, []int64{10}},
		{10, 5, []int64{}},
		{25, 5, []int64{}},
	} {
		cs := mustRead(t, s, "c1", tc.after, tc.limit)
		if cs == nil {
			t.Fatalf("ReadCommits(after %d, limit %d) = nil, want an empty slice", tc.after, tc.limit)
		}
		if got := revs(cs); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("ReadCommits(after %d, limit %d) revs = %v, want %v", tc.after, tc.limit, got, tc.want)
		}
	}
}

func testCommitRoundTrip(t *testing.T, h *harness) {
	s := h.s
	mustCreate(t, s, "c1")
	val, _ := json.Marshal(canvas.Node{ID: "shape:a", Type: "note", Name: "ünïcode ✓ \"quoted\"\n", X: 1.5, Y: -2.25, W: 100, H: 50,
		Rotation: 0.7853981633974483, Index: "a1", Props: map[string]any{"color": "red", "nested": map[string]any{"k": []any{1.0, "two", nil, true}},
			"big": json.Number("1795461385736852721")}})
	edge, _ := json.Marshal(canvas.Edge{ID: "edge:e", From: "shape:a", To: "shape:b", Type: "arrow"})
	want := []canvas.Commit{
		{
			CanvasID: "c1", EventID: "1-00ff00ff00ff00ff", Rev: 1, CmdID: "cmd_agent_123_xyz", Type: "create_shape",
			Args:    json.RawMessage(`{"type":"note","x":1.5,"y":-2.25,"props":{"color":"red"},"name":"ünïcode ✓"}`),
			ActorID: "human-42", ActorType: canvas.ActorHuman, TS: time.Date(2026, 11, 21, 23, 59, 59, 999999999, time.UTC),
			Changes: []canvas.Change{
				{Op: canvas.OpPut, Kind: canvas.KindNode, ID: "shape:a", Value: val},
				{Op: canvas.OpPut, Kind: canvas.KindEdge, ID: "edge:e", Value: edge},
			},
		},
		{
			CanvasID: "c1", EventID: "2-abc", Rev: 2, CmdID: "", Type: "update_node",
			Args:    json.RawMessage(`{"id":"shape:a","props":{"color":null}}`),
			ActorID: "svc", ActorType: canvas.ActorService, TS: t0.In(time.FixedZone("X", 3600)),
			Changes: []canvas.Change{
				{Op: canvas.OpPatch, Kind: canvas.KindNode, ID: "shape:a", Patch: map[string]any{"x": 3.0, "name": "b", "props": map[string]any{"color": nil, "big": json.Number("1795461385736852723")}}},
				{Op: canvas.OpDelete, Kind: canvas.KindEdge, ID: "edge:e"},
			},
		},
		{
			// A no-op command still commits: no changes.
			CanvasID: "c1", EventID: "3-def", Rev: 3, CmdID: "c3", Type: "align",
			Args:    json.RawMessage(`{}`),
			ActorID: "agent-00000000-0000-4000-8000-000000000009", ActorType: canvas.ActorAgent, TS: t0,
			Changes: []canvas.Change{},
		},
	}
	mustAppend(t, s, "c1", 0, want[:1])
	mustAppend(t, s, "c1", 1, want[1:])
	got := checkLog(t, s, "c1", 3)
	for i := range got {
		checkCommit(t, got[i], want[i])
	}
	checkExactNumbers(t, got)
	h.reopen(t)
	got = checkLog(t, h.s, "c1", 3)
	for i := range got {
		checkCommit(t, got[i], want[i])
	}
	checkExactNumbers(t, got)
}

// checkExactNumbers: numbers in changes come back as written (json.Number
// in a patch, the same digits in a value), never through float64.
func checkExactNumbers(t *testing.T, got []canvas.Commit) {
	t.Helper()
	if !bytes.Contains(got[0].Changes[0].Value, []byte(`"big":1795461385736852721`)) {
		t.Fatalf("value %s lost the exact number", got[0].Changes[0].Value)
	}
	props, _ := got[1].Changes[0].Patch["props"].(map[string]any)
	if big := props["big"]; big != json.Number("1795461385736852723") {
		t.Fatalf("patch number read back as %T %v, want json.Number 1795461385736852723", big, big)
	}
}

func testConcurrentSameHead(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	mustCreate(t, s, "c1")
	mustAppend(t, s, "c1", 0, commitsFrom("c1", 1, 2))
	const n = 50
	errs := make([]error, n)
	commits := make([]canvas.Commit, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		c := commitAt("c1", 3)
		c.CmdID = fmt.Sprintf("racer-%d", i)
		commits[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.Append(ctx, "c1", 2, []canvas.Commit{c}, []store.IdempotencyRecord{idemRecord("c1", fmt.Sprintf("racer-%d", i), 3)})
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("two Appends with the same expected head both succeeded: %d and %d", winner, i)
			}
			winner = i
		case errors.Is(err, canvas.ErrHeadMismatch):
		default:
			t.Fatalf("racer %d: got %v, want nil or ErrHeadMismatch", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no Append won")
	}
	got := checkLog(t, s, "c1", 3)
	checkCommit(t, got[2], commits[winner])
	for i := range n {
		_, err := s.GetIdempotency(ctx, "c1", fmt.Sprintf("racer-%d", i))
		if i == winner && err != nil {
			t.Fatalf("winner's idempotency record: %v", err)
		}
		if i != winner && !errors.Is(err, canvas.ErrNotFound) {
			t.Fatalf("loser %d's idempotency record was stored (err %v)", i, err)
		}
	}
}

func testConcurrentAcrossCanvases(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	const canvases, appends, per = 16, 25, 2
	for i := range canvases {
		mustCreate(t, s, fmt.Sprintf("c%02d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, canvases)
	for i := range canvases {
		id := fmt.Sprintf("c%02d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range appends {
				head := int64(a * per)
				if err := s.Append(ctx, id, head, commitsFrom(id, head+1, per),
					[]store.IdempotencyRecord{idemRecord(id, fmt.Sprintf("k%d", a), head+1)}); err != nil {
					errs <- fmt.Errorf("canvas %s append %d: %w", id, a, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range canvases {
		id := fmt.Sprintf("c%02d", i)
		got := checkLog(t, s, id, appends*per)
		for _, c := range got {
			checkCommit(t, c, commitAt(id, c.Rev))
		}
	}
}

// testConcurrentMixedFailures interleaves failing Appends (stale head,
// duplicate key, missing canvas) with good ones: each gets its own outcome.
func testConcurrentMixedFailures(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	const canvases, rounds = 8, 20
	for i := range canvases {
		id := fmt.Sprintf("m%d", i)
		mustCreate(t, s, id)
		mustAppend(t, s, id, 0, commitsFrom(id, 1, 1), idemRecord(id, "taken", 1))
	}
	var wg sync.WaitGroup
	errs := make(chan error, canvases*4)
	for i := range canvases {
		id := fmt.Sprintf("m%d", i)
		wg.Add(4)
		go func() { // good writer
			defer wg.Done()
			for r := range rounds {
				head := int64(1 + r)
				if err := s.Append(ctx, id, head, commitsFrom(id, head+1, 1),
					[]store.IdempotencyRecord{idemRecord(id, fmt.Sprintf("good%d", r), head+1)}); err != nil {
					errs <- fmt.Errorf("good append %s/%d: %w", id, r, err)
					return
				}
			}
		}()
		go func() { // stale head
			defer wg.Done()
			for r := range rounds {
				err := s.Append(ctx, id, 0, commitsFrom(id, 1, 1), []store.IdempotencyRecord{idemRecord(id, fmt.Sprintf("stale%d", r), 1)})
				if !errors.Is(err, canvas.ErrHeadMismatch) {
					errs <- fmt.Errorf("stale append %s/%d: got %v, want ErrHeadMismatch", id, r, err)
					return
				}
			}
		}()
		go func() { // duplicate key; the head may be anything, so either error is right
			defer wg.Done()
			for r := range rounds {
				c, err := s.GetCanvas(ctx, id)
				if err != nil {
					errs <- err
					return
				}
				err = s.Append(ctx, id, c.HeadRev, commitsFrom(id, c.HeadRev+1, 1), []store.IdempotencyRecord{idemRecord(id, "taken", c.HeadRev+1)})
				if !errors.Is(err, canvas.ErrDuplicateIdempotencyKey) && !errors.Is(err, canvas.ErrHeadMismatch) {
					errs <- fmt.Errorf("duplicate-key append %s/%d: got %v, want ErrDuplicateIdempotencyKey", id, r, err)
					return
				}
			}
		}()
		go func() { // missing canvas
			defer wg.Done()
			for r := range rounds {
				err := s.Append(ctx, id+"-missing", 0, commitsFrom(id+"-missing", 1, 1), nil)
				if !errors.Is(err, canvas.ErrNotFound) {
					errs <- fmt.Errorf("missing-canvas append %d: got %v, want ErrNotFound", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range canvases {
		id := fmt.Sprintf("m%d", i)
		got := checkLog(t, s, id, 1+rounds)
		for _, c := range got {
			checkCommit(t, c, commitAt(id, c.Rev))
		}
		rec, err := s.GetIdempotency(ctx, id, "taken")
		if err != nil || rec.Rev != 1 {
			t.Fatalf("%s: original record %+v, %v", id, rec, err)
		}
		for r := range rounds {
			if _, err := s.GetIdempotency(ctx, id, fmt.Sprintf("stale%d", r)); !errors.Is(err, canvas.ErrNotFound) {
				t.Fatalf("%s: a failed Append stored key stale%d (err %v)", id, r, err)
			}
		}
	}
}

func testStateSnapshots(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	mustCreate(t, s, "c1")
	mustCreate(t, s, "c2")
	_, err := s.LoadStateSnapshot(ctx, "c1", 100)
	wantErr(t, "LoadStateSnapshot with none stored", err, canvas.ErrNotFound)
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for _, snap := range []store.StateSnapshot{
		{Rev: 5, Schema: 1, Data: []byte(`{"rev":5}`)},
		{Rev: 10, Schema: 1, Data: []byte(`{"rev":10}`)},
		{Rev: 20, Schema: 2, Data: big},
	} {
		if err := s.SaveStateSnapshot(ctx, "c1", snap); err != nil {
			t.Fatalf("SaveStateSnapshot(rev %d): %v", snap.Rev, err)
		}
	}
	if err := s.SaveStateSnapshot(ctx, "c2", store.StateSnapshot{Rev: 7, Schema: 1, Data: []byte("c2")}); err != nil {
		t.Fatalf("SaveStateSnapshot(c2): %v", err)
	}
	for _, tc := range []struct {
		at      int64
		wantRev int64
		schema  int
		data    []byte
	}{
		{5, 5, 1, []byte(`{"rev":5}`)},
		{7, 5, 1, []byte(`{"rev":5}`)},
		{10, 10, 1, []byte(`{"rev":10}`)},
		{19, 10, 1, []byte(`{"rev":10}`)},
		{20, 20, 2, big},
		{1 << 40, 20, 2, big},
	} {
		got, err := s.LoadStateSnapshot(ctx, "c1", tc.at)
		if err != nil {
			t.Fatalf("LoadStateSnapshot(at %d): %v", tc.at, err)
		}
		if got.Rev != tc.wantRev || got.Schema != tc.schema || !bytes.Equal(got.Data, tc.data) {
			t.Fatalf("LoadStateSnapshot(at %d) = rev %d schema %d (%d bytes), want rev %d schema %d (%d bytes)",
				tc.at, got.Rev, got.Schema, len(got.Data), tc.wantRev, tc.schema, len(tc.data))
		}
	}
	_, err = s.LoadStateSnapshot(ctx, "c1", 4)
	wantErr(t, "LoadStateSnapshot before the first", err, canvas.ErrNotFound)

	// Same rev replaces.
	if err := s.SaveStateSnapshot(ctx, "c1", store.StateSnapshot{Rev: 10, Schema: 3, Data: []byte("replaced")}); err != nil {
		t.Fatalf("SaveStateSnapshot(replace): %v", err)
	}
	got, err := s.LoadStateSnapshot(ctx, "c1", 15)
	if err != nil || got.Rev != 10 || got.Schema != 3 || string(got.Data) != "replaced" {
		t.Fatalf("after replace: %+v, %v", got, err)
	}
	// Canvases are separate.
	got, err = s.LoadStateSnapshot(ctx, "c2", 100)
	if err != nil || got.Rev != 7 || string(got.Data) != "c2" {
		t.Fatalf("c2 snapshot: %+v, %v", got, err)
	}
	_, err = s.LoadStateSnapshot(ctx, "c-missing", 100)
	wantErr(t, "LoadStateSnapshot of a missing canvas", err, canvas.ErrNotFound)

	// With an event id, a snapshot lands only while that commit is the
	// canvas's: not in a canvas deleted and created again under its id.
	mustCreate(t, s, "c3")
	mustAppend(t, s, "c3", 0, commitsFrom("c3", 1, 2))
	old := commitAt("c3", 2).EventID
	if err := s.SaveStateSnapshot(ctx, "c3", store.StateSnapshot{Rev: 2, Schema: 1, Data: []byte("old"), EventID: old}); err != nil {
		t.Fatalf("SaveStateSnapshot with its commit's event id: %v", err)
	}
	if err := s.DeleteCanvas(ctx, "c3"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "c3")
	again := commitsFrom("c3", 1, 2)
	again[1].EventID = "2-00000000000000ff"
	mustAppend(t, s, "c3", 0, again)
	err = s.SaveStateSnapshot(ctx, "c3", store.StateSnapshot{Rev: 2, Schema: 1, Data: []byte("old"), EventID: old})
	wantErr(t, "SaveStateSnapshot of the deleted canvas's commit", err, canvas.ErrNotFound)
	_, err = s.LoadStateSnapshot(ctx, "c3", 100)
	wantErr(t, "LoadStateSnapshot after a refused save", err, canvas.ErrNotFound)
}

func testIdempotency(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	mustCreate(t, s, "c1")
	want := store.IdempotencyRecord{CanvasID: "c1", Key: "idem_123", Fingerprint: "cmd\x00create_node\x0042\x00false\x00{}",
		Outcome: store.OutcomeConflict, Result: []byte(`{"status":"conflict","current_rev":1}`), Rev: 1, CreatedAt: t0}
	mustAppend(t, s, "c1", 0, commitsFrom("c1", 1, 1), want)
	got, err := s.GetIdempotency(ctx, "c1", "idem_123")
	if err != nil {
		t.Fatalf("GetIdempotency: %v", err)
	}
	if got.CanvasID != want.CanvasID || got.Key != want.Key || got.Fingerprint != want.Fingerprint || got.Outcome != want.Outcome ||
		!bytes.Equal(got.Result, want.Result) || got.Rev != want.Rev || !sameTime(got.CreatedAt, want.CreatedAt) {
		t.Fatalf("GetIdempotency = %+v, want %+v", got, want)
	}
	_, err = s.GetIdempotency(ctx, "c1", "other")
	wantErr(t, "GetIdempotency of an unknown key", err, canvas.ErrNotFound)
	_, err = s.GetIdempotency(ctx, "c2", "idem_123")
	wantErr(t, "GetIdempotency on another canvas", err, canvas.ErrNotFound)
}

func testPruneIdempotency(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	mustCreate(t, s, "c1")
	mustCreate(t, s, "c2")
	old1, old2, fresh := idemRecord("c1", "old1", 1), idemRecord("c2", "old2", 1), idemRecord("c1", "fresh", 2)
	old1.CreatedAt = t0.Add(-48 * time.Hour)
	old2.CreatedAt = t0.Add(-25 * time.Hour)
	fresh.CreatedAt = t0
	mustAppend(t, s, "c1", 0, commitsFrom("c1", 1, 1), old1)
	mustAppend(t, s, "c2", 0, commitsFrom("c2", 1, 1), old2)
	mustAppend(t, s, "c1", 1, commitsFrom("c1", 2, 1), fresh)
	n, err := s.PruneIdempotency(ctx, t0.Add(-24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PruneIdempotency = %d, %v; want 2", n, err)
	}
	if _, err := s.GetIdempotency(ctx, "c1", "old1"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("pruned record still there (err %v)", err)
	}
	if _, err := s.GetIdempotency(ctx, "c2", "old2"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("pruned record still there (err %v)", err)
	}
	if _, err := s.GetIdempotency(ctx, "c1", "fresh"); err != nil {
		t.Fatalf("fresh record was pruned: %v", err)
	}
	if n, err := s.PruneIdempotency(ctx, t0.Add(-24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("second PruneIdempotency = %d, %v; want 0", n, err)
	}
	// Records are only answers: the log is untouched.
	checkLog(t, s, "c1", 2)
	// A pruned key can be used again.
	mustAppend(t, s, "c1", 2, commitsFrom("c1", 3, 1), idemRecord("c1", "old1", 3))
}

func testNamedSnapshots(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	mustCreate(t, s, "c1")
	mustCreate(t, s, "c2")
	list, err := s.ListNamedSnapshots(ctx, "c1")
	if err != nil || len(list) != 0 {
		t.Fatalf("ListNamedSnapshots with none = %v, %v", list, err)
	}
	snaps := []store.NamedSnapshot{
		{CanvasID: "c1", ID: "s-b", Label: "second", Description: "d2", Rev: 7, CreatedBy: "human-1", CreatedAt: t0.Add(time.Minute)},
		{CanvasID: "c1", ID: "s-a", Label: "first", Description: "d1 ✓", Rev: 3, CreatedBy: "agent-x", CreatedAt: t0},
		{CanvasID: "c1", ID: "s-c", Label: "third", Rev: 9, CreatedAt: t0.Add(time.Hour)},
		{CanvasID: "c2", ID: "s-z", Label: "other canvas", Rev: 1, CreatedAt: t0},
	}
	for _, ns := range snaps {
		if err := s.CreateNamedSnapshot(ctx, ns); err != nil {
			t.Fatalf("CreateNamedSnapshot(%s): %v", ns.ID, err)
		}
	}
	same := func(got, want store.NamedSnapshot) bool {
		return got.CanvasID == want.CanvasID && got.ID == want.ID && got.Label == want.Label && got.Description == want.Description &&
			got.Rev == want.Rev && got.CreatedBy == want.CreatedBy && sameTime(got.CreatedAt, want.CreatedAt)
	}
	got, err := s.GetNamedSnapshot(ctx, "c1", "s-a")
	if err != nil || !same(got, snaps[1]) {
		t.Fatalf("GetNamedSnapshot = %+v, %v; want %+v", got, err, snaps[1])
	}
	list, err = s.ListNamedSnapshots(ctx, "c1")
	if err != nil {
		t.Fatalf("ListNamedSnapshots: %v", err)
	}
	want := []store.NamedSnapshot{snaps[1], snaps[0], snaps[2]}
	if len(list) != len(want) {
		t.Fatalf("ListNamedSnapshots = %d markers, want %d", len(list), len(want))
	}
	for i := range want {
		if !same(list[i], want[i]) {
			t.Fatalf("ListNamedSnapshots[%d] = %+v, want %+v (oldest first)", i, list[i], want[i])
		}
	}
	err = s.CreateNamedSnapshot(ctx, store.NamedSnapshot{CanvasID: "c1", ID: "s-a", Label: "again", Rev: 1, CreatedAt: t0})
	wantErr(t, "CreateNamedSnapshot of an existing id", err, canvas.ErrAlreadyExists)
	if got, _ := s.GetNamedSnapshot(ctx, "c1", "s-a"); got.Label != "first" {
		t.Fatalf("a failed create changed the marker: %+v", got)
	}
	err = s.CreateNamedSnapshot(ctx, store.NamedSnapshot{CanvasID: "c-missing", ID: "s-q", Rev: 1, CreatedAt: t0})
	wantErr(t, "CreateNamedSnapshot on a missing canvas", err, canvas.ErrNotFound)
	_, err = s.GetNamedSnapshot(ctx, "c1", "s-nope")
	wantErr(t, "GetNamedSnapshot of a missing id", err, canvas.ErrNotFound)
	_, err = s.GetNamedSnapshot(ctx, "c2", "s-a")
	wantErr(t, "GetNamedSnapshot on the wrong canvas", err, canvas.ErrNotFound)
}

func testTokens(t *testing.T, h *harness) {
	s, ctx := h.s, ctxT(t)
	hash := func(secret string) []byte { b := sha256.Sum256([]byte(secret)); return b[:] }
	scoped := store.TokenRecord{Hash: hash("secret-1"), ActorID: "agent-00000000-0000-4000-8000-00000000000a", ActorType: canvas.ActorAgent,
		Role: canvas.RoleEditor, Canvases: []string{"c1", "c2"}, Name: "scoped agent", CreatedAt: t0}
	global := store.TokenRecord{Hash: hash("secret-2"), ActorID: "admin", ActorType: canvas.ActorHuman, Role: canvas.RoleAdmin, CreatedAt: t0}
	for _, tok := range []store.TokenRecord{scoped, global} {
		if err := s.CreateToken(ctx, tok); err != nil {
			t.Fatalf("CreateToken(%s): %v", tok.ActorID, err)
		}
	}
	for _, want := range []store.TokenRecord{scoped, global} {
		got, err := s.TokenByHash(ctx, want.Hash)
		if err != nil {
			t.Fatalf("TokenByHash(%s): %v", want.ActorID, err)
		}
		if !bytes.Equal(got.Hash, want.Hash) || got.ActorID != want.ActorID || got.ActorType != want.ActorType || got.Role != want.Role ||
			got.Name != want.Name || !sameTime(got.CreatedAt, want.CreatedAt) || len(got.Canvases) != len(want.Canvases) {
			t.Fatalf("TokenByHash = %+v, want %+v", got, want)
		}
		for i := range want.Canvases {
			if got.Canvases[i] != want.Canvases[i] {
				t.Fatalf("TokenByHash canvases = %v, want %v", got.Canvases, want.Canvases)
			}
		}
	}
	_, err := s.TokenByHash(ctx, hash("wrong"))
	wantErr(t, "TokenByHash of an unknown hash", err, canvas.ErrNotFound)

	dup := global
	dup.Hash = hash("secret-3")
	wantErr(t, "CreateToken for an actor that has one", s.CreateToken(ctx, dup), canvas.ErrAlreadyExists)
	if _, err := s.TokenByHash(ctx, dup.Hash); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("the rejected token was stored (err %v)", err)
	}

	if err := s.RevokeToken(ctx, global.ActorID); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	_, err = s.TokenByHash(ctx, global.Hash)
	wantErr(t, "TokenByHash after revoke", err, canvas.ErrNotFound)
	wantErr(t, "RevokeToken twice", s.RevokeToken(ctx, global.ActorID), canvas.ErrNotFound)
	if _, err := s.TokenByHash(ctx, scoped.Hash); err != nil {
		t.Fatalf("revoking one token affected another: %v", err)
	}
	// After revoking, the actor may get a new token.
	if err := s.CreateToken(ctx, dup); err != nil {
		t.Fatalf("CreateToken after revoke: %v", err)
	}

	got, err := s.TokenByActor(ctx, scoped.ActorID)
	if err != nil || !bytes.Equal(got.Hash, scoped.Hash) || got.Role != scoped.Role || !slices.Equal(got.Canvases, scoped.Canvases) {
		t.Fatalf("TokenByActor = %+v, %v; want %+v", got, err, scoped)
	}
	_, err = s.TokenByActor(ctx, "nobody")
	wantErr(t, "TokenByActor of an unknown actor", err, canvas.ErrNotFound)
	later := store.TokenRecord{Hash: hash("secret-4"), ActorID: "svc-a", ActorType: canvas.ActorService, Role: canvas.RoleViewer,
		Name: "later", CreatedAt: t0.Add(time.Second)}
	if err := s.CreateToken(ctx, later); err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	list, err := s.ListTokens(ctx)
	if err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	var ids []string
	for _, tok := range list {
		ids = append(ids, tok.ActorID)
	}
	// Ordered by creation time, then actor id: dup and scoped share t0.
	if want := []string{global.ActorID, scoped.ActorID, later.ActorID}; !slices.Equal(ids, want) {
		t.Fatalf("ListTokens actors = %v, want %v", ids, want)
	}
	if list[1].Name != scoped.Name || !slices.Equal(list[1].Canvases, scoped.Canvases) || list[2].Canvases != nil {
		t.Fatalf("ListTokens records = %+v", list)
	}
}

func testReopen(t *testing.T, h *harness) {
	ctx := ctxT(t)
	s := h.s
	mustCreate(t, s, "c1")
	mustCreate(t, s, "c2")
	mustAppend(t, s, "c1", 0, commitsFrom("c1", 1, 4), idemRecord("c1", "k", 4))
	mustAppend(t, s, "c2", 0, commitsFrom("c2", 1, 1))
	if err := s.SaveStateSnapshot(ctx, "c1", store.StateSnapshot{Rev: 4, Schema: 1, Data: []byte("state@4")}); err != nil {
		t.Fatalf("SaveStateSnapshot: %v", err)
	}
	if err := s.CreateNamedSnapshot(ctx, store.NamedSnapshot{CanvasID: "c1", ID: "n1", Label: "l", Rev: 4, CreatedAt: t0}); err != nil {
		t.Fatalf("CreateNamedSnapshot: %v", err)
	}
	tokHash := sha256.Sum256([]byte("reopen"))
	if err := s.CreateToken(ctx, store.TokenRecord{Hash: tokHash[:], ActorID: "svc", ActorType: canvas.ActorService, Role: canvas.RoleViewer, CreatedAt: t0}); err != nil {
		t.Fatalf("CreateToken: %v", err)
	}

	h.reopen(t)
	s = h.s
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after reopen: %v", err)
	}
	got := checkLog(t, s, "c1", 4)
	for _, c := range got {
		checkCommit(t, c, commitAt("c1", c.Rev))
	}
	checkLog(t, s, "c2", 1)
	if snap, err := s.LoadStateSnapshot(ctx, "c1", 10); err != nil || string(snap.Data) != "state@4" {
		t.Fatalf("snapshot after reopen: %+v, %v", snap, err)
	}
	if _, err := s.GetIdempotency(ctx, "c1", "k"); err != nil {
		t.Fatalf("idempotency record after reopen: %v", err)
	}
	if _, err := s.GetNamedSnapshot(ctx, "c1", "n1"); err != nil {
		t.Fatalf("named snapshot after reopen: %v", err)
	}
	if tok, err := s.TokenByHash(ctx, tokHash[:]); err != nil || tok.ActorID != "svc" {
		t.Fatalf("token after reopen: %+v, %v", tok, err)
	}
	// The reopened store keeps enforcing the head and the keys.
	wantErr(t, "Append at a stale head after reopen", s.Append(ctx, "c1", 3, commitsFrom("c1", 4, 1), nil), canvas.ErrHeadMismatch)
	wantErr(t, "Append with a stored key after reopen",
		s.Append(ctx, "c1", 4, commitsFrom("c1", 5, 1), []store.IdempotencyRecord{idemRecord("c1", "k", 5)}), canvas.ErrDuplicateIdempotencyKey)
	mustAppend(t, s, "c1", 4, commitsFrom("c1", 5, 2))
	checkLog(t, s, "c1", 6)
}
