package reducer

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"

	"github.com/canvasd/canvasd/canvas"
)

// Apply applies commit c's changes to s, in order, and sets s.Rev = c.Rev.
// Every node a change touches gets updated_rev = c.Rev and updated_by =
// c.ActorID (edges: updated_rev); a put that creates an entity sets its
// created_rev / created_by the same way; a delete leaves the tombstone
// Tombstones[ref] = c.Rev and a put removes one. c.Rev must be above s.Rev.
//
// Apply is all-or-nothing: on error (a change naming a missing entity, a
// malformed value or patch) s is left as it was. Entities are replaced, not
// modified in place, so a *Node or *Edge read from s before Apply keeps its
// old value. Apply never keeps references into c.
func Apply(s *canvas.State, c *canvas.Commit) error { return apply(s, c, nil) }

// ApplyDecision is Apply for a commit whose changes are those of d (the
// decision this process made for it): a put then takes the entity d
// decided instead of decoding the change's JSON value, which holds the same.
func ApplyDecision(s *canvas.State, c *canvas.Commit, d *Decision) error {
	if len(d.values) != len(c.Changes) {
		return apply(s, c, nil)
	}
	return apply(s, c, d.values)
}

// apply applies c; values, when not nil, holds per change the entity of a
// put (nil: decode the value).
func apply(s *canvas.State, c *canvas.Commit, values []any) error {
	if c.Rev <= s.Rev {
		return fmt.Errorf("reducer: apply commit rev %d onto state at rev %d: %w", c.Rev, s.Rev, canvas.ErrInvalid)
	}
	if s.Nodes == nil {
		s.Nodes = map[string]*canvas.Node{}
	}
	if s.Edges == nil {
		s.Edges = map[string]*canvas.Edge{}
	}
	if s.Tombstones == nil {
		s.Tombstones = map[canvas.Ref]int64{}
	}
	if s.Bound == nil {
		s.IndexEdges()
	}
	a := applier{s: s, c: c, values: values, undo: make([]saved, 0, len(c.Changes))}
	hist := CaptureHistory(s, c) // docs: per-actor undo/redo stacks (doc_history.go)
	for i := range c.Changes {
		if err := a.change(i, &c.Changes[i]); err != nil {
			a.rollback()
			return fmt.Errorf("reducer: apply rev %d change %d (%s %s %q): %w", c.Rev, i, c.Changes[i].Op, c.Changes[i].Kind, c.Changes[i].ID, err)
		}
	}
	hist.Record(s)
	s.Rev = c.Rev
	return nil
}

// saved is the prior value of one entity, for rollback.
type saved struct {
	ref       canvas.Ref
	node      *canvas.Node
	edge      *canvas.Edge
	tomb      int64
	hadTomb   bool
	hadEntity bool
}

type applier struct {
	s      *canvas.State
	c      *canvas.Commit
	values []any // see apply
	undo   []saved
	saved  map[canvas.Ref]struct{} // the refs of undo, once it holds more than a few (an import's thousands)
}

func (a *applier) save(ref canvas.Ref) {
	if a.saved != nil {
		if _, ok := a.saved[ref]; ok {
			return
		}
		a.saved[ref] = struct{}{}
	} else {
		for i := range a.undo {
			if a.undo[i].ref == ref {
				return
			}
		}
		if len(a.undo) >= 8 {
			a.saved = make(map[canvas.Ref]struct{}, 2*len(a.undo))
			for _, sv := range a.undo {
				a.saved[sv.ref] = struct{}{}
			}
			a.saved[ref] = struct{}{}
		}
	}
	sv := saved{ref: ref}
	sv.tomb, sv.hadTomb = a.s.Tombstones[ref]
	if ref.Kind == canvas.KindNode {
		sv.node, sv.hadEntity = a.s.Nodes[ref.ID]
	} else {
		sv.edge, sv.hadEntity = a.s.Edges[ref.ID]
	}
	a.undo = append(a.undo, sv)
}

func (a *applier) rollback() {
	for i := len(a.undo) - 1; i >= 0; i-- {
		sv := a.undo[i]
		if sv.hadTomb {
			a.s.Tombstones[sv.ref] = sv.tomb
		} else {
			delete(a.s.Tombstones, sv.ref)
		}
		switch {
		case sv.ref.Kind == canvas.KindNode && sv.hadEntity:
			a.s.Nodes[sv.ref.ID] = sv.node
		case sv.ref.Kind == canvas.KindNode:
			delete(a.s.Nodes, sv.ref.ID)
		case sv.hadEntity:
			a.s.SetEdge(sv.ref.ID, sv.edge)
		default:
			a.s.SetEdge(sv.ref.ID, nil)
		}
	}
}

// decided returns the entity the decision put with change i, or nil.
func (a *applier) decided(i int) any {
	if a.values == nil {
		return nil
	}
	return a.values[i]
}

func (a *applier) change(i int, ch *canvas.Change) error {
	ref := canvas.Ref{Kind: ch.Kind, ID: ch.ID}
	if ch.ID == "" {
		return fmt.Errorf("change without an id: %w", canvas.ErrInvalid)
	}
	switch ch.Kind {
	case canvas.KindNode:
		return a.nodeChange(ref, ch, a.decided(i))
	case canvas.KindEdge:
		return a.edgeChange(ref, ch, a.decided(i))
	}
	return fmt.Errorf("unknown change kind %q: %w", ch.Kind, canvas.ErrInvalid)
}

func (a *applier) nodeChange(ref canvas.Ref, ch *canvas.Change, decided any) error {
	s, c := a.s, a.c
	old, exists := s.Nodes[ch.ID]
	switch ch.Op {
	case canvas.OpPut:
		var n canvas.Node
		if d, ok := decided.(*canvas.Node); ok {
			n = *d
		} else if err := canvas.UnmarshalExact(ch.Value, &n); err != nil {
			return fmt.Errorf("node value: %v: %w", err, canvas.ErrInvalid)
		}
		if n.ID != ch.ID {
			return fmt.Errorf("node value has id %q: %w", n.ID, canvas.ErrInvalid)
		}
		if !finite(n.X, n.Y, n.W, n.H, n.Rotation) {
			return fmt.Errorf("node value has non-finite geometry: %w", canvas.ErrInvalid)
		}
		if !exists {
			n.CreatedRev, n.CreatedBy = c.Rev, c.ActorID
		}
		n.UpdatedRev, n.UpdatedBy = c.Rev, c.ActorID
		normalizeDocNode(&n)
		a.save(ref)
		s.Nodes[ch.ID] = &n
		delete(s.Tombstones, ref)
	case canvas.OpPatch:
		if !exists {
			return fmt.Errorf("patch of a missing node: %w", canvas.ErrNotFound)
		}
		n := *old
		if err := nodeFields.patch(&n, ch.Patch); err != nil {
			return err
		}
		normalizeDocNode(&n)
		n.UpdatedRev, n.UpdatedBy = c.Rev, c.ActorID
		a.save(ref)
		s.Nodes[ch.ID] = &n
	case canvas.OpEdit:
		if !exists {
			return fmt.Errorf("edit of a missing node: %w", canvas.ErrNotFound)
		}
		n := *old
		n.Props = maps.Clone(old.Props)
		if _, err := ApplyEditChange(&n, ch.Edit); err != nil {
			return err
		}
		n.UpdatedRev, n.UpdatedBy = c.Rev, c.ActorID
		a.save(ref)
		s.Nodes[ch.ID] = &n
	case canvas.OpDelete:
		if !exists {
			return fmt.Errorf("delete of a missing node: %w", canvas.ErrNotFound)
		}
		a.save(ref)
		delete(s.Nodes, ch.ID)
		s.Tombstones[ref] = c.Rev
	default:
		return fmt.Errorf("unknown op %q: %w", ch.Op, canvas.ErrInvalid)
	}
	return nil
}

func (a *applier) edgeChange(ref canvas.Ref, ch *canvas.Change, decided any) error {
	s, c := a.s, a.c
	old, exists := s.Edges[ch.ID]
	switch ch.Op {
	case canvas.OpPut:
		var e canvas.Edge
		if d, ok := decided.(*canvas.Edge); ok {
			e = *d
		} else if err := canvas.UnmarshalExact(ch.Value, &e); err != nil {
			return fmt.Errorf("edge value: %v: %w", err, canvas.ErrInvalid)
		}
		if e.ID != ch.ID {
			return fmt.Errorf("edge value has id %q: %w", e.ID, canvas.ErrInvalid)
		}
		if !exists {
			e.CreatedRev, e.CreatedBy = c.Rev, c.ActorID
		}
		e.UpdatedRev = c.Rev
		a.save(ref)
		s.SetEdge(ch.ID, &e)
		delete(s.Tombstones, ref)
	case canvas.OpPatch:
		if !exists {
			return fmt.Errorf("patch of a missing edge: %w", canvas.ErrNotFound)
		}
		e := *old
		if err := edgeFields.patch(&e, ch.Patch); err != nil {
			return err
		}
		e.UpdatedRev = c.Rev
		a.save(ref)
		s.SetEdge(ch.ID, &e)
	case canvas.OpDelete:
		if !exists {
			return fmt.Errorf("delete of a missing edge: %w", canvas.ErrNotFound)
		}
		a.save(ref)
		s.SetEdge(ch.ID, nil)
		s.Tombstones[ref] = c.Rev
	default:
		return fmt.Errorf("unknown op %q on an edge: %w", ch.Op, canvas.ErrInvalid)
	}
	return nil
}

func patchString(k string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("patch field %q must be a string, got %T: %w", k, v, canvas.ErrInvalid)
	}
	return s, nil
}

func patchNumber(k string, v any) (float64, error) {
	var f float64
	switch t := v.(type) {
	case float64:
		f = t
	case json.Number:
		var err error
		if f, err = t.Float64(); err != nil {
			return 0, fmt.Errorf("patch field %q: %v: %w", k, err, canvas.ErrInvalid)
		}
	case int:
		f = float64(t)
	case int64:
		f = float64(t)
	default:
		return 0, fmt.Errorf("patch field %q must be a number, got %T: %w", k, v, canvas.ErrInvalid)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("patch field %q is not finite: %w", k, canvas.ErrInvalid)
	}
	return f, nil
}

func patchProps(old map[string]any, v any) (map[string]any, error) {
	switch t := v.(type) {
	case map[string]any:
		return mergeProps(old, t), nil
	case nil:
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("patch field \"props\" must be an object (a JSON merge patch), got %T: %w", v, canvas.ErrInvalid)
}
