// Package reducer decides commands against a canvas state and applies the
// commits that result. It is pure and deterministic: no I/O, no clock, no
// randomness; ids and timestamps arrive in the canvas.Command.
//
// Decide never modifies the state it is given and never copies it: it works
// on copies of the few entities a command changes and reports the effective
// diff as canvas.Changes. Apply is the only function that mutates a state;
// applying a commit's changes to the state Decide saw gives exactly the state
// the decision meant, so replaying the event log rebuilds the live state.
//
// Geometry: node coordinates are absolute page coordinates of the node's
// top-left corner; a rotated node is rotated (radians) about that corner, as
// in TLDraw. Only "group" and "frame" nodes hold children. A group's x, y, w,
// h are the union of its children's page bounds (kept up to date by every
// command; a group left without children is deleted). Moving, resizing or
// rotating a node moves its descendants too.
//
// Z-order: Node.Index is a fractional-index key (see KeyBetween). Creates go
// in front of every existing node; reorder rewrites the nodes it moves, and
// re-keys a few of their neighbours when keys between them would grow long
// (repeated swaps of the same nodes), so keys stay short.
package reducer

import (
	"encoding/json"

	"github.com/canvasd/canvasd/canvas"
)

// Schema is the version of the state encoding (snapshot.go) and of Apply's
// semantics. Stored snapshots with another schema are ignored and rebuilt
// from the log. Bump it when either changes. (5: model 2 (docs/model.md):
// the engine stores snapshots only of canvases it brought to model 2, so a
// state loaded from a snapshot of this schema needs no migration; applying
// migrate_model clears the undo histories; 4: a revert_commits renames
// again the stamps of the values it brought back in others' undo and redo
// entries, only for the entities it changed and as far as the history
// entries of the reverted commits tell them exactly (2 renamed them for
// every entity of those entries, 3 not at all); 3: a revert_commits no
// longer renames the stamps of others' undo entries; 2: binary,
// incremental snapshots; 1 was JSON.)
const Schema = 5

// Decision is what Decide concluded about one command.
type Decision struct {
	// Changes is the effective diff: one change per entity that actually
	// changes, in a deterministic order. Empty for a command that changes
	// nothing (it still commits).
	Changes []canvas.Change
	// CreatedIDs lists the ids this command created, in order.
	CreatedIDs []string
	// Touched lists every entity the command read or wrote, for conflict
	// checks; it is filled even when Decide returns an error (a reference to
	// a missing entity lists that entity).
	Touched []canvas.Ref
	// Result is an optional command-specific result (document verbs), JSON-encodable.
	Result any

	values []any // per change: the *canvas.Node or *canvas.Edge a put puts, or nil (ApplyDecision)
}

// decideFunc decides one command type against s without modifying s.
type decideFunc func(s *canvas.State, cmd canvas.Command) (Decision, error)

// Decide decides cmd against s without modifying s. Errors are
// *canvas.FieldError of kind canvas.ErrUnprocessable naming the offending
// field (e.g. "args.ids[1]", or "type" for an unknown command type); a
// reference to a missing entity is such an error whose Decision.Touched still
// lists that entity, so the engine can tell a conflict (deleted after
// base_rev) from a plain mistake. Decide is deterministic: the same state and
// command give the same Decision.
func Decide(s *canvas.State, cmd canvas.Command) (Decision, error) {
	fn, ok := verbs[cmd.Type]
	if cmd.Type == CmdMigrateModel {
		return Decision{}, canvas.Unprocessable("type", "%s is the commit the server makes when it brings a canvas stored by an earlier version to model %d; clients cannot send it", CmdMigrateModel, canvas.Model)
	}
	if !ok {
		return Decision{}, canvas.Unprocessable("type", "unknown command type %q; known types: %s", cmd.Type, knownTypes())
	}
	if len(cmd.Args) == 0 {
		cmd.Args = []byte("{}")
	} else if cmd.Type != CmdImportScene && !json.Valid(cmd.Args) { // an import's megabytes: its decoder checks them
		// canvas.DecodeStrict alone lets a stray closing '}' or ']' through.
		return Decision{}, canvas.Unprocessable("args", "is not a single valid JSON object")
	}
	return fn(s, cmd)
}

// Replay applies commits in order to a new empty state and returns it.
func Replay(commits []canvas.Commit) (*canvas.State, error) {
	s := canvas.NewState()
	for i := range commits {
		if err := Apply(s, &commits[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}
