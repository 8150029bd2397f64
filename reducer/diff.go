package reducer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// Diff formats.
const (
	DiffUnified = "unified"
	DiffSplit   = "split"
)

// Change types of a DiffChange.
const (
	ChangeAdd    = "add"
	ChangeDelete = "delete"
	ChangeModify = "modify"
)

// DiffChange is one changed line. Line is the line number in the new text for
// add and modify, and in the old text for delete; OldLine is the line number
// in the old text for modify and delete. Before is absent for add, After for
// delete. Contents carry no line terminator ("\n" or "\r\n"), as everywhere
// in the line model: a line whose terminator alone changed (LF to CRLF, or
// the final newline) is a modify with equal contents, and the unified diff
// shows the difference.
type DiffChange struct {
	Type    string  `json:"type"`
	Line    int     `json:"line"`
	OldLine int     `json:"old_line,omitempty"`
	Before  *string `json:"before,omitempty"`
	After   *string `json:"after,omitempty"`
}

// DocDiff is a line diff between two texts. Changes are in document order;
// a run of deleted lines followed by a run of added lines is paired line by
// line into modify changes, the rest stay delete or add.
//
// The unified Diff is exact, as diff -u writes it: every line is written
// with its own terminator (a CRLF line keeps its CR before the diff's line
// feed) and an unterminated last line is followed by "\ No newline at end of
// file", so applying it to the old text gives the new text byte for byte.
// The split Diff is for reading: lines without their terminators.
type DocDiff struct {
	HasChanges bool         `json:"has_changes"`
	Format     string       `json:"format"`
	Diff       string       `json:"diff"`
	Changes    []DiffChange `json:"changes"`
	Added      int          `json:"lines_added"`
	Deleted    int          `json:"lines_deleted"`
	Modified   int          `json:"lines_modified"`
}

// DiffOptions shape a DocDiff's text rendering.
type DiffOptions struct {
	Format   string // DiffUnified (default) or DiffSplit
	Context  int    // unchanged lines shown around each change (callers usually pass DefaultContext); < 0 is 0
	FromName string // header names of the unified diff (default "a" and "b")
	ToName   string
}

// DefaultContext is the number of context lines of a diff hunk.
const DefaultContext = 3

// lineOp is one line of an edit script: ' ' (equal), '-' (old only) or '+' (new only).
type lineOp struct {
	kind     byte
	old, new int    // 1-indexed line numbers in the old and new texts (0 when absent)
	text     string // the line's content, without its terminator
	eol      string // its terminator: "\n", "\r\n", or "" (the unterminated last line of its text)
}

// ParseDiffFormat validates a format name ("" is unified); a bad one is
// ErrInvalid (400) on field, as a bad query parameter is.
func ParseDiffFormat(field, s string) (string, error) {
	switch s {
	case "", DiffUnified:
		return DiffUnified, nil
	case DiffSplit:
		return DiffSplit, nil
	}
	return "", canvas.Invalid(field, "must be %q or %q, got %q", DiffUnified, DiffSplit, s)
}

// rawDiff is a run of whole lines (with their terminators) that are equal
// (' '), only in the old text ('-') or only in the new one ('+').
type rawDiff struct {
	kind byte
	text string
}

// lineDiffs diffs before and after in go-diff's line mode: every distinct
// line (terminator included) becomes one rune, go-diff's DiffMainRunes diffs
// the rune strings, and the runes map back to lines. This is
// DiffLinesToRunes → DiffMainRunes → DiffCharsToLines with a tokenizer that
// presizes its table and slices lines instead of copying them, plus trimming
// of common leading and trailing lines first.
func lineDiffs(before, after string) []rawDiff {
	a, b := splitKeep(before), splitKeep(after)
	// Common prefix and suffix lines need no diffing.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	q := 0
	for q < len(a)-p && q < len(b)-p && a[len(a)-1-q] == b[len(b)-1-q] {
		q++
	}
	var out []rawDiff
	if p > 0 {
		out = append(out, rawDiff{' ', strings.Join(a[:p], "")})
	}
	ma, mb := a[p:len(a)-q], b[p:len(b)-q]
	switch {
	case len(ma) == 0 && len(mb) == 0:
	case len(ma) == 0:
		out = append(out, rawDiff{'+', strings.Join(mb, "")})
	case len(mb) == 0:
		out = append(out, rawDiff{'-', strings.Join(ma, "")})
	default:
		out = append(out, diffMiddle(ma, mb)...)
	}
	if q > 0 {
		out = append(out, rawDiff{' ', strings.Join(a[len(a)-q:], "")})
	}
	return out
}

// maxLineRunes is the number of distinct lines the rune encoding can hold
// (every code point except the surrogates).
const maxLineRunes = 0x110000 - 0x800

func diffMiddle(a, b []string) []rawDiff {
	ids := make(map[string]rune, len(a)+len(b))
	var table []string
	encode := func(lines []string) []rune {
		rs := make([]rune, len(lines))
		for i, l := range lines {
			r, ok := ids[l]
			if !ok {
				n := len(table)
				r = rune(n)
				if n >= 0xD800 {
					r = rune(n + 0x800) // skip the surrogates: they are not valid runes
				}
				ids[l] = r
				table = append(table, l)
			}
			rs[i] = r
		}
		return rs
	}
	if len(a)+len(b) >= maxLineRunes { // too many distinct lines to encode: go-diff's own tokenizer
		dmp := diffmatchpatch.New()
		r1, r2, lines := dmp.DiffLinesToRunes(strings.Join(a, ""), strings.Join(b, ""))
		var out []rawDiff
		for _, d := range dmp.DiffCharsToLines(dmp.DiffMainRunes(r1, r2, false), lines) {
			out = append(out, rawDiff{diffKind(d.Type), d.Text})
		}
		return out
	}
	r1, r2 := encode(a), encode(b)
	diffs := diffmatchpatch.New().DiffMainRunes(r1, r2, false)
	out := make([]rawDiff, 0, len(diffs))
	var sb strings.Builder
	for _, d := range diffs {
		sb.Reset()
		for _, r := range d.Text {
			n := int(r)
			if n >= 0xD800 {
				n -= 0x800
			}
			sb.WriteString(table[n])
		}
		out = append(out, rawDiff{diffKind(d.Type), sb.String()})
	}
	return out
}

func diffKind(t diffmatchpatch.Operation) byte {
	switch t {
	case diffmatchpatch.DiffDelete:
		return '-'
	case diffmatchpatch.DiffInsert:
		return '+'
	}
	return ' '
}

// splitKeep splits text into lines that keep their terminators.
func splitKeep(text string) []string {
	out := make([]string, 0, strings.Count(text, "\n")+1)
	for pos := 0; pos < len(text); {
		i := strings.IndexByte(text[pos:], '\n')
		if i < 0 {
			out = append(out, text[pos:])
			break
		}
		out = append(out, text[pos:pos+i+1])
		pos += i + 1
	}
	return out
}

// lineScript diffs before and after line by line.
func lineScript(before, after string) []lineOp {
	ops := make([]lineOp, 0, LineCount(after)+8)
	o, n := 1, 1
	for _, d := range lineDiffs(before, after) {
		for pos := 0; pos < len(d.text); {
			content, next := lineAt(d.text, pos)
			op := lineOp{kind: d.kind, text: content, eol: d.text[pos+len(content) : next]}
			pos = next
			switch d.kind {
			case ' ':
				op.old, op.new = o, n
				o++
				n++
			case '-':
				op.old = o
				o++
			case '+':
				op.new = n
				n++
			}
			ops = append(ops, op)
		}
	}
	return ops
}

// Diff computes the line diff from before to after and renders it in
// opts.Format. Identical texts give HasChanges false, an empty Diff and no
// changes.
func Diff(before, after string, opts DiffOptions) DocDiff {
	format := opts.Format
	if format != DiffSplit {
		format = DiffUnified
	}
	out := DocDiff{Format: format, Changes: []DiffChange{}}
	if before == after {
		return out
	}
	ops := lineScript(before, after)
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].kind == '-' {
			j++
		}
		k := j
		for k < len(ops) && ops[k].kind == '+' {
			k++
		}
		dels, adds := ops[i:j], ops[j:k]
		p := min(len(dels), len(adds))
		for x := 0; x < p; x++ {
			b, a := dels[x].text, adds[x].text
			out.Changes = append(out.Changes, DiffChange{Type: ChangeModify, Line: adds[x].new, OldLine: dels[x].old, Before: &b, After: &a})
		}
		for _, d := range dels[p:] {
			b := d.text
			out.Changes = append(out.Changes, DiffChange{Type: ChangeDelete, Line: d.old, OldLine: d.old, Before: &b})
		}
		for _, a := range adds[p:] {
			t := a.text
			out.Changes = append(out.Changes, DiffChange{Type: ChangeAdd, Line: a.new, After: &t})
		}
		out.Modified += p
		out.Deleted += len(dels) - p
		out.Added += len(adds) - p
		if k == i { // cannot happen with merged diffs; guard against a stall
			k = i + 1
		}
		i = k
	}
	out.HasChanges = true
	ctx := opts.Context
	if ctx < 0 {
		ctx = 0
	}
	if format == DiffSplit {
		out.Diff = renderSplit(ops, ctx)
	} else {
		from, to := opts.FromName, opts.ToName
		if from == "" {
			from = "a"
		}
		if to == "" {
			to = "b"
		}
		out.Diff = renderUnified(ops, ctx, from, to)
	}
	return out
}

// hunks returns [start, end) ranges of ops: every changed op with ctx equal
// ops around it, overlapping ranges merged.
func hunks(ops []lineOp, ctx int) [][2]int {
	var out [][2]int
	for i := 0; i < len(ops); i++ {
		if ops[i].kind == ' ' {
			continue
		}
		j := i
		for j < len(ops) && ops[j].kind != ' ' {
			j++
		}
		s, e := max(0, i-ctx), min(len(ops), j+ctx)
		if n := len(out); n > 0 && s <= out[n-1][1] {
			out[n-1][1] = e
		} else {
			out = append(out, [2]int{s, e})
		}
		i = j
	}
	return out
}

func renderUnified(ops []lineOp, ctx int, from, to string) string {
	var b strings.Builder
	b.WriteString("--- " + from + "\n+++ " + to + "\n")
	for _, h := range hunks(ops, ctx) {
		part := ops[h[0]:h[1]]
		oldStart, oldCount, newStart, newCount := sideRange(ops, h[0], h[1])
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", rangeSpec(oldStart, oldCount), rangeSpec(newStart, newCount))
		for _, op := range part {
			b.WriteByte(op.kind)
			b.WriteString(op.text)
			if op.eol == "" {
				b.WriteString("\n\\ No newline at end of file\n")
			} else {
				b.WriteString(op.eol) // the line's own terminator: a CRLF line keeps its CR, as in diff -u
			}
		}
	}
	return b.String()
}

// sideRange computes the unified start/count of both sides of ops[s:e]. An
// empty side starts at the line before the hunk (0 at the top), as in diff -u.
func sideRange(ops []lineOp, s, e int) (oldStart, oldCount, newStart, newCount int) {
	oldBefore, newBefore := 0, 0
	for i := s - 1; i >= 0; i-- {
		if oldBefore == 0 && ops[i].old != 0 {
			oldBefore = ops[i].old
		}
		if newBefore == 0 && ops[i].new != 0 {
			newBefore = ops[i].new
		}
		if oldBefore != 0 && newBefore != 0 {
			break
		}
	}
	oldStart, newStart = oldBefore+1, newBefore+1
	for _, op := range ops[s:e] {
		if op.old != 0 {
			oldCount++
		}
		if op.new != 0 {
			newCount++
		}
	}
	if oldCount == 0 {
		oldStart = oldBefore
	}
	if newCount == 0 {
		newStart = newBefore
	}
	return
}

func rangeSpec(start, count int) string {
	if count == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(count)
}

// renderSplit renders hunks side by side: old line number and text on the
// left, new on the right, a marker between ('-' deleted, '+' added, '~'
// modified, ' ' equal).
func renderSplit(ops []lineOp, ctx int) string {
	type row struct {
		left, right *lineOp
		marker      byte
	}
	var b strings.Builder
	for _, h := range hunks(ops, ctx) {
		var rows []row
		part := ops[h[0]:h[1]]
		for i := 0; i < len(part); {
			if part[i].kind == ' ' {
				rows = append(rows, row{&part[i], &part[i], ' '})
				i++
				continue
			}
			j := i
			for j < len(part) && part[j].kind == '-' {
				j++
			}
			k := j
			for k < len(part) && part[k].kind == '+' {
				k++
			}
			if k == i {
				k = i + 1
			}
			dels, adds := part[i:j], part[j:k]
			for x := 0; x < max(len(dels), len(adds)); x++ {
				r := row{}
				if x < len(dels) {
					r.left = &dels[x]
				}
				if x < len(adds) {
					r.right = &adds[x]
				}
				switch {
				case r.left != nil && r.right != nil:
					r.marker = '~'
				case r.left != nil:
					r.marker = '-'
				default:
					r.marker = '+'
				}
				rows = append(rows, r)
			}
			i = k
		}
		width := 0
		for _, r := range rows {
			if r.left != nil {
				width = max(width, utf8.RuneCountInString(r.left.text))
			}
		}
		width = min(width, 80)
		oldStart, oldCount, newStart, newCount := sideRange(ops, h[0], h[1])
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", rangeSpec(oldStart, oldCount), rangeSpec(newStart, newCount))
		for _, r := range rows {
			ln, lt, rn, rt := "", "", "", ""
			if r.left != nil {
				ln, lt = strconv.Itoa(r.left.old), r.left.text
			}
			if r.right != nil {
				rn, rt = strconv.Itoa(r.right.new), r.right.text
			}
			pad := width - utf8.RuneCountInString(lt)
			if pad < 0 {
				pad = 0
			}
			fmt.Fprintf(&b, "%5s %s%s %c %5s %s\n", ln, lt, strings.Repeat(" ", pad), r.marker, rn, rt)
		}
	}
	return b.String()
}
