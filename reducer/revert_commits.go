package reducer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// CmdRevertCommits reverts some earlier commits as one new commit.
const CmdRevertCommits = "revert_commits"

// MaxRevertRevs bounds the revisions one revert_commits names.
const MaxRevertRevs = 1000

type revertCommitsArgs struct {
	Revs   []int64 `json:"revs"`
	Reason string  `json:"reason,omitempty"`
}

// RevertCommitsResult is the result of revert_commits.
type RevertCommitsResult struct {
	Success      bool     `json:"success"`
	Reverted     []int64  `json:"reverted"` // the revisions reverted, ascending
	NodesChanged []string `json:"nodes_changed"`
	EdgesChanged []string `json:"edges_changed"`
	Diff         string   `json:"diff"` // unified diffs of the documents it changes
}

// decideRevertCommits: revert_commits {revs, reason?} reverts the commits at
// revs (of any actors) as one commit: every entity they changed goes back to
// its value before the oldest of them. It reuses the undo inverses of the
// actors' histories (each actor's last MaxUndoEntries commands that it has
// not undone): a rev not found there is refused (422). If any of those
// entities changed since by a commit not in revs (someone else's, or later
// work of the same actor), nothing is reverted: a conflict (409) names them,
// and the engine adds the commits that changed them.
func decideRevertCommits(s *canvas.State, cmd canvas.Command) (Decision, error) {
	var a revertCommitsArgs
	if err := decodeArgs(cmd.Args, &a); err != nil {
		return Decision{}, err
	}
	entries, err := revertEntries(s, a)
	if err != nil {
		return Decision{}, err
	}
	var dec Decision
	virtual := map[canvas.Ref]int64{} // entity → revision it holds once the newer entries are reverted
	at := func(r canvas.Ref) int64 {
		if v, ok := virtual[r]; ok {
			return v
		}
		return s.ChangedAt(r)
	}
	var conflicting []string
	base := int64(-1)
	for _, e := range entries { // newest first
		for _, r := range e.Expect {
			ref := r.Ref()
			dec.Touched = append(dec.Touched, ref)
			if at(ref) != r.Rev && !containsString(conflicting, r.ID) {
				conflicting = append(conflicting, r.ID)
				if base < 0 || r.Rev < base {
					base = r.Rev
				}
			}
		}
		for _, r := range e.Restore {
			virtual[r.Ref()] = r.Rev
		}
	}
	if len(conflicting) > 0 {
		return dec, revertConflict(s, conflicting, base, a)
	}
	// The target: the touched entities with every inverse applied, newest first.
	t := &canvas.State{Rev: s.Rev, Nodes: map[string]*canvas.Node{}, Edges: map[string]*canvas.Edge{}, Tombstones: map[canvas.Ref]int64{}}
	nodeIDs, edgeIDs := map[string]bool{}, map[string]bool{}
	var inverse []canvas.Change
	for _, e := range entries {
		for _, r := range e.Expect {
			if r.Kind == canvas.KindNode {
				nodeIDs[r.ID] = true
				if n, ok := s.Nodes[r.ID]; ok {
					t.Nodes[r.ID] = n
				}
			} else {
				edgeIDs[r.ID] = true
				if ed, ok := s.Edges[r.ID]; ok {
					t.Edges[r.ID] = ed
				}
			}
		}
		inverse = append(inverse, e.Inverse...)
	}
	if err := Apply(t, &canvas.Commit{Rev: s.Rev + 1, Changes: inverse}); err != nil {
		return dec, canvas.Unprocessable("args.revs", "revisions %v cannot be reverted: %v", a.Revs, err)
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
		return dec, revertConflict(s, st.conflicting, sinceRev(s, st.conflicting), a)
	}
	dec.Changes = st.changes
	reverted := make([]int64, len(entries))
	for i, e := range entries {
		reverted[len(entries)-1-i] = e.Rev
	}
	nodes, edges := changedIDs(dec.Changes)
	dec.Result = RevertCommitsResult{Success: true, Reverted: reverted, NodesChanged: nodes, EdgesChanged: edges, Diff: rd.diff}
	return dec, nil
}

// revertEntries validates a and returns the history entries of a.Revs,
// newest first.
func revertEntries(s *canvas.State, a revertCommitsArgs) ([]canvas.HistoryEntry, error) {
	if len(a.Revs) == 0 || len(a.Revs) > MaxRevertRevs {
		return nil, canvas.Unprocessable("args.revs", "must list 1 to %d revisions, got %d", MaxRevertRevs, len(a.Revs))
	}
	want := make(map[int64]bool, len(a.Revs))
	for i, r := range a.Revs {
		if r <= 0 || r > s.Rev {
			return nil, canvas.Unprocessable(fmt.Sprintf("args.revs[%d]", i), "revision %d is not a commit of this canvas (head %d)", r, s.Rev)
		}
		want[r] = true
	}
	var out []canvas.HistoryEntry
	for _, h := range s.History {
		for _, e := range h.Undo {
			if want[e.Rev] {
				out = append(out, e)
				delete(want, e.Rev)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rev > out[j].Rev })
	if len(want) > 0 {
		missing := make([]int64, 0, len(want))
		for r := range want {
			missing = append(missing, r)
		}
		sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
		return nil, canvas.Unprocessable("args.revs", "cannot revert revision(s) %v: not among the last %d undoable commands of "+
			"their actor (undone already, changed nothing, or too old)", missing, MaxUndoEntries)
	}
	return out, nil
}

// revertRenames returns, for a revert_commits commit c applied over hist,
// the stamp renames of the values it brought back: each entity's value of
// the revision before the oldest reverted commit that changed it is current
// again under c.Rev.
func revertRenames(hist canvas.History, c *canvas.Commit) map[canvas.Ref][2]int64 {
	var a revertCommitsArgs
	if decodeArgs(c.Args, &a) != nil {
		return nil
	}
	entries, err := revertEntries(&canvas.State{Rev: c.Rev, History: hist}, a)
	if err != nil {
		return nil
	}
	renames := map[canvas.Ref][2]int64{}
	for _, e := range entries { // newest first: the oldest entry's restore wins
		for _, r := range e.Restore {
			if r.Rev != 0 {
				renames[r.Ref()] = [2]int64{r.Rev, c.Rev}
			} else {
				delete(renames, r.Ref())
			}
		}
	}
	return renames
}

func revertConflict(s *canvas.State, ids []string, base int64, a revertCommitsArgs) error {
	sort.Strings(ids)
	return &canvas.ConflictError{Result: canvas.ConflictResult{
		// RecoveryOps: the engine fills in the commits after BaseRev that touched ConflictingIDs.
		Status: canvas.StatusConflict, CurrentRev: s.Rev, BaseRev: max(base, 0), ConflictingIDs: ids, RecoveryOps: []canvas.Commit{},
		Suggestion: fmt.Sprintf("cannot revert revisions %v: %s changed since; recovery_ops lists who changed what. "+
			"Revert later revisions first, or edit directly instead.", a.Revs, strings.Join(ids, ", ")),
	}}
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
