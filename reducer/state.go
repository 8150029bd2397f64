package reducer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/canvasd/canvasd/canvas"
)

// stateFile is the encoding of a canvas.State (version Schema).
type stateFile struct {
	Schema     int            `json:"schema"`
	Rev        int64          `json:"rev"`
	Nodes      []*canvas.Node `json:"nodes"`
	Edges      []*canvas.Edge `json:"edges"`
	Tombstones []tombstone    `json:"tombstones"`
	History    canvas.History `json:"history,omitempty"` // per-actor undo/redo stacks (doc_history.go)
}

type tombstone struct {
	Kind canvas.Kind `json:"kind"`
	ID   string      `json:"id"`
	Rev  int64       `json:"rev"`
}

// EncodeState encodes s, tombstones included, as JSON tagged with Schema.
// The encoding is deterministic: nodes in z-order, edges and tombstones by id.
func EncodeState(s *canvas.State) ([]byte, error) {
	f := stateFile{Schema: Schema, Rev: s.Rev, Nodes: s.SortedNodes(), Edges: s.SortedEdges(), History: s.History,
		Tombstones: make([]tombstone, 0, len(s.Tombstones))}
	for ref, rev := range s.Tombstones {
		f.Tombstones = append(f.Tombstones, tombstone{Kind: ref.Kind, ID: ref.ID, Rev: rev})
	}
	sort.Slice(f.Tombstones, func(i, j int) bool {
		a, b := f.Tombstones[i], f.Tombstones[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.ID < b.ID
	})
	b, err := json.Marshal(&f)
	if err != nil {
		return nil, fmt.Errorf("reducer: encode state at rev %d: %v: %w", s.Rev, err, canvas.ErrInvalid)
	}
	return b, nil
}

// DecodeState decodes what EncodeState wrote. Another schema version, a
// malformed document, a missing or duplicate id, or an unknown tombstone
// kind is an error wrapping canvas.ErrInvalid.
func DecodeState(b []byte) (*canvas.State, error) {
	var f stateFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("reducer: decode state: %v: %w", err, canvas.ErrInvalid)
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) > 0 { // dec.More() misses a stray '}' or ']'
		return nil, fmt.Errorf("reducer: decode state: trailing data: %w", canvas.ErrInvalid)
	}
	if f.Schema != Schema {
		return nil, fmt.Errorf("reducer: decode state: schema %d, want %d: %w", f.Schema, Schema, canvas.ErrInvalid)
	}
	if f.Rev < 0 {
		return nil, fmt.Errorf("reducer: decode state: negative rev %d: %w", f.Rev, canvas.ErrInvalid)
	}
	s := &canvas.State{Rev: f.Rev, Nodes: make(map[string]*canvas.Node, len(f.Nodes)),
		Edges: make(map[string]*canvas.Edge, len(f.Edges)), Tombstones: make(map[canvas.Ref]int64, len(f.Tombstones))}
	for _, n := range f.Nodes {
		if n == nil || n.ID == "" {
			return nil, fmt.Errorf("reducer: decode state: node without an id: %w", canvas.ErrInvalid)
		}
		if _, dup := s.Nodes[n.ID]; dup {
			return nil, fmt.Errorf("reducer: decode state: duplicate node %q: %w", n.ID, canvas.ErrInvalid)
		}
		normalizeDocNode(n) // doc texts are kept as canvas.DocText, as Apply keeps them
		s.Nodes[n.ID] = n
	}
	for _, e := range f.Edges {
		if e == nil || e.ID == "" {
			return nil, fmt.Errorf("reducer: decode state: edge without an id: %w", canvas.ErrInvalid)
		}
		if _, dup := s.Edges[e.ID]; dup {
			return nil, fmt.Errorf("reducer: decode state: duplicate edge %q: %w", e.ID, canvas.ErrInvalid)
		}
		s.Edges[e.ID] = e
	}
	for _, t := range f.Tombstones {
		if t.Kind != canvas.KindNode && t.Kind != canvas.KindEdge {
			return nil, fmt.Errorf("reducer: decode state: tombstone of unknown kind %q: %w", t.Kind, canvas.ErrInvalid)
		}
		ref := canvas.Ref{Kind: t.Kind, ID: t.ID}
		if _, dup := s.Tombstones[ref]; dup {
			return nil, fmt.Errorf("reducer: decode state: duplicate tombstone %s %q: %w", t.Kind, t.ID, canvas.ErrInvalid)
		}
		s.Tombstones[ref] = t.Rev
	}
	if len(f.History) > 0 {
		s.History = f.History
	}
	return s, nil
}
