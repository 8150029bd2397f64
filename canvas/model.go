package canvas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"time"
	"unsafe"
)

// Node is one shape on the canvas. Index orders nodes (z-order, ascending,
// ties broken by ID); it is a fractional-index key compared as a string.
// Rotation is in radians, as in TLDraw.
type Node struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Name       string         `json:"name"`
	ParentID   string         `json:"parent_id"`
	X          float64        `json:"x"`
	Y          float64        `json:"y"`
	W          float64        `json:"w"`
	H          float64        `json:"h"`
	Rotation   float64        `json:"rotation"`
	Index      string         `json:"index"`
	Props      map[string]any `json:"props"`
	CreatedBy  string         `json:"created_by"`
	UpdatedBy  string         `json:"updated_by"`
	CreatedRev int64          `json:"created_rev"`
	UpdatedRev int64          `json:"updated_rev"`
}

// AppendJSON appends the node's JSON, byte for byte what json.Marshal
// writes, without reflection (but for props values of types JSON does not
// decode to). A coordinate or size that is
// not finite is an error, as it is to json.Marshal.
func (n *Node) AppendJSON(b []byte) ([]byte, error) {
	b = appendJSONString(append(b, `{"id":`...), n.ID)
	b = appendJSONString(append(b, `,"type":`...), n.Type)
	b = appendJSONString(append(b, `,"name":`...), n.Name)
	b = appendJSONString(append(b, `,"parent_id":`...), n.ParentID)
	var err error
	for _, f := range [...]struct {
		key string
		v   float64
	}{{`,"x":`, n.X}, {`,"y":`, n.Y}, {`,"w":`, n.W}, {`,"h":`, n.H}, {`,"rotation":`, n.Rotation}} {
		if b, err = appendJSONFloat(append(b, f.key...), f.v); err != nil {
			return nil, err
		}
	}
	b = appendJSONString(append(b, `,"index":`...), n.Index)
	b = append(b, `,"props":`...)
	if n.Props == nil {
		b = append(b, "null"...)
	} else {
		if b, err = appendJSONObject(b, n.Props); err != nil {
			return nil, err
		}
	}
	b = appendJSONString(append(b, `,"created_by":`...), n.CreatedBy)
	b = appendJSONString(append(b, `,"updated_by":`...), n.UpdatedBy)
	b = strconv.AppendInt(append(b, `,"created_rev":`...), n.CreatedRev, 10)
	b = strconv.AppendInt(append(b, `,"updated_rev":`...), n.UpdatedRev, 10)
	return append(b, '}'), nil
}

// appendJSONFloat appends f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 → e-9, as encoding/json writes it
		b = b[:n-1]
	}
	return b, nil
}

// Edge is an arrow (docs/model.md). Each end is bound to a node (From, To:
// the node's id) or free (""); props.points is its path in page
// coordinates, the From end first. The reducer keeps bound ends on their
// nodes when the nodes change, and deleting a node deletes its edges in the
// same commit, so an edge never names a node that does not exist.
type Edge struct {
	ID         string         `json:"id"`
	From       string         `json:"from"`
	To         string         `json:"to"`
	Type       string         `json:"type"`
	Props      map[string]any `json:"props"`
	CreatedBy  string         `json:"created_by"`
	CreatedRev int64          `json:"created_rev"`
	UpdatedRev int64          `json:"updated_rev"`
}

// Kind names what a Change or a reference is about.
type Kind string

// Entity kinds.
const (
	KindNode Kind = "node"
	KindEdge Kind = "edge"
)

// Ref names one entity.
type Ref struct {
	Kind Kind   `json:"kind"`
	ID   string `json:"id"`
}

// State is the materialized state of one canvas at revision Rev. Deleted
// entities leave a tombstone holding the revision that deleted them, so a
// stale command that touches them is a conflict rather than "not found".
//
// State is not safe for concurrent use; the engine owns it.
type State struct {
	Rev        int64            `json:"rev"`
	Nodes      map[string]*Node `json:"nodes"`
	Edges      map[string]*Edge `json:"edges"`
	Tombstones map[Ref]int64    `json:"-"`
	History    History          `json:"-"` // per-actor undo/redo stacks (history.go), maintained by reducer.Apply
	// Bound indexes the edges by the nodes their ends are bound to: node id
	// → the ids of the edges whose From or To it is. SetEdge keeps it (and
	// NewState, Clone and reducer.DecodeState build it); nil means not
	// built (a State made by hand): EdgesOf then scans, and the first
	// SetEdge builds it.
	Bound map[string][]string `json:"-"`
}

// NewState returns an empty state at revision 0.
func NewState() *State {
	return &State{Nodes: map[string]*Node{}, Edges: map[string]*Edge{}, Tombstones: map[Ref]int64{}, Bound: map[string][]string{}}
}

// EdgesOf returns the ids of the edges with an end bound to node id, in no
// particular order. The slice belongs to the state: do not modify or keep it.
// It costs the node's edges (a scan of every edge when Bound is nil).
func (s *State) EdgesOf(id string) []string {
	if s.Bound != nil {
		return s.Bound[id]
	}
	var out []string
	for eid, e := range s.Edges {
		if e.From == id || e.To == id {
			out = append(out, eid)
		}
	}
	return out
}

// SetEdge stores e as edge id (nil deletes it) and keeps Bound in step. It
// is the one way a state's edges change once the state is built.
func (s *State) SetEdge(id string, e *Edge) {
	if s.Bound == nil {
		s.IndexEdges()
	}
	if old, ok := s.Edges[id]; ok {
		s.unbind(old)
	}
	if e == nil {
		delete(s.Edges, id)
		return
	}
	if s.Edges == nil {
		s.Edges = map[string]*Edge{}
	}
	s.Edges[id] = e
	s.bind(e)
}

// IndexEdges builds Bound from Edges.
func (s *State) IndexEdges() {
	s.Bound = make(map[string][]string, len(s.Edges))
	for _, e := range s.Edges {
		s.bind(e)
	}
}

// bind adds e to the lists of its nodes, kept sorted so that equal states
// have equal indexes.
func (s *State) bind(e *Edge) {
	for i, n := range [2]string{e.From, e.To} {
		if n == "" || i == 1 && n == e.From {
			continue
		}
		l := s.Bound[n]
		k := sort.SearchStrings(l, e.ID)
		if k < len(l) && l[k] == e.ID {
			continue
		}
		l = append(l, "")
		copy(l[k+1:], l[k:])
		l[k] = e.ID
		s.Bound[n] = l
	}
}

// unbind removes e from the lists of its nodes.
func (s *State) unbind(e *Edge) {
	for _, n := range [2]string{e.From, e.To} {
		l := s.Bound[n]
		k := sort.SearchStrings(l, e.ID)
		if k == len(l) || l[k] != e.ID {
			continue
		}
		if len(l) == 1 {
			delete(s.Bound, n)
			continue
		}
		s.Bound[n] = append(l[:k:k], l[k+1:]...)
	}
}

// ChangedAt returns the revision at which ref last changed: its updated_rev if
// it exists, its deletion revision if it was deleted, and 0 if never seen.
func (s *State) ChangedAt(ref Ref) int64 {
	switch ref.Kind {
	case KindNode:
		if n, ok := s.Nodes[ref.ID]; ok {
			return n.UpdatedRev
		}
	case KindEdge:
		if e, ok := s.Edges[ref.ID]; ok {
			return e.UpdatedRev
		}
	}
	return s.Tombstones[ref]
}

// SortedNodes returns the nodes in z-order (Index, then ID).
func (s *State) SortedNodes() []*Node {
	out := make([]*Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Index != out[j].Index {
			return out[i].Index < out[j].Index
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// SortedEdges returns the edges ordered by ID.
func (s *State) SortedEdges() []*Edge {
	out := make([]*Edge, 0, len(s.Edges))
	for _, e := range s.Edges {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	c := &State{Rev: s.Rev, Nodes: make(map[string]*Node, len(s.Nodes)),
		Edges: make(map[string]*Edge, len(s.Edges)), Tombstones: make(map[Ref]int64, len(s.Tombstones))}
	for k, n := range s.Nodes {
		c.Nodes[k] = n.Clone()
	}
	for k, e := range s.Edges {
		c.Edges[k] = e.Clone()
	}
	if s.Bound != nil {
		c.IndexEdges()
	}
	for k, v := range s.Tombstones {
		c.Tombstones[k] = v
	}
	if s.History != nil { // entries are immutable; copy the per-actor records
		c.History = make(History, len(s.History))
		for k, h := range s.History {
			hc := *h
			hc.Undo = hc.Undo[:len(hc.Undo):len(hc.Undo)] // appends copy: entries are shared, slots are not
			hc.Redo = hc.Redo[:len(hc.Redo):len(hc.Redo)]
			c.History[k] = &hc
		}
	}
	return c
}

// Clone returns a deep copy of n.
func (n *Node) Clone() *Node {
	c := *n
	c.Props = CloneProps(n.Props)
	return &c
}

// Clone returns a deep copy of e.
func (e *Edge) Clone() *Edge {
	c := *e
	c.Props = CloneProps(e.Props)
	return &c
}

// CloneProps deep-copies a JSON-shaped map.
func CloneProps(p map[string]any) map[string]any {
	if p == nil {
		return nil
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		out[k] = cloneJSON(v)
	}
	return out
}

func cloneJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return CloneProps(t)
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = cloneJSON(x)
		}
		return c
	default:
		return v
	}
}

// SceneState is the wire form of a state: nodes in z-order, edges by id.
type SceneState struct {
	Nodes []*Node `json:"nodes"`
	Edges []*Edge `json:"edges"`
}

// Scene returns the wire form of s.
func (s *State) Scene() SceneState {
	return SceneState{Nodes: s.SortedNodes(), Edges: s.SortedEdges()}
}

// Canvas is a canvas's metadata.
type Canvas struct {
	ID        string    `json:"canvas_id"`
	Title     string    `json:"title"`
	HeadRev   int64     `json:"head_rev"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by,omitempty"`
}

// Op is what a Change does.
type Op string

// Change ops.
const (
	OpPut    Op = "put"    // Value is the entity's full new value (create or replace)
	OpPatch  Op = "patch"  // Patch sets top-level fields; "props" is a JSON merge patch (null deletes a key)
	OpDelete Op = "delete" // the entity is removed and leaves a tombstone
	// OpEdit (textedit.go): Edit splices a node's string prop (document line edits)
)

// Change is one entry of a commit's effective diff. Apply sets updated_rev
// (and updated_by for nodes) from the commit, so patches need not carry them.
type Change struct {
	Op    Op              `json:"op"`
	Kind  Kind            `json:"kind"`
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value,omitempty"`
	Patch map[string]any  `json:"patch,omitempty"`
	Edit  *TextEdit       `json:"edit,omitempty"` // OpEdit only: a line splice of a node's string prop
}

// Commit is one applied command: one revision of one canvas. It is what the
// event log stores, what SSE sends as canvas_commit data, and what
// recovery_ops lists.
type Commit struct {
	CanvasID  string          `json:"canvas_id"`
	EventID   string          `json:"event_id"`
	Rev       int64           `json:"rev"`
	CmdID     string          `json:"cmd_id"`
	Type      string          `json:"type"`
	Args      json.RawMessage `json:"args"`
	ActorID   string          `json:"actor_id"`
	ActorType ActorType       `json:"actor_type"`
	TS        time.Time       `json:"ts"`
	Changes   []Change        `json:"changes"`

	encoded         []byte // the commit's JSON once Encode ran
	argsAt, argsEnd int    // where the (compacted) args are in encoded
	changesAt       int    // where the changes array starts in encoded
}

// Encode encodes the commit as JSON once and keeps the encoding, which
// JSON, ChangesJSON and MarshalJSON then return: the stored changes, the SSE
// event and every JSON document listing the commit share it. After Encode
// the commit must not change. Encode is not safe to call concurrently with
// itself or the other methods on one commit; once it returned, they are.
func (c *Commit) Encode() error {
	if c.encoded != nil {
		return nil
	}
	b, at, err := c.encode()
	c.encoded, c.argsAt, c.argsEnd, c.changesAt = b, at.args, at.argsEnd, at.changes
	return err
}

// encodedAt is where the parts of an encoded commit that the stores keep start.
type encodedAt struct{ args, argsEnd, changes int }

// encode writes the commit's JSON object: the same members as
// json.Marshal would write (args compacted), without reflection.
func (c *Commit) encode() (b []byte, at encodedAt, err error) {
	b = make([]byte, 0, 192+len(c.CanvasID)+len(c.EventID)+len(c.CmdID)+len(c.Type)+len(c.Args)+len(c.ActorID)+changesSize(c.Changes))
	b = appendJSONString(append(b, `{"canvas_id":`...), c.CanvasID)
	b = appendJSONString(append(b, `,"event_id":`...), c.EventID)
	b = strconv.AppendInt(append(b, `,"rev":`...), c.Rev, 10)
	b = appendJSONString(append(b, `,"cmd_id":`...), c.CmdID)
	b = appendJSONString(append(b, `,"type":`...), c.Type)
	b = append(b, `,"args":`...)
	at.args = len(b)
	switch {
	case c.Args == nil:
		b = append(b, "null"...)
	case isCompact(c.Args, false):
		b = append(b, c.Args...)
	default:
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, c.Args); err != nil {
			return nil, at, fmt.Errorf("encoding commit %d: args: %w", c.Rev, err)
		}
		b = buf.Bytes()
	}
	at.argsEnd = len(b)
	b = appendJSONString(append(b, `,"actor_id":`...), c.ActorID)
	b = appendJSONString(append(b, `,"actor_type":`...), string(c.ActorType))
	b = c.TS.AppendFormat(append(b, `,"ts":`...), `"`+time.RFC3339Nano+`"`)
	b = append(b, `,"changes":`...)
	at.changes = len(b)
	if b, err = appendChanges(b, c.Changes); err != nil { // in place: an import's are megabytes
		return nil, at, fmt.Errorf("encoding the changes of commit %d: %w", c.Rev, err)
	}
	return append(b, '}'), at, nil
}

// appendJSONString appends s as a JSON string: as is when it holds nothing
// to escape (ids and types do not), else as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// JSON returns the commit's JSON, encoding it (without keeping it) when
// Encode has not run.
func (c *Commit) JSON() ([]byte, error) {
	if c.encoded != nil {
		return c.encoded, nil
	}
	b, _, err := c.encode()
	return b, err
}

// ChangesJSON returns the JSON of the commit's changes (an empty array for
// none), the part of JSON that the event log stores.
func (c *Commit) ChangesJSON() ([]byte, error) {
	if c.encoded != nil {
		return c.encoded[c.changesAt : len(c.encoded)-1], nil
	}
	b, err := appendChanges(make([]byte, 0, changesSize(c.Changes)), c.Changes)
	if err != nil {
		return nil, fmt.Errorf("encoding the changes of commit %d: %w", c.Rev, err)
	}
	return b, nil
}

// changesSize is about the length of the changes' JSON (exactly, for puts
// of compact values).
func changesSize(changes []Change) int {
	n := 2
	for i := range changes {
		n += len(`{"op":"","kind":"","id":"","value":},`) + len(changes[i].Op) + len(changes[i].Kind) + len(changes[i].ID) + len(changes[i].Value)
		if len(changes[i].Value) == 0 {
			n += 64 // a patch or an edit
		}
	}
	return n
}

// appendChanges appends changes as a JSON array (an empty one for none),
// byte for byte what json.Marshal writes, with reflection only for patches
// and text edits.
func appendChanges(b []byte, changes []Change) ([]byte, error) {
	b = append(b, '[')
	for i := range changes {
		ch := &changes[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(append(b, `{"op":`...), string(ch.Op))
		b = appendJSONString(append(b, `,"kind":`...), string(ch.Kind))
		b = appendJSONString(append(b, `,"id":`...), ch.ID)
		if len(ch.Value) > 0 {
			b = append(b, `,"value":`...)
			var err error
			if b, err = appendRawJSON(b, ch.Value); err != nil {
				return nil, err
			}
		}
		if len(ch.Patch) > 0 {
			p, err := json.Marshal(ch.Patch)
			if err != nil {
				return nil, err
			}
			b = append(append(b, `,"patch":`...), p...)
		}
		if ch.Edit != nil {
			e, err := json.Marshal(ch.Edit)
			if err != nil {
				return nil, err
			}
			b = append(append(b, `,"edit":`...), e...)
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendRawJSON appends raw compacted, as json.Marshal writes a
// json.RawMessage (which also escapes <, >, & and U+2028/U+2029: for those
// rare values it is json.Marshal that writes it).
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, error) {
	if isCompact(raw, true) { // as json.Marshal wrote it: most values are
		return append(b, raw...), nil
	}
	if bytes.ContainsAny(raw, "<>&\u2028\u2029") {
		m, err := json.Marshal(raw)
		return append(b, m...), err
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return nil, &json.MarshalerError{Type: reflect.TypeFor[json.RawMessage](), Err: err}
	}
	return buf.Bytes(), nil
}

// isCompact reports whether raw, valid JSON, has no white space outside its
// strings and, with htmlSafe, no <, >, & or U+2028/U+2029 in them: whether
// compacting it (escaping those too, with htmlSafe) would leave it as it
// is. It is the cheap first look of the encoders, which copy such JSON
// (json.Marshal's own output, and what most clients send) as is. Of the
// syntax it checks only that strings close and brackets balance (a
// truncated value goes to encoding/json, which refuses it): raw must be
// valid JSON otherwise (command args are checked before a commit is
// decided, change values are canvasd's own encodings).
func isCompact(raw []byte, htmlSafe bool) bool {
	inString, depth := false, 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			switch c {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth < 0 {
					return false
				}
			case ' ', '\t', '\n', '\r':
				return false
			}
			continue
		}
		switch c {
		case '\\':
			i++ // the escaped byte does not end the string
		case '"':
			inString = false
		case '<', '>', '&':
			if htmlSafe {
				return false
			}
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8
			if htmlSafe && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				return false
			}
		}
	}
	return !inString && depth == 0 && len(raw) > 0
}

// StoredText returns what a store keeps of the commit besides its scalar
// fields, as text: its args (ok false when it has none) and its changes
// (ChangesJSON). Once Encode ran they share the encoding's memory, which
// never changes, so a store binds them without copying: the stored text and
// the SSE event are the same bytes.
func (c *Commit) StoredText() (args string, ok bool, changes string, err error) {
	if c.encoded != nil {
		if c.Args != nil {
			args, ok = unsafe.String(&c.encoded[c.argsAt], c.argsEnd-c.argsAt), true
		}
		ch := c.encoded[c.changesAt : len(c.encoded)-1]
		return args, ok, unsafe.String(unsafe.SliceData(ch), len(ch)), nil
	}
	if c.Args != nil {
		args, ok = string(c.Args), true
	}
	ch, err := c.ChangesJSON()
	if err != nil {
		return "", false, "", err
	}
	return args, ok, string(ch), nil
}

// MarshalJSON implements json.Marshaler (see JSON).
func (c *Commit) MarshalJSON() ([]byte, error) { return c.JSON() }

// Touches reports whether the commit changed any of refs.
func (c *Commit) Touches(refs map[Ref]bool) bool {
	for _, ch := range c.Changes {
		if refs[Ref{Kind: ch.Kind, ID: ch.ID}] {
			return true
		}
	}
	return false
}

// MaxIDLen bounds client-chosen ids of canvases, nodes and edges.
const MaxIDLen = 128

// ValidateID checks a client-chosen id: 1 to 128 characters of
// [A-Za-z0-9_.:-], not only dots ("." and ".." are path segments that a URL
// cannot carry: they collapse). field names the id in the error (kind
// ErrUnprocessable).
func ValidateID(field, id string) error {
	if id == "" || len(id) > MaxIDLen {
		return Unprocessable(field, "must be 1 to %d characters, got %d", MaxIDLen, len(id))
	}
	dots := 0
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return Unprocessable(field, "may only hold letters, digits and _ . : - (found %q at byte %d)", c, i)
		}
		if c == '.' {
			dots++
		}
	}
	if dots == len(id) {
		return Unprocessable(field, "must not be made of dots only (%q cannot be used in a URL path); add a letter or digit", id)
	}
	return nil
}
