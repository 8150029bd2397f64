package reducer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// CmdRevertCommits reverts some earlier commits as one new commit.
const CmdRevertCommits = "revert_commits"

// Bounds of one revert_commits.
const (
	// MaxRevertRevs bounds the revisions one revert_commits names: more
	// than the commands of the longest reply the agent takes (1 MiB of its
	// shortest actions), so that any agent turn reverts as one command.
	MaxRevertRevs = 50000
	// MaxRevertSpan bounds the commits from the oldest named revision to
	// the newest, both included (the reverted ones and those between),
	// which the engine reads from the log to decide the revert.
	MaxRevertSpan = 200000
)

// RevertCommitsResult is the result of revert_commits.
type RevertCommitsResult struct {
	Success      bool     `json:"success"`
	Reverted     []int64  `json:"reverted"` // the revisions reverted, ascending
	NodesChanged []string `json:"nodes_changed"`
	EdgesChanged []string `json:"edges_changed"`
	Diff         string   `json:"diff"` // unified diffs of the documents it changes
}

// RevertRevs returns the revisions revert_commits args name, ascending and
// distinct, for the engine to read what their commits changed
// (LoadRevert) before Decide. Malformed args, no revision, more than
// MaxRevertRevs, a revision below 1 and a span over MaxRevertSpan are a
// *canvas.FieldError (ErrUnprocessable) naming the field.
func RevertRevs(args json.RawMessage) ([]int64, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var a canvas.RevertCommitsArgs
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	return revertRevs(a)
}

// revertRevs checks and sorts the revisions of revert_commits args.
func revertRevs(a canvas.RevertCommitsArgs) ([]int64, error) {
	switch {
	case len(a.Revs) == 0:
		return nil, canvas.Unprocessable("args.revs", "must list at least one revision")
	case len(a.Revs) > MaxRevertRevs:
		return nil, canvas.Unprocessable("args.revs", "lists %d revisions; one revert_commits takes at most %d: revert the newest %d first, then the rest, as separate commands",
			len(a.Revs), MaxRevertRevs, MaxRevertRevs)
	}
	for i, r := range a.Revs {
		if r <= 0 {
			return nil, canvas.Unprocessable(fmt.Sprintf("args.revs[%d]", i), "%d is not a revision (revisions start at 1)", r)
		}
	}
	revs := append([]int64(nil), a.Revs...)
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	out := revs[:1]
	for _, r := range revs[1:] {
		if r != out[len(out)-1] {
			out = append(out, r)
		}
	}
	if lo, hi := out[0], out[len(out)-1]; hi-lo+1 > MaxRevertSpan {
		return nil, canvas.Unprocessable("args.revs", "spans revisions %d to %d (%d commits); one revert_commits reaches over at most %d: revert the newer revisions first, then the older ones, as separate commands",
			lo, hi, hi-lo+1, MaxRevertSpan)
	}
	return out, nil
}

// LoadRevert reads what the commits at revs (as RevertRevs returns them)
// changed: s is the canvas state at a revision before the oldest of them
// (LoadRevert applies the log to it, so the caller gives it up), and read
// returns up to limit commits after a revision, ascending, as
// store.Store.ReadCommits does. A revision past the end of the log is a
// *canvas.FieldError (ErrUnprocessable) on args.revs; other errors are
// read's, or a log that does not apply.
func LoadRevert(s *canvas.State, revs []int64, read func(afterRev int64, limit int) ([]canvas.Commit, error)) (*canvas.RevertBase, error) {
	if len(revs) == 0 || s.Rev >= revs[0] {
		return nil, fmt.Errorf("reducer: LoadRevert of revisions from %v needs a state before them, got one at %d: %w", revs, s.Rev, canvas.ErrInvalid)
	}
	b := &canvas.RevertBase{Revs: revs}
	lo, hi := revs[0], revs[len(revs)-1]
	want := make(map[int64]bool, len(revs))
	for _, r := range revs {
		want[r] = true
	}
	index := map[canvas.Ref]int{}     // entity → its index in b.Entities
	later := map[canvas.Ref][]int64{} // entity → revisions not reverted that changed it after its latest reverted one
	var refs []canvas.Ref             // the entities of one commit
	seen := map[canvas.Ref]bool{}     // (reused per commit)
	for s.Rev < hi {
		commits, err := read(s.Rev, int(min(hi-s.Rev, 1000)))
		if err != nil {
			return nil, err
		}
		if len(commits) == 0 {
			next := sort.Search(len(revs), func(i int) bool { return revs[i] > s.Rev })
			return nil, canvas.Unprocessable("args.revs", "revision %d is not a commit of this canvas (its log ends at revision %d); revert_commits reverts commits already in the log",
				revs[next], s.Rev)
		}
		for i := range commits {
			c := &commits[i]
			if c.Rev != s.Rev+1 {
				return nil, fmt.Errorf("reducer: the log holds revision %d after %d", c.Rev, s.Rev)
			}
			if c.Rev < lo {
				if err := Apply(s, c); err != nil {
					return nil, err
				}
				continue
			}
			refs = refs[:0]
			clear(seen)
			for _, ch := range c.Changes {
				if ref := (canvas.Ref{Kind: ch.Kind, ID: ch.ID}); !seen[ref] {
					seen[ref] = true
					refs = append(refs, ref)
				}
			}
			reverted := want[c.Rev]
			if reverted && len(refs) > 0 {
				b.Changing = append(b.Changing, c.Rev)
			}
			for _, ref := range refs {
				k, ok := index[ref]
				switch {
				case reverted && !ok:
					index[ref] = len(b.Entities)
					e := canvas.RevertEntity{Ref: ref, First: c.Rev}
					e.BeforeNode, e.BeforeEdge = entityOf(s, ref)
					b.Entities = append(b.Entities, e)
				case reverted:
					b.Entities[k].Others = append(b.Entities[k].Others, later[ref]...)
					delete(later, ref)
				case ok:
					later[ref] = append(later[ref], c.Rev)
				}
			}
			if err := Apply(s, c); err != nil {
				return nil, err
			}
			if reverted {
				for _, ref := range refs {
					e := &b.Entities[index[ref]]
					e.Last = c.Rev
					e.AfterNode, e.AfterEdge = entityOf(s, ref)
				}
			}
			if c.Rev == hi {
				return b, nil
			}
		}
	}
	return b, nil
}

// entityOf returns ref's value in s (nil: absent). Apply replaces entities,
// never modifies them, so the pointers keep the value.
func entityOf(s *canvas.State, ref canvas.Ref) (*canvas.Node, *canvas.Edge) {
	if ref.Kind == canvas.KindNode {
		return s.Nodes[ref.ID], nil
	}
	return nil, s.Edges[ref.ID]
}

// decideRevertCommits: revert_commits {revs, reason?} reverts the commits at
// revs (of any actors, undo and redo included) as one commit: every node and
// edge they changed goes back to its value before the oldest of them that
// changed it (created ones are deleted, deleted ones come back, documents
// change by line splices). It works on cmd.Revert, what those commits
// changed as the log says (LoadRevert), against the current values:
//
//   - an entity whose value is already the one before them (a later undo
//     took their change back, say) is left as it is;
//   - otherwise its value must still be the one they left: if it is not
//     (someone changed it since, or later work of the same actor), or if a
//     commit not named changed it between two named ones, nothing is
//     reverted: a conflict (409) names those entities, and the engine adds
//     the commits that changed them.
//
// A revert that finds every entity as it was before them commits no change;
// commits that changed nothing at all are a 422.
func decideRevertCommits(s *canvas.State, cmd canvas.Command) (Decision, error) {
	var a canvas.RevertCommitsArgs
	if err := decodeArgs(cmd.Args, &a); err != nil {
		return Decision{}, err
	}
	revs, err := revertRevs(a)
	if err != nil {
		return Decision{}, err
	}
	b := cmd.Revert
	if b == nil || !slices.Equal(b.Revs, revs) {
		return Decision{}, canvas.Unprocessable("args.revs", "what the commits at %s changed was not read from the log for this command", revsText(revs))
	}
	if len(b.Changing) == 0 {
		return Decision{}, canvas.Unprocessable("args.revs", "nothing to revert: the commits at %s changed nothing", revsText(revs))
	}
	dec := Decision{Touched: make([]canvas.Ref, 0, len(b.Entities))}
	// The target: the entities to put back, as they were before.
	t := &canvas.State{Rev: s.Rev, Nodes: map[string]*canvas.Node{}, Edges: map[string]*canvas.Edge{}, Tombstones: map[canvas.Ref]int64{}}
	nodeIDs, edgeIDs := map[string]bool{}, map[string]bool{}
	var conflicting []string
	since := int64(-1) // the revision after which recovery_ops lists the conflicting changes
	for i := range b.Entities {
		e := &b.Entities[i]
		dec.Touched = append(dec.Touched, e.Ref)
		switch {
		case asBefore(s, e):
			continue
		case len(e.Others) > 0 || !asAfter(s, e):
			if !slices.Contains(conflicting, e.Ref.ID) {
				conflicting = append(conflicting, e.Ref.ID)
			}
			from := e.Last
			if len(e.Others) > 0 {
				from = e.Others[0] - 1
			}
			if since < 0 || from < since {
				since = from
			}
			continue
		}
		if e.Ref.Kind == canvas.KindNode {
			nodeIDs[e.Ref.ID] = true
			if e.BeforeNode != nil {
				t.Nodes[e.Ref.ID] = e.BeforeNode
			}
		} else {
			edgeIDs[e.Ref.ID] = true
			if e.BeforeEdge != nil {
				t.Edges[e.Ref.ID] = e.BeforeEdge
			}
		}
	}
	if len(conflicting) > 0 {
		return dec, revertConflict(s, conflicting, since, revs)
	}
	rd := revertTo(s, t, nodeIDs, edgeIDs)
	// The nodes it deletes take their children and edges along (also those
	// others added since), as delete_node does; see settle.
	st, err := settle(s, &cmd, rd.changes)
	dec.Touched = append(dec.Touched, st.touched...)
	if err != nil {
		return dec, err
	}
	if len(st.conflicting) > 0 {
		return dec, revertConflict(s, st.conflicting, sinceRev(s, st.conflicting), revs)
	}
	dec.Changes = st.changes
	nodes, edges := changedIDs(dec.Changes)
	dec.Result = RevertCommitsResult{Success: true, Reverted: revs, NodesChanged: nodes, EdgesChanged: edges, Diff: rd.diff}
	return dec, nil
}

// RevertChangesNothing reports whether a revert_commits of b, decided on s,
// would find every entity the commits changed as it was before them (a
// later undo, or an earlier revert, took their changes back): then it
// commits no change.
func RevertChangesNothing(s *canvas.State, b *canvas.RevertBase) bool {
	for i := range b.Entities {
		if !asBefore(s, &b.Entities[i]) {
			return false
		}
	}
	return true
}

// asBefore and asAfter report whether e's current value in s is its value
// before the reverted commits, and the one they left.
func asBefore(s *canvas.State, e *canvas.RevertEntity) bool {
	n, ed := entityOf(s, e.Ref)
	return sameNode(n, e.BeforeNode) && sameEdge(ed, e.BeforeEdge)
}

func asAfter(s *canvas.State, e *canvas.RevertEntity) bool {
	n, ed := entityOf(s, e.Ref)
	return sameNode(n, e.AfterNode) && sameEdge(ed, e.AfterEdge)
}

// revertRenames returns, for the revert_commits commit h.c about to be
// recorded over hist (the history before it), the stamp renames of the
// values it brought back: an entity it changed holds again its value before
// the first reverted commit that changed it, whose stamp is the Restore
// stamp of that commit's history entry; that value is current again under
// c.Rev. An entity is renamed only when the history entries tell this
// exactly:
//
//   - the entries of every reverted revision older than the first that
//     changed it are at hand (an entry lists all the entities its commit
//     changed; a revision without one, undone and its redo dropped, or out
//     of the bounded stacks, may have changed it first);
//   - it was, just before the revert, as the newest entry at hand of a
//     reverted commit that changed it left it (its stamp then is that
//     entry's expected one): so the revert changed it from that value back
//     to the older one.
//
// Otherwise it renames nothing for it, and others' undo and redo that
// expect the value it brought back are a conflict (the safe side). Only the
// stamp of the value brought back is renamed, so an older entry expecting a
// value someone replaced before the reverted commits stays a conflict.
func revertRenames(hist canvas.History, h *HistoryCapture) map[canvas.Ref][2]int64 {
	c := h.c
	if len(h.pre) == 0 {
		return nil
	}
	// The revisions as logged, read leniently: what Apply does with a
	// logged commit must not depend on today's bounds of the args.
	var a struct {
		Revs []int64 `json:"revs"`
	}
	if json.Unmarshal(c.Args, &a) != nil || len(a.Revs) == 0 {
		return nil
	}
	revs := append([]int64(nil), a.Revs...)
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	want := make(map[int64]bool, len(revs))
	for _, r := range revs {
		want[r] = true
	}
	entries := map[int64]*canvas.HistoryEntry{} // reverted revision → its entry
	for _, ah := range hist {
		for _, stack := range [][]canvas.HistoryEntry{ah.Undo, ah.Redo} {
			for i := range stack {
				if e := &stack[i]; want[e.Rev] {
					entries[e.Rev] = e
				}
			}
		}
	}
	type known struct{ restore, expect int64 }
	firsts := map[canvas.Ref]*known{} // entity → the stamps of its oldest and newest entries
	changed := make(map[canvas.Ref]bool, len(h.pre))
	for i := range h.pre {
		changed[h.pre[i].ref] = true
	}
	for _, r := range revs { // ascending
		e := entries[r]
		if e == nil {
			break // what the revisions from r on changed first is unknown
		}
		for _, x := range e.Restore {
			if ref := x.Ref(); changed[ref] && firsts[ref] == nil {
				firsts[ref] = &known{restore: x.Rev}
			}
		}
	}
	if len(firsts) == 0 {
		return nil
	}
	for i := len(revs) - 1; i >= 0; i-- { // newest first: the last value each one left
		e := entries[revs[i]]
		if e == nil {
			continue
		}
		for _, x := range e.Expect {
			if k := firsts[x.Ref()]; k != nil && k.expect == 0 {
				k.expect = x.Rev
			}
		}
	}
	renames := make(map[canvas.Ref][2]int64, len(firsts))
	for i := range h.pre {
		p := &h.pre[i]
		if k := firsts[p.ref]; k != nil && k.restore != 0 && k.expect == p.rev {
			renames[p.ref] = [2]int64{k.restore, c.Rev}
		}
	}
	return renames
}

// sameNode and sameEdge report whether two values of an entity (nil:
// absent) are equal, whoever wrote them and when, with props also equal
// when their JSON is (sameJSON).
func sameNode(a, b *canvas.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || nodeFieldsEqual(a, b) && (propsEqual(a.Props, b.Props) || sameJSON(a.Props, b.Props))
}

func sameEdge(a, b *canvas.Edge) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || edgeFieldsEqual(a, b) && (propsEqual(a.Props, b.Props) || sameJSON(a.Props, b.Props))
}

// sameJSON compares props by their JSON, where a number decoded from the
// log and the same number computed by a verb are equal.
func sameJSON(a, b map[string]any) bool {
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && bytes.Equal(ja, jb)
}

// revsText names revisions in a message, briefly when they are many.
func revsText(revs []int64) string {
	switch {
	case len(revs) == 1:
		return fmt.Sprintf("revision %d", revs[0])
	case len(revs) <= 10:
		return fmt.Sprintf("revisions %v", revs)
	}
	return fmt.Sprintf("%d revisions from %d to %d", len(revs), revs[0], revs[len(revs)-1])
}

func revertConflict(s *canvas.State, ids []string, base int64, revs []int64) error {
	sort.Strings(ids)
	return &canvas.ConflictError{Result: canvas.ConflictResult{
		// RecoveryOps: the engine fills in the commits after BaseRev that touched ConflictingIDs.
		Status: canvas.StatusConflict, CurrentRev: s.Rev, BaseRev: max(base, 0), ConflictingIDs: ids, RecoveryOps: []canvas.Commit{},
		Suggestion: fmt.Sprintf("cannot revert %s: %s changed since; recovery_ops lists who changed what. "+
			"Revert later revisions first (or together with these), or edit directly instead.", revsText(revs), strings.Join(ids, ", ")),
	}}
}
