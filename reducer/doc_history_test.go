package reducer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// histExec decides cmd as actor on s and applies the commit as it comes back
// from the log (JSON round trip).
func histExec(t testing.TB, s *canvas.State, actor, typ string, args any) (Decision, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	cmd := canvas.Command{CanvasID: "c", ID: fmt.Sprintf("cmd%d", s.Rev+1), Type: typ, Args: b, Rev: s.Rev + 1,
		Actor: canvas.Actor{ID: actor, Type: canvas.ActorHuman}, TS: time.Unix(s.Rev, 0), Seed: fmt.Sprintf("seed%d", s.Rev+1)}
	return histExecCmd(t, s, cmd)
}

func histExecCmd(t testing.TB, s *canvas.State, cmd canvas.Command) (Decision, error) {
	t.Helper()
	cmd, err := withRevert(cmd, logOf(s))
	if err != nil {
		return Decision{}, err
	}
	dec, err := Decide(s, cmd)
	if err != nil {
		return dec, err
	}
	c := canvas.Commit{CanvasID: "c", EventID: "e", Rev: cmd.Rev, CmdID: cmd.ID, Type: cmd.Type, Args: cmd.Args,
		ActorID: cmd.Actor.ID, ActorType: cmd.Actor.Type, TS: cmd.TS, Changes: dec.Changes}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var logged canvas.Commit
	if err := canvas.UnmarshalExact(raw, &logged); err != nil { // as the stores decode it
		t.Fatal(err)
	}
	canvas.NormalizePatchNumbers(logged.Changes)
	if err := Apply(s, &logged); err != nil {
		t.Fatalf("apply %s: %v", cmd.Type, err)
	}
	stateLogs.Store(s, append(logOf(s), logged))
	return dec, nil
}

// stateLogs holds the log of each state histExecCmd drove from
// canvas.NewState(): what revert_commits reads (the engine reads the store's).
var stateLogs sync.Map // *canvas.State → []canvas.Commit

func logOf(s *canvas.State) []canvas.Commit {
	v, _ := stateLogs.Load(s)
	l, _ := v.([]canvas.Commit)
	return l
}

// cloneLogged returns a clone of s that has s's log.
func cloneLogged(s *canvas.State) *canvas.State {
	c := s.Clone()
	l := logOf(s)
	stateLogs.Store(c, l[:len(l):len(l)]) // appends to either copy, not share
	return c
}

// withRevert fills in cmd.Revert of a revert_commits from log (commits from
// revision 1), as the engine does from the store before Decide; its
// errors are those the engine answers.
func withRevert(cmd canvas.Command, log []canvas.Commit) (canvas.Command, error) {
	if cmd.Type != CmdRevertCommits || cmd.Revert != nil {
		return cmd, nil
	}
	revs, err := RevertRevs(cmd.Args)
	if err != nil {
		return cmd, err
	}
	cmd.Revert, err = LoadRevert(canvas.NewState(), revs, logReader(log))
	return cmd, err
}

// logReader reads log as store.Store.ReadCommits reads the store.
func logReader(log []canvas.Commit) func(afterRev int64, limit int) ([]canvas.Commit, error) {
	return func(afterRev int64, limit int) ([]canvas.Commit, error) {
		i := sort.Search(len(log), func(i int) bool { return log[i].Rev > afterRev })
		return log[i:min(len(log), i+limit)], nil
	}
}

func mustExec(t testing.TB, s *canvas.State, actor, typ string, args any) Decision {
	t.Helper()
	dec, err := histExec(t, s, actor, typ, args)
	if err != nil {
		t.Fatalf("%s %v: %v", typ, args, err)
	}
	return dec
}

func docOf(t testing.TB, s *canvas.State, id string) string {
	t.Helper()
	n, ok := s.Nodes[id]
	if !ok {
		t.Fatalf("node %s missing", id)
	}
	text, _, err := DocText(n, "node")
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func TestUndoRedoDocument(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "alice", "create_node", map[string]any{"id": "doc", "name": "d", "type": "doc", "props": map[string]any{"text": "a\r\nb\r\nc", "language": "go"}})
	mustExec(t, s, "alice", "replace_lines", map[string]any{"node_id": "doc", "start_line": 2, "end_line": 2, "new_content": "B"})
	mustExec(t, s, "alice", "insert_lines", map[string]any{"node_id": "doc", "insert_after_line": 3, "content": "d"})
	mustExec(t, s, "bob", "create_node", map[string]any{"id": "other", "name": "o"})
	if got := docOf(t, s, "doc"); got != "a\r\nB\r\nc\r\nd" {
		t.Fatalf("text = %q", got)
	}
	dec := mustExec(t, s, "alice", "undo", map[string]any{})
	r := dec.Result.(HistoryActionResult)
	if r.UndoneAction == nil || r.UndoneAction.Type != "insert_lines" || !r.CanUndo || !r.CanRedo {
		t.Fatalf("undo result = %+v", r)
	}
	if got := docOf(t, s, "doc"); got != "a\r\nB\r\nc" {
		t.Fatalf("after undo: %q", got)
	}
	mustExec(t, s, "alice", "undo", map[string]any{})
	if got := docOf(t, s, "doc"); got != "a\r\nb\r\nc" {
		t.Fatalf("after 2nd undo: %q", got)
	}
	mustExec(t, s, "alice", "redo", map[string]any{})
	mustExec(t, s, "alice", "redo", map[string]any{})
	if got := docOf(t, s, "doc"); got != "a\r\nB\r\nc\r\nd" {
		t.Fatalf("after redo: %q", got)
	}
	if _, err := histExec(t, s, "alice", "redo", map[string]any{}); !errors.Is(err, canvas.ErrUnprocessable) {
		t.Fatalf("redo with nothing to redo: %v", err)
	}
	// Bob never touched the doc: his undo removes his own node only.
	mustExec(t, s, "bob", "undo", map[string]any{})
	if _, ok := s.Nodes["other"]; ok {
		t.Fatal("bob's undo did not delete his node")
	}
	if got := docOf(t, s, "doc"); got != "a\r\nB\r\nc\r\nd" {
		t.Fatalf("bob's undo changed alice's doc: %q", got)
	}
	// Someone else edits the doc: alice's undo of her edit is a conflict.
	mustExec(t, s, "bob", "replace_lines", map[string]any{"node_id": "doc", "start_line": 1, "end_line": 1, "new_content": "A"})
	_, err := histExec(t, s, "alice", "undo", map[string]any{})
	var ce *canvas.ConflictError
	if !errors.As(err, &ce) || len(ce.Result.ConflictingIDs) != 1 || ce.Result.ConflictingIDs[0] != "doc" || ce.Result.BaseRev <= 0 {
		t.Fatalf("undo over bob's edit: %v", err)
	}
	// After bob undoes his edit, alice may undo again.
	mustExec(t, s, "bob", "undo", map[string]any{})
	mustExec(t, s, "alice", "undo", map[string]any{})
	if got := docOf(t, s, "doc"); got != "a\r\nB\r\nc" {
		t.Fatalf("after alice's undo: %q", got)
	}
	// A new command clears the redo stack.
	mustExec(t, s, "alice", "delete_lines", map[string]any{"node_id": "doc", "start_line": 1, "end_line": 1})
	if _, err := histExec(t, s, "alice", "redo", map[string]any{}); err == nil || !strings.Contains(err.Error(), "nothing to redo") {
		t.Fatalf("redo after a newer command: %v", err)
	}
	checkHistoryRoundTrip(t, s)
}

func TestUndoCanvasVerbs(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "alice", "create_node", map[string]any{"id": "a", "name": "a", "transform": map[string]any{"x": 10, "y": 20, "w": 100, "h": 50}})
	mustExec(t, s, "alice", "create_node", map[string]any{"id": "b", "name": "b"})
	mustExec(t, s, "bob", "create_edge", map[string]any{"id": "e", "from": "a", "to": "b"})
	mustExec(t, s, "alice", "move", map[string]any{"ids": []string{"a"}, "dx": 5, "dy": 7})
	if n := s.Nodes["a"]; n.X != 15 || n.Y != 27 {
		t.Fatalf("moved to %v,%v", n.X, n.Y)
	}
	mustExec(t, s, "alice", "undo", map[string]any{})
	if n := s.Nodes["a"]; n.X != 10 || n.Y != 20 {
		t.Fatalf("undo move: at %v,%v", n.X, n.Y)
	}
	mustExec(t, s, "alice", "update_node", map[string]any{"id": "a", "props": map[string]any{"color": "red"}})
	mustExec(t, s, "alice", "undo", map[string]any{})
	if _, ok := s.Nodes["a"].Props["color"]; ok {
		t.Fatalf("undo props merge left %v", s.Nodes["a"].Props)
	}
	// Undoing the creation of b deletes bob's edge to it in the same commit.
	dec := mustExec(t, s, "alice", "undo", map[string]any{})
	if _, ok := s.Nodes["b"]; ok {
		t.Fatal("b still exists")
	}
	if _, ok := s.Edges["e"]; ok {
		t.Fatalf("edge to a deleted node survived: %+v", dec.Changes)
	}
	mustExec(t, s, "alice", "redo", map[string]any{})
	if _, ok := s.Nodes["b"]; !ok {
		t.Fatal("redo did not bring b back")
	}
	if _, ok := s.Edges["e"]; !ok {
		t.Fatal("redo did not bring the edge back")
	}
	checkHistoryRoundTrip(t, s)
}

func TestUndoBounded(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "alice", "create_node", map[string]any{"id": "a", "name": "a"})
	for i := 0; i < MaxUndoEntries+20; i++ {
		mustExec(t, s, "alice", "move", map[string]any{"ids": []string{"a"}, "dx": 1, "dy": 0})
	}
	if n := len(s.History["alice"].Undo); n != MaxUndoEntries {
		t.Fatalf("undo stack holds %d entries", n)
	}
	for i := 0; i < MaxUndoEntries; i++ {
		mustExec(t, s, "alice", "undo", map[string]any{})
	}
	if _, err := histExec(t, s, "alice", "undo", map[string]any{}); !errors.Is(err, canvas.ErrUnprocessable) {
		t.Fatalf("undo past the bound: %v", err)
	}
	if x := s.Nodes["a"].X; x != 20 {
		t.Fatalf("x after undoing %d moves = %v", MaxUndoEntries, x)
	}
}

func checkHistoryRoundTrip(t *testing.T, s *canvas.State) {
	t.Helper()
	b, err := EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.History, s.History) {
		t.Fatalf("history differs after encode/decode")
	}
}

func TestRevertToSnapshot(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "alice", "create_node", map[string]any{"id": "doc", "name": "d", "type": "doc", "props": map[string]any{"text": "one\ntwo\nthree\n"}})
	mustExec(t, s, "alice", "create_node", map[string]any{"id": "a", "name": "a"})
	snap := s.Clone()
	mustExec(t, s, "alice", "replace_lines", map[string]any{"node_id": "doc", "start_line": 2, "end_line": 2, "new_content": "TWO\nmore"})
	mustExec(t, s, "bob", "delete_node", map[string]any{"id": "a"})
	mustExec(t, s, "bob", "create_node", map[string]any{"id": "b", "name": "b"})
	// Reverting one node only.
	cmd := canvas.Command{CanvasID: "c", ID: "r1", Type: CmdRevertToSnapshot, Args: json.RawMessage(`{"snapshot_id":"s1","node_id":"doc"}`),
		Rev: s.Rev + 1, Actor: canvas.Actor{ID: "alice", Type: canvas.ActorHuman}, Seed: "x", Snapshot: snap}
	dec, err := histExecCmd(t, s, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Changes) != 1 || dec.Changes[0].Op != canvas.OpEdit {
		t.Fatalf("doc revert changes = %+v", dec.Changes)
	}
	if got := docOf(t, s, "doc"); got != "one\ntwo\nthree\n" {
		t.Fatalf("reverted doc = %q", got)
	}
	if res := dec.Result.(RevertResult); !strings.Contains(res.Diff, "-TWO") || res.RevertedTo.Rev != snap.Rev {
		t.Fatalf("revert result = %+v", res)
	}
	// Reverting the whole canvas brings a back and removes b.
	cmd.ID, cmd.Rev, cmd.Args = "r2", s.Rev+1, json.RawMessage(`{"snapshot_id":"s1"}`)
	if _, err := histExecCmd(t, s, cmd); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Nodes["a"]; !ok {
		t.Fatal("a not restored")
	}
	if _, ok := s.Nodes["b"]; ok {
		t.Fatal("b not removed")
	}
	// The revert is an ordinary, undoable command.
	mustExec(t, s, "alice", "undo", map[string]any{})
	if _, ok := s.Nodes["b"]; !ok {
		t.Fatal("undo of the revert did not bring b back")
	}
	cmd.Snapshot = nil
	cmd.Rev = s.Rev + 1
	if _, err := Decide(s, cmd); !errors.Is(err, canvas.ErrUnprocessable) {
		t.Fatalf("revert without a loaded snapshot: %v", err)
	}
}

func TestTextHunks(t *testing.T) {
	pairs := [][2]string{{"a\nb\nc\n", "a\nc\nd\n"}, {"a", "a\n"}, {"", "x\r\ny"}, {"x\ny", ""}, {"a\nb", "a\nb\nc"}, {"日\n本", "本\n日"}}
	for _, p := range pairs {
		got, _, err := ApplyTextEdit(p[0], TextHunks(p[0], p[1]))
		if err != nil || got != p[1] {
			t.Errorf("TextHunks(%q, %q) applies to %q (%v)", p[0], p[1], got, err)
		}
	}
}

func TestHistorySharingIsSafe(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "alice", "create_node", map[string]any{"id": "a", "name": "a"})
	mustExec(t, s, "alice", "create_node", map[string]any{"id": "b", "name": "b"})
	for i := 0; i < 3; i++ { // 5 entries: the array (cap 8) has spare capacity
		mustExec(t, s, "alice", "move", map[string]any{"ids": []string{"a"}, "dx": 1, "dy": 0})
	}
	c := s.Clone()
	mustExec(t, s, "alice", "move", map[string]any{"ids": []string{"a"}, "dx": 100, "dy": 0})
	mustExec(t, c, "alice", "move", map[string]any{"ids": []string{"b"}, "dx": 100, "dy": 0})
	mustExec(t, s, "alice", "undo", map[string]any{})
	mustExec(t, c, "alice", "undo", map[string]any{})
	if s.Nodes["a"].X != 3 || s.Nodes["b"].X != 0 || c.Nodes["a"].X != 3 || c.Nodes["b"].X != 0 {
		t.Fatalf("clones share undo entries: s a=%v b=%v, c a=%v b=%v", s.Nodes["a"].X, s.Nodes["b"].X, c.Nodes["a"].X, c.Nodes["b"].X)
	}
}
