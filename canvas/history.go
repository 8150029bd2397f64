package canvas

// History holds the per-actor undo and redo stacks of a canvas. It is part
// of the materialized State, maintained by the reducer's Apply from the
// commits themselves (so replaying the log rebuilds it) and encoded with the
// state. Entries are immutable once stored: code that changes a stack builds
// new slices, so State.Clone may share them.
type History map[string]*ActorHistory

// ActorHistory is one actor's undo and redo stacks (last element on top).
type ActorHistory struct {
	Undo    []HistoryEntry `json:"undo"`
	Redo    []HistoryEntry `json:"redo"`
	LastRev int64          `json:"last_rev"` // the actor's latest commit (for bounding the number of actors kept)
}

// HistoryEntry reverses one commit. On the undo stack it reverses one of the
// actor's commands; on the redo stack it reverses one of the actor's undos.
type HistoryEntry struct {
	Rev     int64    `json:"rev"`             // the commit it reverses
	Type    string   `json:"type"`            // the command type the user sees (for a redo entry: the undone command's type)
	Inverse []Change `json:"inverse"`         // the changes that reverse the commit
	Expect  []RefRev `json:"expect"`          // each entity it writes and the revision whose value it must still hold
	Restore []RefRev `json:"restore"`         // for each entity, the revision of the value Inverse restores (0: absent)
	Lines   []int    `json:"lines,omitempty"` // document lines the commit changed (document verbs)
	Size    int      `json:"size"`            // approximate bytes held by Inverse, for bounding the stacks
}

// RefRev is an entity and a revision.
type RefRev struct {
	Kind Kind   `json:"kind"`
	ID   string `json:"id"`
	Rev  int64  `json:"rev"`
}

// Ref returns the entity of r.
func (r RefRev) Ref() Ref { return Ref{Kind: r.Kind, ID: r.ID} }

// RevertBase is what a set of earlier commits changed, read from the log:
// the input of a revert_commits decision (reducer.LoadRevert builds it). It
// holds values of the past only, so it stays true however the canvas moves
// on. Values are shared with the states they came from: read only.
type RevertBase struct {
	Revs []int64 // the reverted revisions, ascending and distinct
	// Changing lists those of Revs whose commits changed something.
	Changing []int64
	// Entities lists every node and edge the commits at Revs changed, in the
	// order of their first change.
	Entities []RevertEntity
}

// RevertEntity is one node or edge that reverted commits changed.
type RevertEntity struct {
	Ref Ref
	// First and Last are the oldest and the newest reverted revision that
	// changed it.
	First, Last int64
	// BeforeNode (BeforeEdge for an edge) is its value before First, nil when
	// it did not exist then; AfterNode (AfterEdge) its value after Last, nil
	// when Last deleted it.
	BeforeNode, AfterNode *Node
	BeforeEdge, AfterEdge *Edge
	// Others lists the revisions between First and Last, not reverted, whose
	// commits changed it too (someone's work in the middle of the reverted
	// ones), ascending.
	Others []int64
}
