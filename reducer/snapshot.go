package reducer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// State snapshots.
//
// A snapshot holds the state of a canvas at one revision, whole or as a
// delta: a delta holds only the entities and undo histories that changed
// after an earlier snapshot (its base) and turns the state at the base into
// the state at its revision; a whole snapshot is a delta from the empty
// state (base 0). The engine stores a delta every so many commits, which
// costs what changed rather than what the canvas holds; capturing one takes
// pointers only (CaptureDelta) so that encoding runs off the writer's path;
// and now and then it merges a chain of deltas into a whole snapshot
// (MergeSnapshots), working on the encoded records without decoding them.
//
// The encoding is binary (varints are encoding/binary's):
//
//	snapshot = "CVS1" rev:varint base:varint count:uvarint record{count}
//	record   = kind:byte id:string flags:byte [tombstone:varint] [value:bytes]
//	string, bytes = length:uvarint followed by that many bytes
//
// Records are in strictly ascending (kind, id) order. Kinds: 'e' an edge,
// 'h' an actor's undo/redo history (id: the actor), 'n' a node. flags bit 0
// says a value follows, bit 1 a tombstone revision; no bit: the entity or
// history is gone (a delta must say so; a whole snapshot omits it). Node and
// edge values are binary (appendNode, appendEdge); histories are JSON.

const snapshotMagic = "CVS1"

// Record kinds, in their sort order.
const (
	recEdge    = 'e'
	recHistory = 'h'
	recNode    = 'n'
)

// Record flags.
const (
	hasValue = 1 << iota
	hasTomb
)

// SnapshotCapture is what a snapshot will hold, captured from a live state.
// Entities and histories are immutable once in a State (Apply replaces them),
// so capturing costs pointers only, and Encode may run later, on another
// goroutine, while the state moves on.
type SnapshotCapture struct {
	rev, base int64
	recs      []capRecord
}

type capRecord struct {
	kind    byte
	id      string
	node    *canvas.Node
	edge    *canvas.Edge
	hist    *canvas.ActorHistory
	tomb    int64
	hasTomb bool // tomb is set
}

// CaptureDelta captures the delta that turns the state at base into s: the
// entities named in changed (every entity that changed after base), and the
// undo histories that differ from prevHistory, the History of the state at
// base. It costs O(len(changed) + actors).
func CaptureDelta(s *canvas.State, base int64, changed map[canvas.Ref]struct{}, prevHistory canvas.History) *SnapshotCapture {
	c := &SnapshotCapture{rev: s.Rev, base: base, recs: make([]capRecord, 0, len(changed))}
	for ref := range changed {
		c.addEntity(s, ref)
	}
	for id, h := range s.History {
		if prevHistory[id] != h {
			c.recs = append(c.recs, capRecord{kind: recHistory, id: id, hist: h})
		}
	}
	for id := range prevHistory {
		if _, ok := s.History[id]; !ok {
			c.recs = append(c.recs, capRecord{kind: recHistory, id: id})
		}
	}
	return c
}

func (c *SnapshotCapture) addEntity(s *canvas.State, ref canvas.Ref) {
	r := capRecord{id: ref.ID}
	switch ref.Kind {
	case canvas.KindNode:
		r.kind, r.node = recNode, s.Nodes[ref.ID]
	case canvas.KindEdge:
		r.kind, r.edge = recEdge, s.Edges[ref.ID]
	default:
		return
	}
	r.tomb, r.hasTomb = s.Tombstones[ref]
	c.recs = append(c.recs, r)
}

// CaptureWhole captures the whole of s (a snapshot with base 0). It costs
// O(entities), pointers only.
func CaptureWhole(s *canvas.State) *SnapshotCapture {
	c := &SnapshotCapture{rev: s.Rev, recs: make([]capRecord, 0, len(s.Nodes)+len(s.Edges)+len(s.Tombstones)+len(s.History))}
	for id := range s.Nodes {
		c.addEntity(s, canvas.Ref{Kind: canvas.KindNode, ID: id})
	}
	for id := range s.Edges {
		c.addEntity(s, canvas.Ref{Kind: canvas.KindEdge, ID: id})
	}
	for ref := range s.Tombstones {
		if _, live := s.Nodes[ref.ID]; ref.Kind == canvas.KindNode && live {
			continue // captured with its node
		}
		if _, live := s.Edges[ref.ID]; ref.Kind == canvas.KindEdge && live {
			continue
		}
		c.addEntity(s, ref)
	}
	for id, h := range s.History {
		c.recs = append(c.recs, capRecord{kind: recHistory, id: id, hist: h})
	}
	return c
}

// Rev returns the revision the capture is the state of.
func (c *SnapshotCapture) Rev() int64 { return c.rev }

// Records returns how many records the capture holds.
func (c *SnapshotCapture) Records() int { return len(c.recs) }

// Encode encodes the capture (see the format above).
func (c *SnapshotCapture) Encode() ([]byte, error) {
	slices.SortFunc(c.recs, func(a, b capRecord) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return strings.Compare(a.id, b.id)
	})
	b := make([]byte, 0, 64+len(c.recs)*128)
	b = append(b, snapshotMagic...)
	b = binary.AppendVarint(b, c.rev)
	b = binary.AppendVarint(b, c.base)
	b = binary.AppendUvarint(b, uint64(len(c.recs)))
	var val []byte
	for i := range c.recs {
		r := &c.recs[i]
		b = append(b, r.kind)
		b = appendString(b, r.id)
		var flags byte
		var err error
		val = val[:0]
		switch {
		case r.node != nil:
			flags = hasValue
			val, err = appendNode(val, r.node)
		case r.edge != nil:
			flags = hasValue
			val, err = appendEdge(val, r.edge)
		case r.hist != nil:
			flags = hasValue
			val, err = json.Marshal(r.hist)
		}
		if err != nil {
			return nil, fmt.Errorf("reducer: encode state at rev %d: %s %q: %v: %w", c.rev, string(r.kind), r.id, err, canvas.ErrInvalid)
		}
		if r.hasTomb {
			flags |= hasTomb
		}
		b = append(b, flags)
		if r.hasTomb {
			b = binary.AppendVarint(b, r.tomb)
		}
		if flags&hasValue != 0 {
			b = binary.AppendUvarint(b, uint64(len(val)))
			b = append(b, val...)
		}
	}
	return b, nil
}

// EncodeState encodes the whole of s as a snapshot with base 0. The encoding
// is deterministic.
func EncodeState(s *canvas.State) ([]byte, error) { return CaptureWhole(s).Encode() }

// SnapshotHeader returns a snapshot's revision, its base (0: whole) and
// how many records it holds; malformed data is an error wrapping
// canvas.ErrInvalid.
func SnapshotHeader(data []byte) (rev, base int64, records int, err error) {
	r := snapReader{s: string(data[:min(len(data), 64)]), size: len(data)}
	rev, base, records = r.header()
	return rev, base, records, r.err
}

// DecodeState decodes a whole snapshot, or a chain of them oldest first (a
// whole one, then deltas each based on the one before: see MergeSnapshots).
// Malformed data, a delta without its base, a duplicate or misordered id or
// an unknown record kind is an error wrapping canvas.ErrInvalid.
//
// It stays one function over 100 lines because it reads the format's
// sections in their order with one reader whose error and position every
// step shares; split, each part would take and return that state, and the
// format would no longer read top to bottom in one place.
func DecodeState(chain ...[]byte) (*canvas.State, error) {
	data, err := MergeSnapshots(chain...)
	if err != nil {
		return nil, err
	}
	// One string holds every string of the state (ids, names, props), so
	// decoding allocates none of them.
	r := snapReader{s: string(data)}
	rev, base, count := r.header()
	if r.err == nil && base != 0 {
		r.fail("a delta (base %d) without the snapshots before it", base)
	}
	s := &canvas.State{Rev: rev}
	nodes, edges := 0, 0
	for i := 0; i < count && r.err == nil; i++ {
		switch r.peekKind() {
		case recNode:
			nodes++
		case recEdge:
			edges++
		}
		r.skipRecord()
	}
	if r.err != nil {
		return nil, r.err
	}
	s.Nodes = make(map[string]*canvas.Node, nodes)
	s.Edges = make(map[string]*canvas.Edge, edges)
	s.Tombstones = map[canvas.Ref]int64{}
	r = snapReader{s: r.s}
	r.header()
	var prevKind byte
	var prevID string
	for i := 0; i < count && r.err == nil; i++ {
		kind := r.byte()
		id := r.string()
		if i > 0 && (kind < prevKind || kind == prevKind && id <= prevID) {
			r.fail("record %s %q is out of order or repeated", string(kind), id)
		}
		prevKind, prevID = kind, id
		flags := r.byte()
		var tomb int64
		if flags&hasTomb != 0 {
			tomb = r.varint()
		}
		var val string
		if flags&hasValue != 0 {
			val = r.string()
		}
		if r.err != nil {
			break
		}
		switch kind {
		case recNode:
			if flags&hasValue != 0 {
				vr := snapReader{s: val}
				n := vr.node(id)
				r.adopt(&vr)
				s.Nodes[id] = n
			}
			if flags&hasTomb != 0 {
				s.Tombstones[canvas.Ref{Kind: canvas.KindNode, ID: id}] = tomb
			}
		case recEdge:
			if flags&hasValue != 0 {
				vr := snapReader{s: val}
				e := vr.edge(id)
				r.adopt(&vr)
				s.Edges[id] = e
			}
			if flags&hasTomb != 0 {
				s.Tombstones[canvas.Ref{Kind: canvas.KindEdge, ID: id}] = tomb
			}
		case recHistory:
			if flags&hasValue == 0 {
				continue
			}
			var h canvas.ActorHistory
			if err := canvas.UnmarshalExact([]byte(val), &h); err != nil {
				r.fail("history of %q: %v", id, err)
				break
			}
			for _, stack := range [][]canvas.HistoryEntry{h.Undo, h.Redo} {
				for _, e := range stack {
					canvas.NormalizePatchNumbers(e.Inverse)
				}
			}
			if s.History == nil {
				s.History = canvas.History{}
			}
			s.History[id] = &h
		default:
			r.fail("unknown record kind %q", kind)
		}
	}
	if r.err == nil && r.i != len(r.s) {
		r.fail("%d bytes of trailing data", len(r.s)-r.i)
	}
	if r.err != nil {
		return nil, r.err
	}
	s.IndexEdges()
	return s, nil
}

// MergeSnapshots merges a chain of snapshots, oldest first, in which each
// delta's base is the revision of the snapshot before it, into one snapshot
// at the last one's revision with the first one's base. Of the records of
// one entity or history the newest wins; merged into a whole snapshot
// (base 0), the records of what is gone are dropped. Values are copied as
// they are, never decoded. One snapshot is returned as is.
func MergeSnapshots(chain ...[]byte) ([]byte, error) {
	if len(chain) == 0 {
		return nil, fmt.Errorf("reducer: merge snapshots: none: %w", canvas.ErrInvalid)
	}
	if len(chain) == 1 {
		return chain[0], nil
	}
	curs := make([]*mergeCursor, 0, len(chain))
	var firstBase, lastRev int64
	total := 0
	for i, data := range chain {
		c := &mergeCursor{r: snapReader{s: string(data)}, age: i}
		rev, base, count := c.r.header()
		if c.r.err != nil {
			return nil, c.r.err
		}
		switch {
		case i == 0:
			firstBase = base
		case base != lastRev:
			return nil, fmt.Errorf("reducer: merge snapshots: snapshot %d is based on rev %d, not on rev %d before it: %w", i, base, lastRev, canvas.ErrInvalid)
		}
		lastRev = rev
		c.left = count
		total += count
		if c.next() {
			curs = append(curs, c)
		} else if c.r.err != nil {
			return nil, c.r.err
		}
	}
	recs := make([]string, 0, total)
	size := 0
	h := mergeHeap(curs)
	h.init()
	for len(h) > 0 {
		top := h[0]
		kind, id, rec, flags := top.kind, top.id, top.rec, top.flags
		// Advance every cursor at this key; the newest (greatest age) wins.
		for len(h) > 0 && h[0].kind == kind && h[0].id == id {
			c := h[0]
			if c.age > top.age {
				top, rec, flags = c, c.rec, c.flags
			}
			if c.next() {
				h.fix(0)
			} else {
				if c.r.err != nil {
					return nil, c.r.err
				}
				h.pop()
			}
		}
		if flags == 0 && firstBase == 0 {
			continue
		}
		recs = append(recs, rec)
		size += len(rec)
	}
	b := make([]byte, 0, 32+size)
	b = append(b, snapshotMagic...)
	b = binary.AppendVarint(b, lastRev)
	b = binary.AppendVarint(b, firstBase)
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, rec := range recs {
		b = append(b, rec...)
	}
	return b, nil
}

// mergeCursor walks the records of one snapshot of a chain.
type mergeCursor struct {
	r     snapReader
	age   int // index in the chain: greater is newer
	left  int
	kind  byte
	id    string
	flags byte
	rec   string // the whole current record
}

// next moves to the next record; false at the end or on an error (r.err).
func (c *mergeCursor) next() bool {
	if c.left == 0 {
		if c.r.err == nil && c.r.i != len(c.r.s) {
			c.r.fail("%d bytes of trailing data", len(c.r.s)-c.r.i)
		}
		return false
	}
	c.left--
	start := c.r.i
	kind := c.r.byte()
	id := c.r.string()
	if c.rec != "" && (kind < c.kind || kind == c.kind && id <= c.id) {
		c.r.fail("record %s %q is out of order or repeated", string(kind), id)
	}
	c.kind, c.id = kind, id
	c.flags = c.r.byte()
	if c.flags&hasTomb != 0 {
		c.r.varint()
	}
	if c.flags&hasValue != 0 {
		c.r.string()
	}
	c.rec = c.r.s[start:c.r.i]
	return c.r.err == nil
}

// mergeHeap is a min-heap of cursors by (kind, id), then newest first.
type mergeHeap []*mergeCursor

func (h mergeHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.id != b.id {
		return a.id < b.id
	}
	return a.age > b.age
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h mergeHeap) fix(i int) { h.down(i) }

func (h *mergeHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
}

func (h mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// ---- binary values ----

// Value tags of props (JSON-shaped values).
const (
	tagNull = iota
	tagFalse
	tagTrue
	tagFloat  // 8 bytes, IEEE 754 bits
	tagString // string
	tagArray  // count:uvarint value{count}
	tagObject // count:uvarint (key:string value){count}, keys ascending
	tagNumber // json.Number: string
	tagJSON   // any other Go value, as JSON text (decoded as encoding/json would)
)

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// appendNode encodes every field of n but its id (the record's).
func appendNode(b []byte, n *canvas.Node) ([]byte, error) {
	for _, s := range [...]string{n.Type, n.Name, n.ParentID, n.Index, n.CreatedBy, n.UpdatedBy} {
		b = appendString(b, s)
	}
	for _, f := range [...]float64{n.X, n.Y, n.W, n.H, n.Rotation} {
		b = appendFloat(b, f)
	}
	b = binary.AppendVarint(b, n.CreatedRev)
	b = binary.AppendVarint(b, n.UpdatedRev)
	return appendProps(b, n.Props)
}

// appendEdge encodes every field of e but its id (the record's).
func appendEdge(b []byte, e *canvas.Edge) ([]byte, error) {
	for _, s := range [...]string{e.From, e.To, e.Type, e.CreatedBy} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, e.CreatedRev)
	b = binary.AppendVarint(b, e.UpdatedRev)
	return appendProps(b, e.Props)
}

func appendProps(b []byte, p map[string]any) ([]byte, error) {
	if p == nil {
		return append(b, tagNull), nil
	}
	return appendValue(b, p)
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, tagNull), nil
	case bool:
		if t {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case float64:
		return appendFloat(append(b, tagFloat), t), nil
	case string:
		return appendString(append(b, tagString), t), nil
	case canvas.DocText:
		return appendString(append(b, tagString), t.String()), nil
	case json.Number:
		return appendString(append(b, tagNumber), string(t)), nil
	case []any:
		b = binary.AppendUvarint(append(b, tagArray), uint64(len(t)))
		for _, x := range t {
			var err error
			if b, err = appendValue(b, x); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]any:
		b = binary.AppendUvarint(append(b, tagObject), uint64(len(t)))
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendString(b, k)
			var err error
			if b, err = appendValue(b, t[k]); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return appendString(append(b, tagJSON), string(j)), nil
}

// snapReader decodes from s; the first error sticks (later reads return zero values).
type snapReader struct {
	s    string
	i    int
	err  error
	size int // of the whole snapshot when s is only its start (SnapshotHeader)
}

func (r *snapReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("reducer: decode state: %s: %w", fmt.Sprintf(format, args...), canvas.ErrInvalid)
	}
	r.i = len(r.s)
}

// adopt takes the error of a reader of a nested value.
func (r *snapReader) adopt(o *snapReader) {
	if o.err != nil && r.err == nil {
		r.err = o.err
		r.i = len(r.s)
	}
}

func (r *snapReader) header() (rev, base int64, count int) {
	if !strings.HasPrefix(r.s, snapshotMagic) {
		r.fail("not a snapshot (no %q header)", snapshotMagic)
		return 0, 0, 0
	}
	r.i = len(snapshotMagic)
	rev, base = r.varint(), r.varint()
	n := r.uvarint()
	size := max(r.size, len(r.s))
	if r.err == nil && (rev < 0 || base < 0 || base >= rev && rev > 0 || n > uint64(size-r.i)/3) {
		r.fail("bad header (rev %d, base %d, %d records)", rev, base, n)
	}
	return rev, base, int(n)
}

func (r *snapReader) byte() byte {
	if r.i >= len(r.s) {
		r.fail("truncated")
		return 0
	}
	c := r.s[r.i]
	r.i++
	return c
}

func (r *snapReader) peekKind() byte {
	if r.i >= len(r.s) {
		return 0
	}
	return r.s[r.i]
}

func (r *snapReader) uvarint() uint64 {
	var x uint64
	for shift := uint(0); ; shift += 7 {
		if r.i >= len(r.s) || shift > 63 {
			r.fail("truncated or overlong number")
			return 0
		}
		c := r.s[r.i]
		r.i++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
}

func (r *snapReader) varint() int64 {
	u := r.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (r *snapReader) string() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.s)-r.i) {
		r.fail("truncated string")
		return ""
	}
	s := r.s[r.i : r.i+int(n)]
	r.i += int(n)
	return s
}

func (r *snapReader) float() float64 {
	if len(r.s)-r.i < 8 {
		r.fail("truncated number")
		return 0
	}
	u := uint64(0)
	for k := 7; k >= 0; k-- {
		u = u<<8 | uint64(r.s[r.i+k])
	}
	r.i += 8
	return math.Float64frombits(u)
}

// skipRecord moves past one record.
func (r *snapReader) skipRecord() {
	r.byte()
	r.string()
	flags := r.byte()
	if flags&hasTomb != 0 {
		r.varint()
	}
	if flags&hasValue != 0 {
		r.string()
	}
}

func (r *snapReader) node(id string) *canvas.Node {
	n := &canvas.Node{ID: id}
	n.Type, n.Name, n.ParentID, n.Index, n.CreatedBy, n.UpdatedBy = r.string(), r.string(), r.string(), r.string(), r.string(), r.string()
	n.X, n.Y, n.W, n.H, n.Rotation = r.float(), r.float(), r.float(), r.float(), r.float()
	n.CreatedRev, n.UpdatedRev = r.varint(), r.varint()
	n.Props = r.props()
	r.end()
	normalizeDocNode(n) // doc texts are kept as canvas.DocText, as Apply keeps them
	return n
}

func (r *snapReader) edge(id string) *canvas.Edge {
	e := &canvas.Edge{ID: id}
	e.From, e.To, e.Type, e.CreatedBy = r.string(), r.string(), r.string(), r.string()
	e.CreatedRev, e.UpdatedRev = r.varint(), r.varint()
	e.Props = r.props()
	r.end()
	return e
}

// end fails unless the whole value was read.
func (r *snapReader) end() {
	if r.err == nil && r.i != len(r.s) {
		r.fail("%d stray bytes after a value", len(r.s)-r.i)
	}
}

func (r *snapReader) props() map[string]any {
	if r.peekKind() == tagNull {
		r.i++
		return nil
	}
	if r.peekKind() != tagObject {
		r.fail("props are not an object")
		return nil
	}
	m, _ := r.value(0).(map[string]any)
	return m
}

// maxValueDepth bounds the nesting of decoded values.
const maxValueDepth = 1000

func (r *snapReader) value(depth int) any {
	if depth > maxValueDepth {
		r.fail("values nested more than %d levels", maxValueDepth)
		return nil
	}
	switch tag := r.byte(); tag {
	case tagNull:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagFloat:
		return r.float()
	case tagString:
		return r.string()
	case tagNumber:
		return json.Number(r.string())
	case tagArray:
		n := r.uvarint()
		if n > uint64(len(r.s)-r.i) {
			r.fail("truncated array")
			return nil
		}
		a := make([]any, n)
		for k := range a {
			a[k] = r.value(depth + 1)
		}
		return a
	case tagObject:
		n := r.uvarint()
		if n > uint64(len(r.s)-r.i)/2 {
			r.fail("truncated object")
			return nil
		}
		m := make(map[string]any, n)
		prev := ""
		for k := uint64(0); k < n && r.err == nil; k++ {
			key := r.string()
			if k > 0 && key <= prev {
				r.fail("object key %q is out of order or repeated", key)
			}
			prev = key
			m[key] = r.value(depth + 1)
		}
		return m
	case tagJSON:
		var v any
		if err := canvas.UnmarshalExact([]byte(r.string()), &v); err != nil {
			r.fail("%v", err)
		}
		return v
	default:
		r.fail("unknown value tag %d", tag)
		return nil
	}
}
