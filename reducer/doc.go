package reducer

// Document verbs: line edits on "doc" nodes (text in props.text, language in
// props.language). The line model: a text is a sequence of lines, each ending
// with its terminator ("\n" or "\r\n"); only the last line may lack one. ""
// has 0 lines, "a" and "a\n" have 1, "a\n\n" has 2. Edits write new lines with
// the document's own line ending (that of its first line break) and never add
// or remove the final newline: a document without one keeps lacking it, unless
// an edit would leave it ending with an empty line, which does not exist in the
// line model (the text then ends with a line break: see doc.splice).
// Content arguments are split the same way; one trailing line break in the
// content is a terminator, not an extra empty line, and "" is one empty line.
//
// Edits commit as canvas.OpEdit changes: line splices (canvas.TextEdit) that
// carry only the replaced lines, not the whole document.

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// DocType is the node type of text/code documents.
const DocType = "doc"

// DocTextProp and DocLanguageProp name the props of a doc node holding its
// text and its language.
const (
	DocTextProp     = "text"
	DocLanguageProp = "language"
)

// DocText returns the text and language of a doc node. A node of another type
// or a props.text that is not text (a string or a canvas.DocText) is a
// *canvas.FieldError (ErrUnprocessable) on field; a missing props.text is the
// empty document. It copies the whole text when it is a canvas.DocText.
func DocText(n *canvas.Node, field string) (text, language string, err error) {
	t, language, err := docTextOf(n, field)
	if err != nil {
		return "", "", err
	}
	return t.String(), language, nil
}

// docTextOf is DocText without the copy: the text as a canvas.DocText (a
// string prop is converted, costing one pass over it).
func docTextOf(n *canvas.Node, field string) (canvas.DocText, string, error) {
	var language string
	if n.Type != DocType {
		return canvas.DocText{}, "", canvas.Unprocessable(field, "node %q is a %q node, not a %q node; document verbs act on doc nodes", n.ID, n.Type, DocType)
	}
	t, ok := propDocText(n.Props[DocTextProp])
	if !ok {
		return canvas.DocText{}, "", canvas.Unprocessable(field, "props.text of node %q is not a string", n.ID)
	}
	if v, ok := n.Props[DocLanguageProp].(string); ok {
		language = v
	}
	return t, language, nil
}

// propDocText returns a text prop value (a string, a canvas.DocText, or nil
// for the empty text) as a canvas.DocText; ok is false for other values.
func propDocText(v any) (canvas.DocText, bool) {
	switch t := v.(type) {
	case nil:
		return canvas.DocText{}, true
	case canvas.DocText:
		return t, true
	case string:
		return canvas.NewDocText(t), true
	}
	return canvas.DocText{}, false
}

// normalizeDocNode gives n's props.text the in-memory form the state keeps:
// a canvas.DocText on doc nodes, a string on other nodes. Apply and
// DecodeState call it on every node they store, so that equal states hold
// equal values (the DocText chunking is a function of the text). It replaces
// n.Props rather than modifying the map.
func normalizeDocNode(n *canvas.Node) {
	v, ok := n.Props[DocTextProp]
	if !ok {
		return
	}
	var nv any
	switch t := v.(type) {
	case string:
		if n.Type != DocType {
			return
		}
		nv = canvas.NewDocText(t)
	case canvas.DocText:
		if n.Type == DocType {
			return
		}
		nv = t.String()
	default:
		return
	}
	n.Props = maps.Clone(n.Props)
	n.Props[DocTextProp] = nv
}

// lineStart returns the byte offset at which line k (1-indexed) of t starts;
// line count+1 starts at t.Len(). ok is false when k is beyond count+1 or
// below 1. It costs a binary search and a scan of one chunk.
func lineStart(t canvas.DocText, k int) (int, bool) {
	switch {
	case k < 1:
		return 0, false
	case k == 1:
		return 0, true
	}
	if off, ok := t.NewlineOffset(k - 1); ok {
		return off, true
	}
	// Past the last line break: an unterminated last line counts as one more.
	if k-1 == t.Newlines()+1 && t.Len() > 0 && t.LastByte() != '\n' {
		return t.Len(), true
	}
	return 0, false
}

// docLineCount is LineCount for a canvas.DocText, in O(1).
func docLineCount(t canvas.DocText) int {
	n := t.Newlines()
	if t.Len() > 0 && t.LastByte() != '\n' {
		n++
	}
	return n
}

// LineCount returns the number of lines of text in the document line model.
func LineCount(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && text[len(text)-1] != '\n' {
		n++
	}
	return n
}

// Lines splits text into its lines without terminators ("\n" or "\r\n").
func Lines(text string) []string {
	out := make([]string, 0, LineCount(text))
	for pos := 0; pos < len(text); {
		line, next := lineAt(text, pos)
		out = append(out, line)
		pos = next
	}
	return out
}

// lineEnding returns the line ending of text: that of its first line break,
// or def when it has none.
func lineEnding(text, def string) string {
	i := strings.IndexByte(text, '\n')
	if i < 0 {
		return def
	}
	if i > 0 && text[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// lineAt returns the content (without terminator) of the line starting at
// pos, and the offset of the next line.
func lineAt(text string, pos int) (string, int) {
	i := strings.IndexByte(text[pos:], '\n')
	if i < 0 {
		return text[pos:], len(text)
	}
	end := pos + i
	next := end + 1
	if end > pos && text[end-1] == '\r' {
		end--
	}
	return text[pos:end], next
}

// lineOffset returns the byte offset at which line target starts, scanning
// from pos, the start of line cur (target ≥ cur). Line count+1 starts at
// len(text). ok is false when target is beyond count+1.
func lineOffset(text string, pos, cur, target int) (int, bool) {
	need := target - cur
	if need <= 0 {
		return pos, need == 0
	}
	const chunk = 8192
	from := pos
	for pos < len(text) {
		end := min(pos+chunk, len(text))
		if c := strings.Count(text[pos:end], "\n"); c < need {
			need -= c
			pos = end
			continue
		}
		for {
			pos += strings.IndexByte(text[pos:], '\n') + 1
			need--
			if need == 0 {
				return pos, true
			}
		}
	}
	// Past the last line break: an unterminated last line counts as one more.
	if need == 1 && len(text) > from && text[len(text)-1] != '\n' {
		return len(text), true
	}
	return 0, false
}

// contentLines splits a content argument into lines (see the package's line
// model) and reports its line ending ("" when it has no line break) and
// whether it ended with a line break.
func contentLines(content string) (lines []string, eol string, finalNL bool) {
	if content == "" {
		return []string{""}, "", false
	}
	eol = lineEnding(content, "")
	finalNL = content[len(content)-1] == '\n'
	lines = Lines(content)
	for i, l := range lines { // a line cannot end with CR: "x\r" + "\n" would read as a CRLF
		lines[i] = strings.TrimRight(l, "\r")
	}
	return lines, eol, finalNL
}

// joinLines joins lines with eol, terminating the last one when term is set.
func joinLines(lines []string, eol string, term bool) string {
	n := 0
	for _, l := range lines {
		n += len(l) + len(eol)
	}
	var b strings.Builder
	b.Grow(n)
	for i, l := range lines {
		b.WriteString(l)
		if i < len(lines)-1 || term {
			b.WriteString(eol)
		}
	}
	return b.String()
}

// doc is a document text with its line model facts.
type doc struct {
	text    canvas.DocText
	eol     string
	finalNL bool
	lines   int
}

func newDoc(t canvas.DocText) doc {
	d := doc{text: t, eol: "", finalNL: t.LastByte() == '\n', lines: docLineCount(t)}
	if off, ok := t.NewlineOffset(1); ok {
		d.eol = "\n"
		if off >= 2 && t.Slice(off-2, off-1) == "\r" {
			d.eol = "\r\n"
		}
	}
	return d
}

// locate returns the offsets of lines a and b (a ≤ b, both ≤ count+1), or
// zeros when either is out of range, using the text's chunk index.
func (d *doc) locate(a, b int) (offA, offB int) {
	offA, okA := lineStart(d.text, a)
	offB, okB := lineStart(d.text, b)
	if !okA || !okB {
		return 0, 0
	}
	return offA, offB
}

// locateRange returns the offsets of line start and of the line after end,
// or zeros for a range that is not plausible.
func (d *doc) locateRange(start, end int) (int, int) {
	if start >= 1 && end >= start {
		return d.locate(start, end+1)
	}
	return 0, 0
}

// splice builds the hunk that replaces lines [s, e] (e = s-1: an insertion
// before line s) by newLines, keeping the document's line ending and final
// newline. startOff and endOff are the offsets of lines s and e+1. It returns
// the hunk and the number of lines after the edit.
//
// An unterminated empty last line does not exist in the line model: when an
// edit would end a document lacking a final newline with an empty line, the
// result ends with a line break instead, and has one line less.
func (d doc) splice(s, e, startOff, endOff int, newLines []string, contentEOL string, contentFinalNL bool) (canvas.TextHunk, int) {
	after := d.lines - (e - s + 1) + len(newLines)
	if len(newLines) > 0 && newLines[len(newLines)-1] == "" &&
		(d.lines == 0 && !contentFinalNL || d.lines > 0 && e == d.lines && !d.finalNL) {
		after--
	}
	if d.lines == 0 { // empty document: take the content's own style
		eol := contentEOL
		if eol == "" {
			eol = "\n"
		}
		return canvas.TextHunk{Line: 1, Del: 0, Ins: joinLines(newLines, eol, contentFinalNL)}, after
	}
	eol := d.eol
	if eol == "" { // a one-line document without a line break
		eol = contentEOL
		if eol == "" {
			eol = "\n"
		}
	}
	if e < d.lines || d.finalNL { // every line in [s, e] is terminated
		ins := ""
		if len(newLines) > 0 {
			ins = joinLines(newLines, eol, true)
		}
		return canvas.TextHunk{Line: s, Del: e - s + 1, Ins: ins}, after
	}
	// The range reaches the unterminated last line.
	switch {
	case len(newLines) > 0 && e >= s: // replace up to the end: stay unterminated
		return canvas.TextHunk{Line: s, Del: e - s + 1, Ins: joinLines(newLines, eol, false)}, after
	case len(newLines) > 0: // append after the unterminated last line: terminate it, leave the new last line unterminated
		last, _ := lineStart(d.text, d.lines)
		return canvas.TextHunk{Line: d.lines, Del: 1, Ins: d.text.Slice(last, d.text.Len()) + eol + joinLines(newLines, eol, false)}, after
	case s == 1: // delete everything
		return canvas.TextHunk{Line: 1, Del: d.lines, Ins: ""}, after
	default: // delete up to the end: the previous line becomes the unterminated last line
		prevStart, _ := lineStart(d.text, s-1)
		prevContent, _ := lineAt(d.text.Slice(prevStart, startOff), 0)
		if prevContent == "" {
			after--
		}
		return canvas.TextHunk{Line: s - 1, Del: e - s + 2, Ins: strings.Clone(prevContent)}, after
	}
}

// rangeText returns the lines in text[from:to] joined by "\n" (no final one).
func rangeText(text canvas.DocText, from, to int) string {
	seg := text.Slice(from, to)
	if strings.IndexByte(seg, '\r') >= 0 {
		seg = strings.ReplaceAll(seg, "\r\n", "\n")
	}
	return strings.TrimSuffix(seg, "\n")
}

// ApplyTextEdit applies a line splice to text. A hunk outside the text, out of
// order or overlapping is an error wrapping canvas.ErrUnprocessable. It also
// returns the inverse edit (which, applied to the result, gives text back).
func ApplyTextEdit(text string, hunks []canvas.TextHunk) (string, []canvas.TextHunk, error) {
	type span struct{ start, end int }
	spans := make([]span, len(hunks))
	pos, cur, size := 0, 1, len(text)
	for i, h := range hunks {
		if h.Del < 0 || h.Line < cur {
			return "", nil, fmt.Errorf("text edit hunk %d (line %d, del %d): out of order or overlapping: %w", i, h.Line, h.Del, canvas.ErrUnprocessable)
		}
		start, ok := lineOffset(text, pos, cur, h.Line)
		if !ok {
			return "", nil, fmt.Errorf("text edit hunk %d: line %d is past the end of the text: %w", i, h.Line, canvas.ErrUnprocessable)
		}
		end, ok := lineOffset(text, start, h.Line, h.Line+h.Del)
		if !ok || (h.Del > 0 && end == start) {
			return "", nil, fmt.Errorf("text edit hunk %d: lines %d..%d are past the end of the text: %w", i, h.Line, h.Line+h.Del-1, canvas.ErrUnprocessable)
		}
		spans[i] = span{start, end}
		size += len(h.Ins) - (end - start)
		pos, cur = end, h.Line+h.Del
	}
	var b strings.Builder
	b.Grow(size)
	inv := make([]canvas.TextHunk, len(hunks))
	pos, shift := 0, 0
	for i, h := range hunks {
		b.WriteString(text[pos:spans[i].start])
		b.WriteString(h.Ins)
		n := LineCount(h.Ins)
		inv[i] = canvas.TextHunk{Line: h.Line + shift, Del: n, Ins: strings.Clone(text[spans[i].start:spans[i].end])}
		shift += n - h.Del
		pos = spans[i].end
	}
	b.WriteString(text[pos:])
	return b.String(), inv, nil
}

// applyDocEdit is ApplyTextEdit on a canvas.DocText: it locates lines with
// the chunk index and shares the chunks the hunks do not reach, so it costs
// O(hunks + chunks touched) rather than O(text).
func applyDocEdit(text canvas.DocText, hunks []canvas.TextHunk) (canvas.DocText, []canvas.TextHunk, error) {
	spans := make([]canvas.TextSplice, len(hunks))
	inv := make([]canvas.TextHunk, len(hunks))
	cur, shift := 1, 0
	for i, h := range hunks {
		if h.Del < 0 || h.Line < cur {
			return canvas.DocText{}, nil, fmt.Errorf("text edit hunk %d (line %d, del %d): out of order or overlapping: %w", i, h.Line, h.Del, canvas.ErrUnprocessable)
		}
		start, ok := lineStart(text, h.Line)
		if !ok {
			return canvas.DocText{}, nil, fmt.Errorf("text edit hunk %d: line %d is past the end of the text: %w", i, h.Line, canvas.ErrUnprocessable)
		}
		end, ok := lineStart(text, h.Line+h.Del)
		if !ok || (h.Del > 0 && end == start) {
			return canvas.DocText{}, nil, fmt.Errorf("text edit hunk %d: lines %d..%d are past the end of the text: %w", i, h.Line, h.Line+h.Del-1, canvas.ErrUnprocessable)
		}
		spans[i] = canvas.TextSplice{Start: start, End: end, Ins: h.Ins}
		n := LineCount(h.Ins)
		// Clone: a substring would pin a whole chunk in the undo history.
		inv[i] = canvas.TextHunk{Line: h.Line + shift, Del: n, Ins: strings.Clone(text.Slice(start, end))}
		shift += n - h.Del
		cur = h.Line + h.Del
	}
	return text.Splice(spans), inv, nil
}

// ApplyEditChange applies an OpEdit change to node n of s (the node must
// exist): it splices n.Props[edit.Prop] and returns the inverse splice. It does
// not set updated_rev/updated_by; Apply does, as for every change.
func ApplyEditChange(n *canvas.Node, e *canvas.TextEdit) (*canvas.TextEdit, error) {
	if e == nil || e.Prop == "" {
		return nil, fmt.Errorf("edit change on node %q without an edit: %w", n.ID, canvas.ErrUnprocessable)
	}
	old, ok := propDocText(n.Props[e.Prop])
	if !ok {
		return nil, fmt.Errorf("edit change on node %q: props.%s is not a string: %w", n.ID, e.Prop, canvas.ErrUnprocessable)
	}
	text, inv, err := applyDocEdit(old, e.Hunks)
	if err != nil {
		return nil, fmt.Errorf("edit change on node %q: %w", n.ID, err)
	}
	if n.Props == nil {
		n.Props = map[string]any{}
	}
	if n.Type == DocType && e.Prop == DocTextProp {
		n.Props[e.Prop] = text // the state's form of a doc's text (normalizeDocNode)
	} else {
		n.Props[e.Prop] = text.String()
	}
	return &canvas.TextEdit{Prop: e.Prop, Hunks: inv}, nil
}

// --- the four verbs ---

// TextDiff is the before/after text of an edited line range, lines joined by "\n".
type TextDiff struct {
	Before string `json:"before"`
	After  string `json:"after"`
}

// ReplaceLinesResult is the result of replace_lines.
type ReplaceLinesResult struct {
	Success       bool     `json:"success"`
	NodeID        string   `json:"node_id"`
	StartLine     int      `json:"start_line"`
	EndLine       int      `json:"end_line"`
	LinesAffected int      `json:"lines_affected"`
	LinesInserted int      `json:"lines_inserted"`
	Diff          TextDiff `json:"diff"`
	NewLineCount  int      `json:"new_line_count"`
}

// InsertLinesResult is the result of insert_lines.
type InsertLinesResult struct {
	Success         bool     `json:"success"`
	NodeID          string   `json:"node_id"`
	InsertAfterLine int      `json:"insert_after_line"`
	LinesInserted   int      `json:"lines_inserted"`
	LinesAffected   int      `json:"lines_affected"`
	Diff            TextDiff `json:"diff"`
	NewLineCount    int      `json:"new_line_count"`
}

// DeleteLinesResult is the result of delete_lines.
type DeleteLinesResult struct {
	Success        bool     `json:"success"`
	NodeID         string   `json:"node_id"`
	StartLine      int      `json:"start_line"`
	EndLine        int      `json:"end_line"`
	LinesDeleted   int      `json:"lines_deleted"`
	LinesAffected  int      `json:"lines_affected"`
	DeletedContent string   `json:"deleted_content"`
	Diff           TextDiff `json:"diff"`
	NewLineCount   int      `json:"new_line_count"`
}

// LineDiff is one changed line of search_replace (Line in the text before).
type LineDiff struct {
	Line   int    `json:"line"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// SearchReplaceResult is the result of search_replace.
type SearchReplaceResult struct {
	Success          bool       `json:"success"`
	NodeID           string     `json:"node_id"`
	ReplacementsMade int        `json:"replacements_made"`
	AffectedLines    []int      `json:"affected_lines"`
	LinesAffected    int        `json:"lines_affected"`
	Diffs            []LineDiff `json:"diffs"`
	NewLineCount     int        `json:"new_line_count"`
}

// loadDoc finds the doc node named by args.node_id.
func loadDoc(s *canvas.State, id string) (*canvas.Node, doc, []canvas.Ref, error) {
	if id == "" {
		return nil, doc{}, nil, canvas.Unprocessable("args.node_id", "is required: the id of a doc node")
	}
	touched := []canvas.Ref{{Kind: canvas.KindNode, ID: id}}
	n, ok := s.Nodes[id]
	if !ok {
		return nil, doc{}, touched, canvas.Unprocessable("args.node_id", "no node %q on this canvas", id)
	}
	text, _, err := docTextOf(n, "args.node_id")
	if err != nil {
		return nil, doc{}, touched, err
	}
	return n, newDoc(text), touched, nil
}

func editChange(id string, hunks ...canvas.TextHunk) []canvas.Change {
	return []canvas.Change{{Op: canvas.OpEdit, Kind: canvas.KindNode, ID: id,
		Edit: &canvas.TextEdit{Prop: DocTextProp, Hunks: hunks}}}
}

func emptyDocErr(field string) error {
	return canvas.Unprocessable(field, "the document is empty (0 lines); use insert_lines with insert_after_line 0")
}

// checkRange validates a 1-indexed inclusive line range against n lines.
func checkRange(start, end, n int) error {
	if n == 0 {
		return emptyDocErr("args.start_line")
	}
	if start < 1 || start > n {
		return canvas.Unprocessable("args.start_line", "must be between 1 and %d (the document has %d lines), got %d", n, n, start)
	}
	if end < start || end > n {
		return canvas.Unprocessable("args.end_line", "must be between start_line (%d) and %d (the document has %d lines), got %d", start, n, n, end)
	}
	return nil
}

// decideReplaceLines replaces lines [start_line, end_line] of a doc by new_content.
func decideReplaceLines(s *canvas.State, cmd canvas.Command) (Decision, error) {
	var a canvas.ReplaceLinesArgs
	if err := decodeArgs(cmd.Args, &a); err != nil {
		return Decision{}, err
	}
	_, d, touched, err := loadDoc(s, a.NodeID)
	if err != nil {
		return Decision{Touched: touched}, err
	}
	if a.NewContent == nil {
		return Decision{Touched: touched}, canvas.Unprocessable("args.new_content", "is required (use delete_lines to remove lines)")
	}
	startOff, endOff := d.locateRange(a.StartLine, a.EndLine)
	if err := checkRange(a.StartLine, a.EndLine, d.lines); err != nil {
		return Decision{Touched: touched}, err
	}
	newLines, ceol, cfinal := contentLines(*a.NewContent)
	hunk, after := d.splice(a.StartLine, a.EndLine, startOff, endOff, newLines, ceol, cfinal)
	return Decision{
		Changes: editChange(a.NodeID, hunk),
		Touched: touched,
		Result: ReplaceLinesResult{Success: true, NodeID: a.NodeID, StartLine: a.StartLine, EndLine: a.EndLine,
			LinesAffected: a.EndLine - a.StartLine + 1, LinesInserted: len(newLines),
			Diff:         TextDiff{Before: rangeText(d.text, startOff, endOff), After: strings.Join(newLines, "\n")},
			NewLineCount: after},
	}, nil
}

// decideInsertLines inserts content after line insert_after_line (0: at the top).
func decideInsertLines(s *canvas.State, cmd canvas.Command) (Decision, error) {
	var a canvas.InsertLinesArgs
	if err := decodeArgs(cmd.Args, &a); err != nil {
		return Decision{}, err
	}
	_, d, touched, err := loadDoc(s, a.NodeID)
	if err != nil {
		return Decision{Touched: touched}, err
	}
	if a.Content == nil {
		return Decision{Touched: touched}, canvas.Unprocessable("args.content", "is required: the lines to insert")
	}
	off := 0
	if a.InsertAfterLine >= 0 {
		off, _ = d.locate(a.InsertAfterLine+1, a.InsertAfterLine+1)
	}
	if a.InsertAfterLine < 0 || a.InsertAfterLine > d.lines {
		return Decision{Touched: touched}, canvas.Unprocessable("args.insert_after_line",
			"must be between 0 (the top) and %d (after the last line; the document has %d lines), got %d", d.lines, d.lines, a.InsertAfterLine)
	}
	newLines, ceol, cfinal := contentLines(*a.Content)
	hunk, after := d.splice(a.InsertAfterLine+1, a.InsertAfterLine, off, off, newLines, ceol, cfinal)
	inserted := after - d.lines // "" after an unterminated last line only ends it: no line more
	return Decision{
		Changes: editChange(a.NodeID, hunk),
		Touched: touched,
		Result: InsertLinesResult{Success: true, NodeID: a.NodeID, InsertAfterLine: a.InsertAfterLine,
			LinesInserted: inserted, LinesAffected: inserted,
			Diff:         TextDiff{Before: "", After: strings.Join(newLines, "\n")},
			NewLineCount: after},
	}, nil
}

// decideDeleteLines deletes lines [start_line, end_line] of a doc.
func decideDeleteLines(s *canvas.State, cmd canvas.Command) (Decision, error) {
	var a canvas.DeleteLinesArgs
	if err := decodeArgs(cmd.Args, &a); err != nil {
		return Decision{}, err
	}
	_, d, touched, err := loadDoc(s, a.NodeID)
	if err != nil {
		return Decision{Touched: touched}, err
	}
	startOff, endOff := d.locateRange(a.StartLine, a.EndLine)
	if err := checkRange(a.StartLine, a.EndLine, d.lines); err != nil {
		return Decision{Touched: touched}, err
	}
	hunk, after := d.splice(a.StartLine, a.EndLine, startOff, endOff, nil, "", false)
	deleted := rangeText(d.text, startOff, endOff)
	return Decision{
		Changes: editChange(a.NodeID, hunk),
		Touched: touched,
		Result: DeleteLinesResult{Success: true, NodeID: a.NodeID, StartLine: a.StartLine, EndLine: a.EndLine,
			LinesDeleted: a.EndLine - a.StartLine + 1, LinesAffected: a.EndLine - a.StartLine + 1,
			DeletedContent: deleted, Diff: TextDiff{Before: deleted}, NewLineCount: after},
	}, nil
}

// lineReplacer replaces matches within one line, at most max (< 0: all),
// returning the new line and the number of replacements.
type lineReplacer func(line string, max int) (string, int)

func newLineReplacer(a *canvas.SearchReplaceArgs) (lineReplacer, error) {
	if strings.TrimSpace(a.SearchPattern) == "" {
		return nil, canvas.Unprocessable("args.search_pattern", "must not be empty or whitespace only")
	}
	caseSensitive := a.CaseSensitive == nil || *a.CaseSensitive
	if !a.Regex {
		if strings.ContainsAny(a.SearchPattern, "\r\n") {
			return nil, canvas.Unprocessable("args.search_pattern", "must not contain line breaks: matching is per line; use replace_lines for multi-line edits")
		}
		if caseSensitive {
			pat, rep := a.SearchPattern, a.ReplaceWith
			return func(line string, max int) (string, int) {
				n := strings.Count(line, pat)
				if n == 0 {
					return line, 0
				}
				if max >= 0 && n > max {
					n = max
				}
				return strings.Replace(line, pat, rep, n), n
			}, nil
		}
	}
	expr := a.SearchPattern
	if !a.Regex {
		expr = regexp.QuoteMeta(expr)
	}
	if !caseSensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, canvas.Unprocessable("args.search_pattern", "is not a valid RE2 regular expression: %v", err)
	}
	if re.MatchString("") {
		return nil, canvas.Unprocessable("args.search_pattern", "matches the empty string, so it would insert replace_with everywhere; make it match at least one character")
	}
	regex, rep := a.Regex, a.ReplaceWith
	return func(line string, max int) (string, int) {
		ms := re.FindAllStringSubmatchIndex(line, max)
		if len(ms) == 0 {
			return line, 0
		}
		out := make([]byte, 0, len(line)+len(ms)*len(rep))
		last := 0
		for _, m := range ms {
			out = append(out, line[last:m[0]]...)
			if regex {
				out = re.ExpandString(out, rep, line, m)
			} else {
				out = append(out, rep...)
			}
			last = m[1]
		}
		out = append(out, line[last:]...)
		return string(out), len(ms)
	}, nil
}

// decideSearchReplace replaces matches of search_pattern line by line. A
// line's new text (replace_with may hold line breaks) becomes as many lines,
// written with the document's line ending; each line keeps its own
// terminator. It is the splice of doc.splice with those lines: the last line
// of a document without a final newline stays unterminated, except that a
// replacement leaving it ending with an empty line ("a\nb" with b→"x\n" or
// b→"") ends the document with a line break instead, since an unterminated
// empty line does not exist: "a\nx\n" (2 lines) and "a\n" (1 line), as
// replace_lines of that line by "x\n\n" or "" gives. new_line_count is the
// line count of the resulting text.
func decideSearchReplace(s *canvas.State, cmd canvas.Command) (Decision, error) {
	var a canvas.SearchReplaceArgs
	if err := decodeArgs(cmd.Args, &a); err != nil {
		return Decision{}, err
	}
	_, d, touched, err := loadDoc(s, a.NodeID)
	if err != nil {
		return Decision{Touched: touched}, err
	}
	if a.MaxReplacements < 0 {
		return Decision{Touched: touched}, canvas.Unprocessable("args.max_replacements", "must be ≥ 0 (0 replaces every match), got %d", a.MaxReplacements)
	}
	replace, err := newLineReplacer(&a)
	if err != nil {
		return Decision{Touched: touched}, err
	}
	eol := d.eol
	if eol == "" {
		eol = lineEnding(a.ReplaceWith, "\n")
	}
	res := SearchReplaceResult{Success: true, NodeID: a.NodeID, AffectedLines: []int{}, Diffs: []LineDiff{}, NewLineCount: d.lines}
	var hunks []canvas.TextHunk
	remaining := -1
	if a.MaxReplacements > 0 {
		remaining = a.MaxReplacements
	}
	text := d.text.String() // search_replace reads every line anyway
	for pos, line := 0, 1; pos < len(text) && remaining != 0; line++ {
		content, next := lineAt(text, pos)
		term := text[pos+len(content) : next]
		pos = next
		out, n := replace(content, remaining)
		if n == 0 {
			continue
		}
		if remaining > 0 {
			remaining -= n
		}
		res.ReplacementsMade += n
		if out == content {
			continue
		}
		plain := out
		if strings.IndexByte(out, '\r') >= 0 { // keep line breaks as "\n" and no CR at a line's end
			pieces := strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n")
			for i, l := range pieces { // "x\r" + "\n" would read as a CRLF
				pieces[i] = strings.TrimRight(l, "\r")
			}
			plain = strings.Join(pieces, "\n")
			out = plain
		}
		if extra := strings.Count(plain, "\n"); extra > 0 {
			res.NewLineCount += extra
			out = strings.ReplaceAll(plain, "\n", eol)
		}
		if term == "" && (plain == "" || plain[len(plain)-1] == '\n') {
			// The unterminated last line now ends with an empty line, which
			// the line model does not have: as in doc.splice, the text ends
			// with a line break instead, and has one line less.
			res.NewLineCount--
		}
		res.AffectedLines = append(res.AffectedLines, line)
		res.Diffs = append(res.Diffs, LineDiff{Line: line, Before: content, After: plain})
		hunks = append(hunks, canvas.TextHunk{Line: line, Del: 1, Ins: out + term})
	}
	res.LinesAffected = len(res.AffectedLines)
	dec := Decision{Touched: touched, Result: res}
	if len(hunks) > 0 {
		dec.Changes = editChange(a.NodeID, hunks...)
	}
	return dec, nil
}
