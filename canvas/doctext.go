package canvas

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// DocText is an immutable text stored as chunks that end at line breaks, so
// that a line splice costs O(edit + chunk) instead of copying the whole text.
// It is the in-memory form of props.text of "doc" nodes; on the wire and in
// stored snapshots it is exactly the JSON string of its text (MarshalJSON),
// so no format changes.
//
// The chunking is a function of the content alone (a chunk ends after a line
// chosen by a hash of that line, about every 4 KiB): two DocTexts holding the
// same text have identical chunks, so reflect.DeepEqual on states that hold
// DocTexts compares texts. The zero DocText is the empty text. Copies share
// their (never modified) chunks. A text made of one line repeated is a
// degenerate case: one chunk, or one chunk per line, as that line's hash
// decides; edits then cost O(text) again (as a plain string would).
type DocText struct {
	t *docText
}

type docText struct {
	chunks []string // no empty chunk; each but the last ends with '\n'
	ends   []int    // ends[i]: byte offset just past chunks[i]
	nls    []int    // nls[i]: number of '\n' in chunks[0..i]
}

// docChunkTarget is the mean chunk size the boundary hash aims at.
const docChunkTarget = 4096

// NewDocText returns s as a DocText.
func NewDocText(s string) DocText {
	if s == "" {
		return DocText{}
	}
	t := &docText{}
	t.appendChunked(s, 0, 0)
	return DocText{t}
}

// PropText returns the text held by a prop value: a string or a DocText. ok
// is false for any other value (nil included). Every reader of a text prop
// that may belong to a doc node goes through PropText (or the reducer's
// DocText) instead of a string type assertion.
func PropText(v any) (text string, ok bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case DocText:
		return t.String(), true
	}
	return "", false
}

// isBoundary reports whether a chunk ends after line (which includes its
// terminator): with probability min(len, target)/target, decided by a hash
// of the line's bytes, so chunks average about target bytes whatever the
// line lengths.
func isBoundary(line string) bool {
	if len(line) >= docChunkTarget {
		return true
	}
	const m = 0x9E3779B97F4A7C15
	h := uint64(len(line)) * m
	i := 0
	for ; i+8 <= len(line); i += 8 {
		v := uint64(line[i]) | uint64(line[i+1])<<8 | uint64(line[i+2])<<16 | uint64(line[i+3])<<24 |
			uint64(line[i+4])<<32 | uint64(line[i+5])<<40 | uint64(line[i+6])<<48 | uint64(line[i+7])<<56
		h = (h ^ v) * m
		h ^= h >> 29
	}
	for ; i < len(line); i++ {
		h = (h ^ uint64(line[i])) * m
	}
	h ^= h >> 32
	h *= m
	h ^= h >> 29
	return h%docChunkTarget < uint64(len(line))
}

// appendChunked appends s, which starts at a chunk boundary, as chunks;
// off and nl are the byte offset and newline count before s. The last chunk
// made ends at the end of s whether or not a boundary is there.
func (t *docText) appendChunked(s string, off, nl int) {
	start, cnl := 0, 0
	for pos := 0; pos < len(s); {
		i := strings.IndexByte(s[pos:], '\n')
		next := len(s)
		if i >= 0 {
			next = pos + i + 1
			cnl++
		}
		if next == len(s) || isBoundary(s[pos:next]) {
			t.chunks = append(t.chunks, s[start:next])
			t.ends = append(t.ends, off+next)
			t.nls = append(t.nls, nl+cnl)
			start = next
		}
		pos = next
	}
}

// Len returns the length of the text in bytes.
func (d DocText) Len() int {
	if d.t == nil || len(d.t.ends) == 0 {
		return 0
	}
	return d.t.ends[len(d.t.ends)-1]
}

// Newlines returns the number of '\n' bytes in the text.
func (d DocText) Newlines() int {
	if d.t == nil || len(d.t.nls) == 0 {
		return 0
	}
	return d.t.nls[len(d.t.nls)-1]
}

// String returns the text. It costs a copy of the whole text (but for a
// text of one chunk); readers that need a line or a range use Slice.
func (d DocText) String() string {
	if d.t == nil {
		return ""
	}
	if len(d.t.chunks) == 1 {
		return d.t.chunks[0]
	}
	var b strings.Builder
	b.Grow(d.Len())
	for _, c := range d.t.chunks {
		b.WriteString(c)
	}
	return b.String()
}

// LastByte returns the last byte of the text, or 0 when it is empty.
func (d DocText) LastByte() byte {
	if d.Len() == 0 {
		return 0
	}
	c := d.t.chunks[len(d.t.chunks)-1]
	return c[len(c)-1]
}

// chunkAt returns the index of the chunk holding byte off (0 ≤ off < Len).
func (d DocText) chunkAt(off int) int {
	return sort.Search(len(d.t.ends), func(i int) bool { return d.t.ends[i] > off })
}

func (d DocText) chunkStart(i int) int {
	if i == 0 {
		return 0
	}
	return d.t.ends[i-1]
}

// NewlineOffset returns the byte offset just past the k-th '\n' of the text
// (k ≥ 1), or false when the text has fewer. It costs a binary search and a
// scan of one chunk.
func (d DocText) NewlineOffset(k int) (int, bool) {
	if k < 1 || k > d.Newlines() {
		return 0, false
	}
	i := sort.SearchInts(d.t.nls, k) // first chunk whose cumulative count reaches k
	need := k
	if i > 0 {
		need -= d.t.nls[i-1]
	}
	c := d.t.chunks[i]
	pos := 0
	const block = 256 // skip whole blocks by counting (vectorised) before scanning lines
	for pos+block <= len(c) {
		k := strings.Count(c[pos:pos+block], "\n")
		if k >= need {
			break
		}
		need -= k
		pos += block
	}
	for ; need > 0; need-- {
		pos += strings.IndexByte(c[pos:], '\n') + 1
	}
	return d.chunkStart(i) + pos, true
}

// Slice returns the text's bytes [from, to) (0 ≤ from ≤ to ≤ Len). The
// result does not share memory with the text unless it lies in one chunk.
func (d DocText) Slice(from, to int) string {
	if from >= to {
		return ""
	}
	i := d.chunkAt(from)
	if to <= d.t.ends[i] {
		s := d.chunkStart(i)
		return d.t.chunks[i][from-s : to-s]
	}
	return string(d.AppendSlice(make([]byte, 0, to-from), from, to))
}

// AppendSlice appends the text's bytes [from, to) to b.
func (d DocText) AppendSlice(b []byte, from, to int) []byte {
	if from >= to {
		return b
	}
	for i := d.chunkAt(from); i < len(d.t.chunks) && from < to; i++ {
		s := d.chunkStart(i)
		e := min(d.t.ends[i], to)
		b = append(b, d.t.chunks[i][from-s:e-s]...)
		from = e
	}
	return b
}

// TextSplice replaces the bytes [Start, End) of a text by Ins.
type TextSplice struct {
	Start, End int
	Ins        string
}

// Splice returns the text with the splices applied; they are in ascending
// order, do not overlap, and 0 ≤ Start ≤ End ≤ Len. Chunks the splices do
// not reach are shared with d. The cost is that of the splices plus a copy
// of the chunks they touch, a hash of the lines they write, and an index of
// one entry per chunk; untouched lines keep their (content-defined) chunk
// boundaries without being read.
func (d DocText) Splice(sp []TextSplice) DocText {
	if len(sp) == 0 {
		return d
	}
	if d.Len() == 0 {
		var b strings.Builder
		for _, s := range sp {
			b.WriteString(s.Ins)
		}
		return NewDocText(b.String())
	}
	old := d.t
	n := len(old.chunks)
	t := &docText{chunks: make([]string, 0, n+4), ends: make([]int, 0, n+4), nls: make([]int, 0, n+4)}
	next := 0 // first old chunk not yet emitted nor in the open region
	// The open region replaces old chunks [its first, rend]; r.buf holds its
	// new text up to old offset rpos.
	var r region
	open, rpos, rend := false, 0, 0
	copyOld := func(to int) { // appends old bytes [rpos, to)
		if to <= rpos {
			return
		}
		base := len(r.buf) - rpos
		r.buf = d.AppendSlice(r.buf, rpos, to)
		for k := d.chunkAt(rpos); k < n-1 && old.ends[k] <= to; k++ {
			r.oldCuts = append(r.oldCuts, base+old.ends[k]) // an untouched boundary line, unless a splice joins it
		}
		if to == d.Len() { // the old last line may no longer end the text: decide it by its hash
			r.dirty = append(r.dirty, [2]int{len(r.buf) - 1, len(r.buf)})
		}
		rpos = to
	}
	// closeOrExtend finishes the region when it ends at a chunk boundary of
	// the new text (a boundary line, or the end of the text); otherwise it
	// takes in the next old chunk.
	closeOrExtend := func() bool {
		copyOld(old.ends[rend])
		if rend+1 < n && len(r.buf) > 0 && !r.endsAtBoundary() {
			rend++
			return false
		}
		r.emit(t)
		open, next = false, rend+1
		return true
	}
	for _, s := range sp {
		a := n - 1
		if s.Start < d.Len() {
			a = d.chunkAt(s.Start)
		}
		b := a
		if s.End > s.Start {
			b = d.chunkAt(s.End - 1)
		}
		for open && a > rend && !closeOrExtend() {
		}
		if !open {
			for i := next; i < a; i++ {
				t.push(old.chunks[i], old.nls[i]-d.nlsBefore(i))
			}
			r.reset(old.ends[b] - d.chunkStart(a) + len(s.Ins) + 512)
			open, rpos, rend = true, d.chunkStart(a), a
		}
		copyOld(s.Start)
		ds := len(r.buf)
		r.buf = append(r.buf, s.Ins...)
		r.dirty = append(r.dirty, [2]int{ds, len(r.buf)})
		rpos = s.End
		rend = max(rend, b)
	}
	for !closeOrExtend() {
	}
	for i := next; i < n; i++ {
		t.push(old.chunks[i], old.nls[i]-d.nlsBefore(i))
	}
	if len(t.chunks) == 0 {
		return DocText{}
	}
	return DocText{t}
}

// region is the new text of a run of chunks a Splice rewrites.
type region struct {
	buf     []byte
	dirty   [][2]int // byte ranges of buf written by splices: lines meeting them are new
	oldCuts []int    // offsets in buf just past old boundary lines copied unchanged
}

// reset starts a new region of about size bytes.
func (r *region) reset(size int) {
	r.buf, r.dirty, r.oldCuts = make([]byte, 0, size), r.dirty[:0], r.oldCuts[:0]
}

// lineStartBefore returns the start of the line holding byte p-1 (p > 0).
func (r *region) lineStartBefore(p int) int {
	return bytes.LastIndexByte(r.buf[:p-1], '\n') + 1
}

// isDirty reports whether the line [ls, q) of buf meets a written range: it
// overlaps a non-empty one, or an empty one (a deletion) falls inside it.
func (r *region) isDirty(ls, q int) bool {
	for _, d := range r.dirty {
		if q > d[0] && (ls < d[1] && d[0] < d[1] || ls < d[0]) {
			return true
		}
	}
	return false
}

// endsAtBoundary reports whether buf (not empty) ends with a boundary line.
func (r *region) endsAtBoundary() bool {
	q := len(r.buf)
	if r.buf[q-1] != '\n' {
		return false
	}
	ls := r.lineStartBefore(q)
	if r.isDirty(ls, q) {
		return isBoundary(string(r.buf[ls:q]))
	}
	// An untouched line: a boundary when it ended an old chunk.
	for i := len(r.oldCuts) - 1; i >= 0; i-- {
		if r.oldCuts[i] == q {
			return true
		}
	}
	return false
}

// emit appends buf to t as chunks: cut after the untouched old boundary
// lines and after the new lines whose hash makes them boundaries.
func (r *region) emit(t *docText) {
	if len(r.buf) == 0 {
		return
	}
	cuts := make([]int, 0, len(r.oldCuts)+4)
	for _, p := range r.oldCuts {
		if p < len(r.buf) && !r.isDirty(r.lineStartBefore(p), p) {
			cuts = append(cuts, p)
		}
	}
	for _, d := range r.dirty {
		limit := d[1]
		if d[0] == d[1] {
			limit = d[0]
		}
		pos := 0
		if d[0] > 0 {
			pos = bytes.LastIndexByte(r.buf[:d[0]], '\n') + 1
		}
		for pos < len(r.buf) && pos < limit {
			i := bytes.IndexByte(r.buf[pos:], '\n')
			if i < 0 {
				break
			}
			q := pos + i + 1
			if q < len(r.buf) && isBoundary(string(r.buf[pos:q])) {
				cuts = append(cuts, q)
			}
			pos = q
		}
	}
	sort.Ints(cuts)
	s := string(r.buf)
	off, nl := t.tail()
	from := 0
	for _, c := range append(cuts, len(s)) {
		if c <= from {
			continue
		}
		piece := s[from:c]
		nl += strings.Count(piece, "\n")
		t.chunks = append(t.chunks, piece)
		t.ends = append(t.ends, off+c)
		t.nls = append(t.nls, nl)
		from = c
	}
}

// tail returns the byte offset and newline count at the end of t.
func (t *docText) tail() (off, nl int) {
	if len(t.ends) == 0 {
		return 0, 0
	}
	return t.ends[len(t.ends)-1], t.nls[len(t.nls)-1]
}

// push appends chunk c holding nl newlines.
func (t *docText) push(c string, nl int) {
	off, cnl := t.tail()
	t.chunks = append(t.chunks, c)
	t.ends = append(t.ends, off+len(c))
	t.nls = append(t.nls, cnl+nl)
}

// nlsBefore returns the newline count of the chunks before chunk i.
func (d DocText) nlsBefore(i int) int {
	if i == 0 {
		return 0
	}
	return d.t.nls[i-1]
}

// MarshalJSON encodes the text as a JSON string, byte for byte what
// encoding/json writes for the same text held in a string.
func (d DocText) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(d.Len() + d.Len()/16 + 2)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the outer encoder re-escapes HTML when it does so for strings
	if err := enc.Encode(d.String()); err != nil {
		return nil, err
	}
	out := b.Bytes()
	return out[:len(out)-1], nil // Encode's newline
}
