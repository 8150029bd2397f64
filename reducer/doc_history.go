package reducer

// Undo and redo, per actor, for every command type.
//
// Apply keeps, in State.History, each actor's undo and redo stacks: for every
// commit it computes the inverse changes from the state before the commit
// (cheaply: a patch's inverse patches back only the fields it set, a document
// edit's inverse is a line splice) and pushes them on the committing actor's
// undo stack; a new command clears that actor's redo stack. "undo" applies the
// top of the caller's own undo stack and moves the reverse onto its redo
// stack; "redo" does the opposite. Nothing is rewritten: undo and redo are
// ordinary commits.
//
// Conflicts: every entry records, per entity, the revision whose value it
// expects to find (its "stamp"). If any entity has changed since (someone
// else edited it), undo/redo is refused with a *canvas.ConflictError listing
// those entities; the engine fills recovery_ops with the commits after
// ConflictResult.BaseRev that touched them. (No line-level rebase.) When
// undo/redo brings back an older value, the stamps of that value held by the
// actor's other entries are renamed to the new revision, so an actor can undo
// several steps in a row; a revert_commits renames those of the values it
// brought back, as far as the entries of the reverted commits tell them
// (revertRenames).

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// History bounds.
const (
	MaxUndoEntries   = 100      // per actor and stack
	MaxUndoBytes     = 16 << 20 // per actor, approximate bytes held by inverse changes
	MaxHistoryActors = 256      // actors kept per canvas (the least recently active are dropped)
	maxEntryLines    = 1000     // line numbers kept per entry
)

// Command types of the history verbs.
const (
	CmdUndo             = "undo"
	CmdRedo             = "redo"
	CmdRevertToSnapshot = "revert_to_snapshot"
)

type preImage struct {
	ref     canvas.Ref
	node    *canvas.Node
	edge    *canvas.Edge
	rev     int64 // ChangedAt before the commit
	changes int
	first   *canvas.Change
}

// HistoryCapture holds what Apply must remember of the state before a commit
// to record its inverse. Use: h := CaptureHistory(s, c) before applying c's
// changes, then h.Record(s) after they all applied.
type HistoryCapture struct {
	c     *canvas.Commit
	pre   []preImage // in order of first change; looked up by index for large commits
	index map[canvas.Ref]int
}

// find returns the pre-image of ref, or nil.
func (h *HistoryCapture) find(ref canvas.Ref) *preImage {
	if h.index != nil {
		if i, ok := h.index[ref]; ok {
			return &h.pre[i]
		}
		return nil
	}
	for i := range h.pre {
		if h.pre[i].ref == ref {
			return &h.pre[i]
		}
	}
	return nil
}

// CaptureHistory records the pre-images of the entities c changes. It relies
// on Apply replacing (never mutating) entities, so the pointers stay valid.
func CaptureHistory(s *canvas.State, c *canvas.Commit) *HistoryCapture {
	if c.ActorID == "" {
		return nil
	}
	h := &HistoryCapture{c: c, pre: make([]preImage, 0, len(c.Changes))}
	if len(c.Changes) > 16 {
		h.index = make(map[canvas.Ref]int, len(c.Changes))
	}
	for i := range c.Changes {
		ch := &c.Changes[i]
		ref := canvas.Ref{Kind: ch.Kind, ID: ch.ID}
		if p := h.find(ref); p != nil {
			p.changes++
			continue
		}
		p := preImage{ref: ref, rev: s.ChangedAt(ref), changes: 1, first: ch}
		if ref.Kind == canvas.KindNode {
			p.node = s.Nodes[ref.ID]
		} else {
			p.edge = s.Edges[ref.ID]
		}
		if h.index != nil {
			h.index[ref] = len(h.pre)
		}
		h.pre = append(h.pre, p)
	}
	return h
}

// Record updates the committing actor's stacks after c applied to s.
func (h *HistoryCapture) Record(s *canvas.State) {
	if h == nil {
		return
	}
	c := h.c
	if c.Type == CmdMigrateModel { // the entries would bring back model 1
		s.History = nil
		return
	}
	// The map is replaced, never modified in place, so a holder of the old
	// s.History (the engine's rollback journal, a Clone) keeps the old stacks.
	hist := make(canvas.History, len(s.History)+1)
	for k, v := range s.History {
		hist[k] = v
	}
	defer func() { s.History = hist }()
	old := hist[c.ActorID]
	ah := &canvas.ActorHistory{LastRev: c.Rev}
	if old != nil {
		ah.Undo, ah.Redo = old.Undo, old.Redo
	}
	switch c.Type {
	case CmdUndo, CmdRedo:
		from, to := &ah.Undo, &ah.Redo
		if c.Type == CmdRedo {
			from, to = &ah.Redo, &ah.Undo
		}
		if len(*from) == 0 {
			break
		}
		e := (*from)[len(*from)-1]
		*from = (*from)[: len(*from)-1 : len(*from)-1]
		rev := h.entry(e.Type)
		rev.Lines = e.Lines
		*to = pushEntry(*to, rev)
		renames := map[canvas.Ref][2]int64{}
		for _, r := range e.Restore {
			if r.Rev != 0 {
				renames[r.Ref()] = [2]int64{r.Rev, c.Rev}
			}
		}
		// The restored values are current again under c.Rev, for every
		// actor's entries (bob undoing his edit lets alice undo hers).
		renameEverywhere(hist, c.ActorID, ah, renames)
	case CmdRevertCommits:
		renames := revertRenames(hist, h) // from the history before c
		ah.Redo = nil
		if len(c.Changes) > 0 {
			ah.Undo = pushEntry(ah.Undo, h.entry(c.Type))
		}
		// The values the revert brought back are current again under c.Rev,
		// for every actor's entries (bob can undo his change the reverted
		// turn had overwritten).
		renameEverywhere(hist, c.ActorID, ah, renames)
	default:
		ah.Redo = nil
		if len(c.Changes) > 0 {
			ah.Undo = pushEntry(ah.Undo, h.entry(c.Type))
		}
	}
	ah.Undo = boundEntries(ah.Undo)
	ah.Redo = boundEntries(ah.Redo)
	hist[c.ActorID] = ah
	if len(hist) > MaxHistoryActors {
		var victim string
		var min int64 = -1
		for id, a := range hist {
			if min < 0 || a.LastRev < min || a.LastRev == min && id < victim {
				victim, min = id, a.LastRev
			}
		}
		delete(hist, victim)
	}
}

// renameEverywhere applies renames to the stacks of ah (the committing
// actor's new history) and of every other actor in hist.
func renameEverywhere(hist canvas.History, actorID string, ah *canvas.ActorHistory, renames map[canvas.Ref][2]int64) {
	ah.Undo = renameStamps(ah.Undo, renames)
	ah.Redo = renameStamps(ah.Redo, renames)
	for id, other := range hist {
		if id == actorID {
			continue
		}
		u, r := renameStamps(other.Undo, renames), renameStamps(other.Redo, renames)
		if !sameEntries(u, other.Undo) || !sameEntries(r, other.Redo) {
			hist[id] = &canvas.ActorHistory{Undo: u, Redo: r, LastRev: other.LastRev}
		}
	}
}

// pushEntry appends e (amortized O(1)). The backing array may be shared with
// the previous ActorHistory of the same state: only a discarded state (rolled
// back by the engine's journal) can see the slot written here, and
// canvas.State.Clone clips the slices so that clones copy on append.
func pushEntry(stack []canvas.HistoryEntry, e canvas.HistoryEntry) []canvas.HistoryEntry {
	return append(stack, e)
}

// boundEntries drops the oldest entries beyond the count and size bounds.
func boundEntries(stack []canvas.HistoryEntry) []canvas.HistoryEntry {
	size, keep := 0, 0
	for i := len(stack) - 1; i >= 0; i-- {
		if keep == MaxUndoEntries || size+stack[i].Size > MaxUndoBytes && keep > 0 {
			break
		}
		size += stack[i].Size
		keep++
	}
	return stack[len(stack)-keep:]
}

// renameStamps rewrites, in new entries, the expected/restored revision of
// each renamed entity: the value stamped old is now current under new.
func renameStamps(stack []canvas.HistoryEntry, renames map[canvas.Ref][2]int64) []canvas.HistoryEntry {
	if len(renames) == 0 || len(stack) == 0 {
		return stack
	}
	var out []canvas.HistoryEntry
	for i, e := range stack {
		ex, re := renameRefRevs(e.Expect, renames), renameRefRevs(e.Restore, renames)
		if out == nil && sameRefRevs(ex, e.Expect) && sameRefRevs(re, e.Restore) {
			continue
		}
		if out == nil {
			out = append([]canvas.HistoryEntry(nil), stack...)
		}
		out[i].Expect, out[i].Restore = ex, re
	}
	if out == nil {
		return stack
	}
	return out
}

// sameRefRevs and sameEntries report whether two slices share their backing array and length.
func sameRefRevs(a, b []canvas.RefRev) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameEntries(a, b []canvas.HistoryEntry) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func renameRefRevs(rs []canvas.RefRev, renames map[canvas.Ref][2]int64) []canvas.RefRev {
	var out []canvas.RefRev
	for i, r := range rs {
		if rn, ok := renames[r.Ref()]; ok && r.Rev == rn[0] {
			if out == nil {
				out = append([]canvas.RefRev(nil), rs...)
			}
			out[i].Rev = rn[1]
		}
	}
	if out == nil {
		return rs
	}
	return out
}

// entry builds the history entry reversing h.c.
func (h *HistoryCapture) entry(typ string) canvas.HistoryEntry {
	c := h.c
	n := len(h.pre)
	e := canvas.HistoryEntry{Rev: c.Rev, Type: typ, Inverse: make([]canvas.Change, 0, n),
		Expect: make([]canvas.RefRev, 0, n), Restore: make([]canvas.RefRev, 0, n)}
	for i := n - 1; i >= 0; i-- {
		p := &h.pre[i]
		ref := p.ref
		e.Expect = append(e.Expect, canvas.RefRev{Kind: ref.Kind, ID: ref.ID, Rev: c.Rev})
		e.Restore = append(e.Restore, canvas.RefRev{Kind: ref.Kind, ID: ref.ID, Rev: p.rev})
		inv := invertChange(ref, p)
		e.Size += changeSize(&inv)
		e.Inverse = append(e.Inverse, inv)
		if p.first.Op == canvas.OpEdit && p.first.Edit != nil && len(e.Lines) < maxEntryLines {
			for _, hk := range p.first.Edit.Hunks {
				n := max(hk.Del, LineCount(hk.Ins), 1)
				for l := hk.Line; l < hk.Line+n && len(e.Lines) < maxEntryLines; l++ {
					e.Lines = append(e.Lines, l)
				}
			}
		}
	}
	return e
}

// invertChange returns the change that restores ref's pre-image.
func invertChange(ref canvas.Ref, p *preImage) canvas.Change {
	out := canvas.Change{Kind: ref.Kind, ID: ref.ID}
	existed := p.node != nil || p.edge != nil
	if !existed {
		out.Op = canvas.OpDelete
		return out
	}
	if p.changes == 1 {
		switch {
		case p.first.Op == canvas.OpPatch && p.node != nil:
			if inv, ok := nodeFields.invert(p.node, p.first.Patch); ok {
				out.Op, out.Patch = canvas.OpPatch, inv
				return out
			}
		case p.first.Op == canvas.OpPatch && p.edge != nil:
			if inv, ok := edgeFields.invert(p.edge, p.first.Patch); ok {
				out.Op, out.Patch = canvas.OpPatch, inv
				return out
			}
		case p.first.Op == canvas.OpEdit && p.node != nil && p.first.Edit != nil:
			if text, ok := propDocText(p.node.Props[p.first.Edit.Prop]); ok {
				if inv, err := invertHunks(text, p.first.Edit.Hunks); err == nil {
					out.Op, out.Edit = canvas.OpEdit, &canvas.TextEdit{Prop: p.first.Edit.Prop, Hunks: inv}
					return out
				}
			}
		}
	}
	out.Op = canvas.OpPut
	var err error
	if p.node != nil {
		out.Value, err = json.Marshal(p.node)
	} else {
		out.Value, err = json.Marshal(p.edge)
	}
	if err != nil { // cannot happen for values that came out of JSON
		out.Value = json.RawMessage("null")
	}
	return out
}

// invertHunks returns the splice that undoes hunks applied to text, without
// building the new text; it locates lines with the text's chunk index.
func invertHunks(text canvas.DocText, hunks []canvas.TextHunk) ([]canvas.TextHunk, error) {
	inv := make([]canvas.TextHunk, len(hunks))
	cur, shift := 1, 0
	for i, h := range hunks {
		if h.Del < 0 || h.Line < cur {
			return nil, fmt.Errorf("hunk %d out of order: %w", i, canvas.ErrUnprocessable)
		}
		start, ok := lineStart(text, h.Line)
		if !ok {
			return nil, fmt.Errorf("hunk %d past the end: %w", i, canvas.ErrUnprocessable)
		}
		end, ok := lineStart(text, h.Line+h.Del)
		if !ok {
			return nil, fmt.Errorf("hunk %d past the end: %w", i, canvas.ErrUnprocessable)
		}
		n := LineCount(h.Ins)
		// Clone: a substring would pin a whole chunk of the old text in the undo stack.
		inv[i] = canvas.TextHunk{Line: h.Line + shift, Del: n, Ins: strings.Clone(text.Slice(start, end))}
		shift += n - h.Del
		cur = h.Line + h.Del
	}
	return inv, nil
}

// invertMergePatch returns the JSON merge patch that turns merge(old, p)
// back into old, for the keys p touches.
func invertMergePatch(old map[string]any, p map[string]any) map[string]any {
	inv := make(map[string]any, len(p))
	for k, v := range p {
		ov, had := old[k]
		switch {
		case !had:
			inv[k] = nil
		case isObject(v) && isObject(ov):
			inv[k] = invertMergePatch(ov.(map[string]any), v.(map[string]any))
		case isObject(ov):
			// The patch replaced an object by a scalar: put the object back
			// whole (a merge patch merges objects, so clear it first is not
			// needed: the current value is not an object).
			inv[k] = canvas.CloneProps(ov.(map[string]any))
		default:
			inv[k] = ov
		}
	}
	return inv
}

func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

// changeSize approximates the bytes a change holds.
func changeSize(ch *canvas.Change) int {
	n := 64 + len(ch.Value)
	if ch.Edit != nil {
		for _, h := range ch.Edit.Hunks {
			n += 24 + len(h.Ins)
		}
	}
	if ch.Patch != nil {
		n += valueSize(ch.Patch)
	}
	return n
}

func valueSize(v any) int {
	switch t := v.(type) {
	case string:
		return len(t) + 16
	case canvas.DocText:
		return t.Len() + 16
	case map[string]any:
		n := 16
		for k, x := range t {
			n += len(k) + valueSize(x)
		}
		return n
	case []any:
		n := 16
		for _, x := range t {
			n += valueSize(x)
		}
		return n
	}
	return 16
}

// --- undo / redo decisions ---

// HistoryActionResult is the result of undo and redo.
type HistoryActionResult struct {
	Success      bool           `json:"success"`
	UndoneAction *HistoryAction `json:"undone_action,omitempty"`
	RedoneAction *HistoryAction `json:"redone_action,omitempty"`
	CanUndo      bool           `json:"can_undo"`
	CanRedo      bool           `json:"can_redo"`
}

// HistoryAction describes the command an undo or redo reversed.
type HistoryAction struct {
	Type          string `json:"type"`
	Rev           int64  `json:"rev"`
	LinesAffected []int  `json:"lines_affected"`
}

// HistoryStatus reports whether actor can undo and redo on s (for UIs).
func HistoryStatus(s *canvas.State, actorID string) (canUndo, canRedo bool) {
	if h := s.History[actorID]; h != nil {
		return len(h.Undo) > 0, len(h.Redo) > 0
	}
	return false, false
}

func decideUndo(s *canvas.State, cmd canvas.Command) (Decision, error) {
	return decideHistory(s, cmd, true)
}
func decideRedo(s *canvas.State, cmd canvas.Command) (Decision, error) {
	return decideHistory(s, cmd, false)
}

func decideHistory(s *canvas.State, cmd canvas.Command, undo bool) (Decision, error) {
	var a canvas.HistoryArgs
	if err := decodeArgs(cmd.Args, &a); err != nil {
		return Decision{}, err
	}
	h := s.History[cmd.Actor.ID]
	var stack []canvas.HistoryEntry
	if h != nil {
		stack = h.Redo
		if undo {
			stack = h.Undo
		}
	}
	if len(stack) == 0 {
		if undo {
			return Decision{}, canvas.Unprocessable("type", "nothing to undo: actor %s has no command of its own left to undo on this canvas (the last %d are kept)", cmd.Actor.ID, MaxUndoEntries)
		}
		return Decision{}, canvas.Unprocessable("type", "nothing to redo: actor %s has undone nothing since its last command (a new command clears the redo history)", cmd.Actor.ID)
	}
	e := stack[len(stack)-1]
	dec := Decision{}
	var conflicting []string
	base := int64(-1)
	for _, r := range e.Expect {
		dec.Touched = append(dec.Touched, r.Ref())
		if s.ChangedAt(r.Ref()) != r.Rev {
			conflicting = append(conflicting, r.ID)
			if base < 0 || r.Rev < base {
				base = r.Rev
			}
		}
	}
	changes := e.Inverse
	if len(conflicting) == 0 {
		// The nodes it deletes take their (newer) children and edges along,
		// a node put back whose index key was handed out again since gets a
		// fresh one, group bounds follow; a node put back under a parent that
		// is gone (or into a parent cycle) is a conflict. See settle.
		st, err := settle(s, &cmd, changes)
		dec.Touched = append(dec.Touched, st.touched...)
		if err != nil {
			return dec, err
		}
		if len(st.conflicting) > 0 {
			conflicting, base = st.conflicting, sinceRev(s, st.conflicting)
		}
		changes = st.changes
	}
	if len(conflicting) > 0 {
		sort.Strings(conflicting)
		verb := "undo"
		if !undo {
			verb = "redo"
		}
		return dec, &canvas.ConflictError{Result: canvas.ConflictResult{
			// RecoveryOps: the engine fills in the commits after BaseRev that
			// touched ConflictingIDs (Decide cannot read the log).
			Status: canvas.StatusConflict, CurrentRev: s.Rev, BaseRev: base, ConflictingIDs: conflicting, RecoveryOps: []canvas.Commit{},
			Suggestion: fmt.Sprintf("cannot %s %s (rev %d): %s changed since; recovery_ops lists who changed what. Re-read the state and edit directly instead.",
				verb, e.Type, e.Rev, strings.Join(conflicting, ", ")),
		}}
	}
	dec.Changes = changes
	act := &HistoryAction{Type: e.Type, Rev: e.Rev, LinesAffected: e.Lines}
	if act.LinesAffected == nil {
		act.LinesAffected = []int{}
	}
	res := HistoryActionResult{Success: true}
	if undo {
		res.UndoneAction, res.CanUndo, res.CanRedo = act, len(stack) > 1, true
	} else {
		res.RedoneAction, res.CanRedo, res.CanUndo = act, len(stack) > 1, true
	}
	dec.Result = res
	return dec, nil
}

// --- revert_to_snapshot ---

// RevertResult is the result of revert_to_snapshot.
type RevertResult struct {
	Success      bool     `json:"success"`
	RevertedTo   Reverted `json:"reverted_to"`
	NodesChanged []string `json:"nodes_changed"`
	EdgesChanged []string `json:"edges_changed"`
	Diff         string   `json:"diff"` // unified diffs of the documents it changes
}

// Reverted names the snapshot a revert went back to.
type Reverted struct {
	SnapshotID string `json:"snapshot_id"`
	Rev        int64  `json:"rev"`
}

// decideRevertToSnapshot makes the canvas (or, with node_id, one node) equal
// to cmd.Snapshot, the state at the snapshot's revision that the engine
// loaded. It appends changes; history is not rewritten. Documents whose text
// differs change by line splices.
func decideRevertToSnapshot(s *canvas.State, cmd canvas.Command) (Decision, error) {
	var a canvas.RevertToSnapshotArgs
	if err := decodeArgs(cmd.Args, &a); err != nil {
		return Decision{}, err
	}
	if a.SnapshotID == "" {
		return Decision{}, canvas.Unprocessable("args.snapshot_id", "is required: an id from GET /api/canvases/{id}/snapshots")
	}
	t := cmd.Snapshot
	if t == nil {
		return Decision{}, canvas.Unprocessable("args.snapshot_id", "snapshot %q was not loaded for this command", a.SnapshotID)
	}
	t, err := migratedTarget(t)
	if err != nil {
		return Decision{}, err
	}
	res := RevertResult{Success: true, RevertedTo: Reverted{SnapshotID: a.SnapshotID, Rev: t.Rev}}
	nodeIDs := map[string]bool{}
	edgeIDs := map[string]bool{}
	var dec Decision
	if a.NodeID != "" {
		dec.Touched = []canvas.Ref{{Kind: canvas.KindNode, ID: a.NodeID}}
		if _, ok := t.Nodes[a.NodeID]; !ok {
			return dec, canvas.Unprocessable("args.node_id", "node %q did not exist at snapshot %q (rev %d)", a.NodeID, a.SnapshotID, t.Rev)
		}
		nodeIDs[a.NodeID] = true
	} else {
		for id := range t.Nodes {
			nodeIDs[id] = true
		}
		for id := range s.Nodes {
			nodeIDs[id] = true
		}
		for id := range t.Edges {
			edgeIDs[id] = true
		}
		for id := range s.Edges {
			edgeIDs[id] = true
		}
	}
	rd := revertTo(s, t, nodeIDs, edgeIDs)
	st, err := settle(s, &cmd, rd.changes)
	dec.Touched = append(dec.Touched, st.touched...)
	if err != nil {
		return dec, err
	}
	if len(st.conflicting) > 0 {
		// With node_id: the node's parent was deleted, or moved under the
		// node, since the snapshot.
		return dec, &canvas.ConflictError{Result: canvas.ConflictResult{
			Status: canvas.StatusConflict, CurrentRev: s.Rev, BaseRev: t.Rev, ConflictingIDs: st.conflicting, RecoveryOps: []canvas.Commit{},
			Suggestion: fmt.Sprintf("cannot revert to snapshot %s (rev %d): %s changed since, so the reverted node would have no valid parent; "+
				"recovery_ops lists who changed what. Revert the whole canvas, or edit directly instead.", a.SnapshotID, t.Rev, strings.Join(st.conflicting, ", ")),
		}}
	}
	dec.Changes = st.changes
	res.NodesChanged, res.EdgesChanged = changedIDs(dec.Changes)
	res.Diff = rd.diff
	dec.Result = res
	return dec, nil
}

// migratedTarget returns the state of a snapshot as model 2 holds it: t
// itself when it needs no migration (a snapshot taken after the canvas
// moved to model 2), else a migrated copy at t's revision.
func migratedTarget(t *canvas.State) (*canvas.State, error) {
	cmd := canvas.Command{Type: CmdMigrateModel, Actor: MigrationActor, Rev: t.Rev + 1, Seed: "snapshot"}
	dec, err := MigrateModel(t, cmd)
	if err != nil || len(dec.Changes) == 0 {
		return t, err
	}
	c := t.Clone()
	commit := canvas.Commit{Rev: cmd.Rev, Type: cmd.Type, ActorID: cmd.Actor.ID, ActorType: cmd.Actor.Type, Changes: dec.Changes}
	if err := ApplyDecision(c, &commit, &dec); err != nil {
		return nil, fmt.Errorf("reducer: migrating the snapshot at rev %d: %w", t.Rev, err)
	}
	c.Rev = t.Rev
	return c, nil
}

// revertDiff is what revertTo decided.
type revertDiff struct {
	changes []canvas.Change
	diff    string // unified diffs of the documents it changes
}

// revertTo returns the changes that make the given nodes and edges of s
// equal to those of t (absent from t: deleted; absent from s: put back).
// Documents whose text differs change by line splices. The caller settles
// the changes (settle, which also touches them: the children and edges of
// deleted nodes go too, and so on).
func revertTo(s, t *canvas.State, nodeIDs, edgeIDs map[string]bool) revertDiff {
	var rd revertDiff
	var diffs strings.Builder
	// Deletes of edges first, then nodes in z-order of the target, then edge puts.
	var nodeChanges, edgeDeletes, edgePuts []canvas.Change
	for _, id := range sortedKeys(edgeIDs) {
		cur, want := s.Edges[id], t.Edges[id]
		switch {
		case want == nil && cur != nil:
			edgeDeletes = append(edgeDeletes, canvas.Change{Op: canvas.OpDelete, Kind: canvas.KindEdge, ID: id})
		case want != nil && (cur == nil || !edgesEqual(cur, want)):
			v, _ := json.Marshal(want)
			edgePuts = append(edgePuts, canvas.Change{Op: canvas.OpPut, Kind: canvas.KindEdge, ID: id, Value: v})
		}
	}
	for _, id := range sortedKeys(nodeIDs) {
		cur, want := s.Nodes[id], t.Nodes[id]
		var ch canvas.Change
		switch {
		case want == nil && cur != nil:
			ch = canvas.Change{Op: canvas.OpDelete, Kind: canvas.KindNode, ID: id}
		case want != nil && cur == nil:
			v, _ := json.Marshal(want)
			ch = canvas.Change{Op: canvas.OpPut, Kind: canvas.KindNode, ID: id, Value: v}
		case want != nil && !nodesEqual(cur, want):
			ch = nodeRevertChange(cur, want, &diffs)
		default:
			continue
		}
		nodeChanges = append(nodeChanges, ch)
	}
	// Puts of nodes before deletes so that parents exist; children are
	// deleted before parents by sorting deletes last (order among them is
	// irrelevant to Apply).
	sort.SliceStable(nodeChanges, func(i, j int) bool {
		return nodeChanges[i].Op != canvas.OpDelete && nodeChanges[j].Op == canvas.OpDelete
	})
	rd.changes = append(append(edgeDeletes, nodeChanges...), edgePuts...)
	rd.diff = diffs.String()
	return rd
}

// nodeRevertChange returns the change turning cur into want: a line splice
// when only a document's text differs, else a put of want.
func nodeRevertChange(cur, want *canvas.Node, diffs *strings.Builder) canvas.Change {
	curText, curOK := canvas.PropText(cur.Props[DocTextProp])
	wantText, wantOK := canvas.PropText(want.Props[DocTextProp])
	if cur.Type == DocType && want.Type == DocType && curOK && wantOK {
		d := Diff(curText, wantText, DiffOptions{Context: DefaultContext, FromName: cur.ID + " (current)", ToName: cur.ID + " (snapshot)"})
		diffs.WriteString(d.Diff)
		a, b := *cur, *want
		a.Props, b.Props = withoutText(cur.Props), withoutText(want.Props)
		if nodesEqual(&a, &b) {
			return canvas.Change{Op: canvas.OpEdit, Kind: canvas.KindNode, ID: cur.ID,
				Edit: &canvas.TextEdit{Prop: DocTextProp, Hunks: TextHunks(curText, wantText)}}
		}
	}
	v, _ := json.Marshal(want)
	return canvas.Change{Op: canvas.OpPut, Kind: canvas.KindNode, ID: cur.ID, Value: v}
}

func withoutText(p map[string]any) map[string]any {
	out := make(map[string]any, len(p))
	for k, v := range p {
		if k != DocTextProp {
			out[k] = v
		}
	}
	return out
}

// TextHunks returns the line splice that turns before into after (go-diff
// line mode): ApplyTextEdit(before, TextHunks(before, after)) == after.
func TextHunks(before, after string) []canvas.TextHunk {
	if before == after {
		return nil
	}
	var out []canvas.TextHunk
	var cur *canvas.TextHunk
	line := 1
	for _, d := range lineDiffs(before, after) {
		n := LineCount(d.text)
		switch d.kind {
		case ' ':
			cur = nil
			line += n
		case '-':
			if cur == nil {
				out = append(out, canvas.TextHunk{Line: line})
				cur = &out[len(out)-1]
			}
			cur.Del += n
			line += n
		case '+':
			if cur == nil {
				out = append(out, canvas.TextHunk{Line: line})
				cur = &out[len(out)-1]
			}
			cur.Ins += d.text
		}
	}
	for i := range out { // do not pin the texts the diff sliced
		out[i].Ins = strings.Clone(out[i].Ins)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func nodesEqual(a, b *canvas.Node) bool { return nodeFieldsEqual(a, b) && propsEqual(a.Props, b.Props) }

func edgesEqual(a, b *canvas.Edge) bool { return edgeFieldsEqual(a, b) && propsEqual(a.Props, b.Props) }

// nodeFieldsEqual and edgeFieldsEqual compare what nodesEqual and
// edgesEqual do except props.
func nodeFieldsEqual(a, b *canvas.Node) bool {
	return a.Type == b.Type && a.Name == b.Name && a.ParentID == b.ParentID && a.X == b.X && a.Y == b.Y &&
		a.W == b.W && a.H == b.H && a.Rotation == b.Rotation && a.Index == b.Index
}

func edgeFieldsEqual(a, b *canvas.Edge) bool {
	return a.From == b.From && a.To == b.To && a.Type == b.Type
}

func propsEqual(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// RevertSnapshotID returns the snapshot_id of revert_to_snapshot args, for
// the engine to load the state at that snapshot into Command.Snapshot before
// Decide. Malformed args are a *canvas.FieldError naming the field.
func RevertSnapshotID(args json.RawMessage) (string, error) {
	var a canvas.RevertToSnapshotArgs
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := decodeArgs(args, &a); err != nil {
		return "", err
	}
	if a.SnapshotID == "" {
		return "", canvas.Unprocessable("args.snapshot_id", "is required: an id from GET /api/canvases/{id}/snapshots")
	}
	return a.SnapshotID, nil
}
