package render

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sort"

	"golang.org/x/image/font/sfnt"
)

// subsetTrueType returns a copy of the TrueType font data in which only the
// glyphs in keep have outlines, with .notdef and the components of kept
// composite glyphs; every other glyph is empty. Glyph indices, the character
// map, the metrics and the other tables stay as they are, so the copy draws
// the kept glyphs exactly as the font does: it is what an SVG embeds for the
// text it shows, a small part of the font's size. Two tables are left out:
// glyph substitutions (GSUB, morx), which could replace a kept glyph by an
// emptied one and which the renderer's own layout does not apply either,
// and the digital signature (DSIG), which no longer matches. An error means
// data is not a TrueType font subsetTrueType can read; the caller embeds the
// whole font then.
func subsetTrueType(data []byte, keep map[sfnt.GlyphIndex]bool) ([]byte, error) {
	f, err := readTables(data)
	if err != nil {
		return nil, err
	}
	head, maxp, loca, glyf := f.table("head"), f.table("maxp"), f.table("loca"), f.table("glyf")
	if len(head) < 54 || len(maxp) < 6 || loca == nil || glyf == nil {
		return nil, errors.New("not a TrueType font with glyph outlines (head, maxp, loca, glyf)")
	}
	n := int(binary.BigEndian.Uint16(maxp[4:]))
	offsets, err := glyphOffsets(loca, n, int16(binary.BigEndian.Uint16(head[50:])) == 1, len(glyf))
	if err != nil {
		return nil, err
	}
	// The glyphs kept: those asked for, .notdef, and every component of a
	// kept composite glyph (components may be composite too).
	kept := make([]bool, n)
	var queue []int
	add := func(g int) {
		if g < n && !kept[g] {
			kept[g] = true
			queue = append(queue, g)
		}
	}
	add(0)
	for g := range keep {
		add(int(g))
	}
	for len(queue) > 0 {
		g := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		components(glyf[offsets[g]:offsets[g+1]], add)
	}
	// The new glyf and its long offsets.
	var newGlyf []byte
	newLoca := make([]byte, 4*(n+1))
	for g := 0; g < n; g++ {
		binary.BigEndian.PutUint32(newLoca[4*g:], uint32(len(newGlyf)))
		if kept[g] {
			newGlyf = append(newGlyf, glyf[offsets[g]:offsets[g+1]]...)
			for len(newGlyf)%4 != 0 {
				newGlyf = append(newGlyf, 0)
			}
		}
	}
	binary.BigEndian.PutUint32(newLoca[4*n:], uint32(len(newGlyf)))
	newHead := append([]byte(nil), head...)
	binary.BigEndian.PutUint16(newHead[50:], 1) // long offsets
	out := tableSet{}
	for _, t := range f {
		switch t.tag {
		case "GSUB", "morx", "mort", "DSIG":
		case "head":
			out = append(out, fontTable{t.tag, newHead})
		case "loca":
			out = append(out, fontTable{t.tag, newLoca})
		case "glyf":
			out = append(out, fontTable{t.tag, newGlyf})
		default:
			out = append(out, t)
		}
	}
	return out.write(binary.BigEndian.Uint32(data)), nil
}

// glyphOffsets reads loca: n+1 offsets into a glyf table of glyfLen bytes,
// each checked to be in order and within it.
func glyphOffsets(loca []byte, n int, long bool, glyfLen int) ([]int, error) {
	size := 2
	if long {
		size = 4
	}
	if len(loca) < size*(n+1) {
		return nil, fmt.Errorf("loca holds %d bytes, %d glyphs need %d", len(loca), n, size*(n+1))
	}
	offsets := make([]int, n+1)
	for g := range offsets {
		if long {
			offsets[g] = int(binary.BigEndian.Uint32(loca[4*g:]))
		} else {
			offsets[g] = 2 * int(binary.BigEndian.Uint16(loca[2*g:]))
		}
		if offsets[g] > glyfLen || g > 0 && offsets[g] < offsets[g-1] {
			return nil, fmt.Errorf("glyph %d's offset %d is out of order or beyond glyf", g, offsets[g])
		}
	}
	return offsets, nil
}

// components calls add with each component glyph of a composite glyph's
// data (nothing for a simple or empty glyph).
func components(g []byte, add func(int)) {
	const (
		argsAreWords   = 0x0001
		haveScale      = 0x0008
		moreComponents = 0x0020
		haveXYScale    = 0x0040
		haveTwoByTwo   = 0x0080
	)
	if len(g) < 10 || int16(binary.BigEndian.Uint16(g)) >= 0 {
		return
	}
	for p := 10; p+4 <= len(g); {
		flags := binary.BigEndian.Uint16(g[p:])
		add(int(binary.BigEndian.Uint16(g[p+2:])))
		p += 4
		if flags&argsAreWords != 0 {
			p += 4
		} else {
			p += 2
		}
		switch {
		case flags&haveScale != 0:
			p += 2
		case flags&haveXYScale != 0:
			p += 4
		case flags&haveTwoByTwo != 0:
			p += 8
		}
		if flags&moreComponents == 0 {
			return
		}
	}
}

// fontTable is one table of an sfnt font file.
type fontTable struct {
	tag  string
	data []byte
}

// tableSet is a font file's tables in the order of its table directory.
type tableSet []fontTable

// readTables reads the table directory of a TrueType font file.
func readTables(data []byte) (tableSet, error) {
	if len(data) < 12 {
		return nil, errors.New("too short for a font file")
	}
	if v := binary.BigEndian.Uint32(data); v != 0x00010000 && v != 0x74727565 { // 1.0, "true"
		return nil, fmt.Errorf("not a TrueType font file (version %#x)", v)
	}
	num := int(binary.BigEndian.Uint16(data[4:]))
	if len(data) < 12+16*num {
		return nil, errors.New("the table directory is cut short")
	}
	ts := make(tableSet, 0, num)
	for i := range num {
		rec := data[12+16*i:]
		off, length := int(binary.BigEndian.Uint32(rec[8:])), int(binary.BigEndian.Uint32(rec[12:]))
		if off < 0 || length < 0 || off > len(data) || length > len(data)-off {
			return nil, fmt.Errorf("table %q lies beyond the file", rec[:4])
		}
		ts = append(ts, fontTable{string(rec[:4]), data[off : off+length]})
	}
	return ts, nil
}

func (ts tableSet) table(tag string) []byte {
	for _, t := range ts {
		if t.tag == tag {
			return t.data
		}
	}
	return nil
}

// write lays the tables out as a font file of the given sfnt version: the
// directory sorted by tag, each table 4-byte aligned with its checksum, and
// head's checksumAdjustment set for the whole file.
func (ts tableSet) write(version uint32) []byte {
	sort.Slice(ts, func(i, j int) bool { return ts[i].tag < ts[j].tag })
	num := len(ts)
	entrySelector := bits.Len(uint(num)) - 1
	searchRange := 16 << entrySelector
	size := 12 + 16*num
	for _, t := range ts {
		size += (len(t.data) + 3) &^ 3
	}
	out := make([]byte, 12+16*num, size)
	binary.BigEndian.PutUint32(out, version)
	binary.BigEndian.PutUint16(out[4:], uint16(num))
	binary.BigEndian.PutUint16(out[6:], uint16(searchRange))
	binary.BigEndian.PutUint16(out[8:], uint16(entrySelector))
	binary.BigEndian.PutUint16(out[10:], uint16(16*num-searchRange))
	headAt := -1
	for i, t := range ts {
		rec := out[12+16*i:]
		copy(rec, t.tag)
		if t.tag == "head" {
			headAt = len(out)
			t.data = append([]byte(nil), t.data...)
			binary.BigEndian.PutUint32(t.data[8:], 0) // checksumAdjustment, set below
		}
		binary.BigEndian.PutUint32(rec[4:], checksum(t.data))
		binary.BigEndian.PutUint32(rec[8:], uint32(len(out)))
		binary.BigEndian.PutUint32(rec[12:], uint32(len(t.data)))
		out = append(out, t.data...)
		for len(out)%4 != 0 {
			out = append(out, 0)
		}
	}
	if headAt >= 0 {
		binary.BigEndian.PutUint32(out[headAt+8:], 0xB1B0AFBA-checksum(out))
	}
	return out
}

// checksum is the sfnt checksum of b: the sum of its big-endian 32-bit
// words, the last one padded with zeros.
func checksum(b []byte) uint32 {
	var sum uint32
	for i := 0; i < len(b); i += 4 {
		var w [4]byte
		copy(w[:], b[i:])
		sum += binary.BigEndian.Uint32(w[:])
	}
	return sum
}
