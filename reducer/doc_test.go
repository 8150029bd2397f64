package reducer

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
)

const testDocID = "shape:doc"

func docState(text string) *canvas.State {
	s := canvas.NewState()
	s.Nodes[testDocID] = &canvas.Node{ID: testDocID, Type: DocType, Index: "a0",
		Props: map[string]any{DocTextProp: text, DocLanguageProp: "go"}}
	return s
}

func docCmd(typ string, args map[string]any) canvas.Command {
	if _, ok := args["node_id"]; !ok {
		args["node_id"] = testDocID
	}
	b, _ := json.Marshal(args)
	return canvas.Command{CanvasID: "c", ID: "cmd", Type: typ, Args: b, Rev: 1,
		Actor: canvas.Actor{ID: "u", Type: canvas.ActorHuman}, TS: time.Unix(0, 0), Seed: "s"}
}

var docVerbs = map[string]decideFunc{
	"replace_lines":  decideReplaceLines,
	"insert_lines":   decideInsertLines,
	"delete_lines":   decideDeleteLines,
	"search_replace": decideSearchReplace,
}

// runDoc decides a document verb on text and applies its change to text.
func runDoc(t testing.TB, text, typ string, args map[string]any) (string, Decision, error) {
	t.Helper()
	s := docState(text)
	dec, err := docVerbs[typ](s, docCmd(typ, args))
	if err != nil {
		return text, dec, err
	}
	if len(dec.Touched) != 1 || dec.Touched[0] != (canvas.Ref{Kind: canvas.KindNode, ID: testDocID}) {
		t.Fatalf("touched = %v", dec.Touched)
	}
	out := text
	for _, ch := range dec.Changes {
		if ch.Op != canvas.OpEdit || ch.Edit == nil || ch.ID != testDocID {
			t.Fatalf("change = %+v", ch)
		}
		n := s.Nodes[testDocID].Clone()
		inv, err := ApplyEditChange(n, ch.Edit)
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		out, _ = canvas.PropText(n.Props[DocTextProp])
		back, _, err := ApplyTextEdit(out, inv.Hunks)
		if err != nil || back != text {
			t.Fatalf("inverse edit gives %q (err %v), want %q", back, err, text)
		}
	}
	return out, dec, nil
}

func TestDocVerbs(t *testing.T) {
	tests := []struct {
		name, text, typ string
		args            map[string]any
		want            string
		lines           int // new_line_count
	}{
		{"replace middle", "a\nb\nc\n", "replace_lines", map[string]any{"start_line": 2, "end_line": 2, "new_content": "B1\nB2"}, "a\nB1\nB2\nc\n", 4},
		{"replace content trailing newline is a terminator", "a\nb\nc\n", "replace_lines", map[string]any{"start_line": 2, "end_line": 3, "new_content": "x\n"}, "a\nx\n", 2},
		{"replace with empty string is one empty line", "a\nb\n", "replace_lines", map[string]any{"start_line": 1, "end_line": 1, "new_content": ""}, "\nb\n", 2},
		{"replace crlf", "a\r\nb\r\nc\r\n", "replace_lines", map[string]any{"start_line": 1, "end_line": 2, "new_content": "x\ny\nz"}, "x\r\ny\r\nz\r\nc\r\n", 4},
		{"replace crlf content into lf doc", "a\nb\n", "replace_lines", map[string]any{"start_line": 2, "end_line": 2, "new_content": "x\r\ny\r\n"}, "a\nx\ny\n", 3},
		{"replace last line without final newline", "a\nb", "replace_lines", map[string]any{"start_line": 2, "end_line": 2, "new_content": "x\ny\n"}, "a\nx\ny", 3},
		{"replace only line without final newline", "abc", "replace_lines", map[string]any{"start_line": 1, "end_line": 1, "new_content": "x"}, "x", 1},
		{"replace unterminated last line by an empty line", "a\nb", "replace_lines", map[string]any{"start_line": 2, "end_line": 2, "new_content": ""}, "a\n", 1},
		{"replace unicode", "héllo\n日本語\n🙂\n", "replace_lines", map[string]any{"start_line": 2, "end_line": 2, "new_content": "中文"}, "héllo\n中文\n🙂\n", 3},
		{"insert top", "a\nb\n", "insert_lines", map[string]any{"insert_after_line": 0, "content": "x"}, "x\na\nb\n", 3},
		{"insert end", "a\nb\n", "insert_lines", map[string]any{"insert_after_line": 2, "content": "x\ny"}, "a\nb\nx\ny\n", 4},
		{"insert end without final newline", "a\nb", "insert_lines", map[string]any{"insert_after_line": 2, "content": "x\n"}, "a\nb\nx", 3},
		{"insert end crlf without final newline", "a\r\nb", "insert_lines", map[string]any{"insert_after_line": 2, "content": "x\ny"}, "a\r\nb\r\nx\r\ny", 4},
		{"insert middle crlf", "a\r\nb\r\n", "insert_lines", map[string]any{"insert_after_line": 1, "content": "x"}, "a\r\nx\r\nb\r\n", 3},
		{"insert into empty doc", "", "insert_lines", map[string]any{"insert_after_line": 0, "content": "x\ny"}, "x\ny", 2},
		{"insert into empty doc keeps content newline", "", "insert_lines", map[string]any{"insert_after_line": 0, "content": "x\r\n"}, "x\r\n", 1},
		{"insert into one-line doc takes content eol", "a", "insert_lines", map[string]any{"insert_after_line": 1, "content": "x\r\ny"}, "a\r\nx\r\ny", 3},
		{"insert blank line", "a\nb\n", "insert_lines", map[string]any{"insert_after_line": 1, "content": ""}, "a\n\nb\n", 3},
		{"delete middle", "a\nb\nc\n", "delete_lines", map[string]any{"start_line": 2, "end_line": 2}, "a\nc\n", 2},
		{"delete all", "a\nb\n", "delete_lines", map[string]any{"start_line": 1, "end_line": 2}, "", 0},
		{"delete last without final newline", "a\nb\nc", "delete_lines", map[string]any{"start_line": 2, "end_line": 3}, "a", 1},
		{"delete last crlf without final newline", "a\r\nb\r\nc", "delete_lines", map[string]any{"start_line": 3, "end_line": 3}, "a\r\nb", 2},
		{"delete all without final newline", "a\nb", "delete_lines", map[string]any{"start_line": 1, "end_line": 2}, "", 0},
		{"delete first crlf", "a\r\nb\r\n", "delete_lines", map[string]any{"start_line": 1, "end_line": 1}, "b\r\n", 1},
		{"search literal", "foo bar\nbar foo\nbaz\n", "search_replace", map[string]any{"search_pattern": "foo", "replace_with": "qux"}, "qux bar\nbar qux\nbaz\n", 3},
		{"search max", "foo foo\nfoo\n", "search_replace", map[string]any{"search_pattern": "foo", "replace_with": "x", "max_replacements": 2}, "x x\nfoo\n", 2},
		{"search case insensitive", "Foo\nFOO\nbar\n", "search_replace", map[string]any{"search_pattern": "foo", "replace_with": "x", "case_sensitive": false}, "x\nx\nbar\n", 3},
		{"search case sensitive by default", "Foo\nfoo\n", "search_replace", map[string]any{"search_pattern": "foo", "replace_with": "x"}, "Foo\nx\n", 2},
		{"search literal metachars", "a.b\naxb\n", "search_replace", map[string]any{"search_pattern": "a.b", "replace_with": "Y", "case_sensitive": false}, "Y\naxb\n", 2},
		{"search regex groups", "x=1\ny=22\n", "search_replace", map[string]any{"search_pattern": `(\w)=(?P<num>\d+)`, "replace_with": "${num}:$1", "regex": true}, "1:x\n22:y\n", 2},
		{"search regex anchors per line", "ab\nab\n", "search_replace", map[string]any{"search_pattern": `^a`, "replace_with": "Z", "regex": true}, "Zb\nZb\n", 2},
		{"search crlf keeps endings", "foo\r\nbar\r\nfoo", "search_replace", map[string]any{"search_pattern": "foo", "replace_with": "x\ny"}, "x\r\ny\r\nbar\r\nx\r\ny", 5},
		{"search no match", "a\n", "search_replace", map[string]any{"search_pattern": "zzz", "replace_with": "x"}, "a\n", 1},
		{"search unicode", "日本語\n", "search_replace", map[string]any{"search_pattern": "本", "replace_with": "🙂"}, "日🙂語\n", 1},
		// A replacement ending the unterminated last line with an empty line
		// ends the text with a line break instead (as replace_lines does).
		{"search line break at the end of an unterminated last line", "a\nb", "search_replace", map[string]any{"search_pattern": "b", "replace_with": "x\n"}, "a\nx\n", 2},
		{"search empties the unterminated last line", "a\nb", "search_replace", map[string]any{"search_pattern": "b", "replace_with": ""}, "a\n", 1},
		{"search empties the only line", "b", "search_replace", map[string]any{"search_pattern": "b", "replace_with": ""}, "", 0},
		{"search line break ends a one-line doc", "ab", "search_replace", map[string]any{"search_pattern": "b", "replace_with": "\n"}, "a\n", 1},
		{"search crlf line break at the end of an unterminated last line", "a\r\nb", "search_replace", map[string]any{"search_pattern": "b", "replace_with": "x\r\n"}, "a\r\nx\r\n", 2},
		{"search two line breaks at the end of an unterminated last line", "a\nb", "search_replace", map[string]any{"search_pattern": "b", "replace_with": "\n\n"}, "a\n\n\n", 3},
		{"search line break in a terminated last line", "a\nb\n", "search_replace", map[string]any{"search_pattern": "b", "replace_with": "x\n"}, "a\nx\n\n", 3},
		{"search unterminated last line stays unterminated", "a\nb", "search_replace", map[string]any{"search_pattern": "b", "replace_with": "x\ny"}, "a\nx\ny", 3},
		{"search CR before a line break in the replacement", "a\nb\n", "search_replace", map[string]any{"search_pattern": "b", "replace_with": "x\r\r\ny"}, "a\nx\ny\n", 3},
		{"search CR left at a line's end", "a\rb\nc\n", "search_replace", map[string]any{"search_pattern": "b", "replace_with": ""}, "a\nc\n", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, dec, err := runDoc(t, tc.text, tc.typ, tc.args)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got != tc.want {
				t.Fatalf("text = %q, want %q", got, tc.want)
			}
			if n := LineCount(got); n != tc.lines {
				t.Fatalf("LineCount = %d, want %d", n, tc.lines)
			}
			if n := newLineCount(t, dec.Result); n != tc.lines {
				t.Fatalf("result new_line_count = %d, want %d", n, tc.lines)
			}
		})
	}
}

func newLineCount(t testing.TB, r any) int {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		N int `json:"new_line_count"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.N
}

func TestDocResults(t *testing.T) {
	_, dec, err := runDoc(t, "a\r\nb\r\nc\r\n", "replace_lines", map[string]any{"start_line": 2, "end_line": 3, "new_content": "x"})
	if err != nil {
		t.Fatal(err)
	}
	r := dec.Result.(ReplaceLinesResult)
	if r.LinesAffected != 2 || r.Diff.Before != "b\nc" || r.Diff.After != "x" || r.NewLineCount != 2 || !r.Success {
		t.Fatalf("replace result = %+v", r)
	}
	_, dec, _ = runDoc(t, "a\nb\nc", "delete_lines", map[string]any{"start_line": 2, "end_line": 3})
	d := dec.Result.(DeleteLinesResult)
	if d.LinesDeleted != 2 || d.DeletedContent != "b\nc" || d.NewLineCount != 1 {
		t.Fatalf("delete result = %+v", d)
	}
	_, dec, _ = runDoc(t, "a\nb\n", "insert_lines", map[string]any{"insert_after_line": 1, "content": "x\ny\n"})
	in := dec.Result.(InsertLinesResult)
	if in.LinesInserted != 2 || in.NewLineCount != 4 {
		t.Fatalf("insert result = %+v", in)
	}
	_, dec, _ = runDoc(t, "foo\nbar\nfoo foo\n", "search_replace", map[string]any{"search_pattern": "foo", "replace_with": "x"})
	sr := dec.Result.(SearchReplaceResult)
	if sr.ReplacementsMade != 3 || fmt.Sprint(sr.AffectedLines) != "[1 3]" || len(sr.Diffs) != 2 ||
		sr.Diffs[1] != (LineDiff{Line: 3, Before: "foo foo", After: "x x"}) {
		t.Fatalf("search result = %+v", sr)
	}
	_, dec, _ = runDoc(t, "a\n", "search_replace", map[string]any{"search_pattern": "zzz", "replace_with": "x"})
	if len(dec.Changes) != 0 || dec.Result.(SearchReplaceResult).ReplacementsMade != 0 {
		t.Fatalf("no-match decision = %+v", dec)
	}
}

func TestDocErrors(t *testing.T) {
	s := docState("a\nb\nc\n")
	s.Nodes["shape:geo"] = &canvas.Node{ID: "shape:geo", Type: "geo"}
	s.Nodes["shape:bad"] = &canvas.Node{ID: "shape:bad", Type: DocType, Props: map[string]any{"text": 3.0}}
	tests := []struct {
		name, typ string
		args      map[string]any
		field     string
		detail    string
	}{
		{"start zero", "replace_lines", map[string]any{"start_line": 0, "end_line": 1, "new_content": "x"}, "args.start_line", "between 1 and 3"},
		{"start past end", "delete_lines", map[string]any{"start_line": 4, "end_line": 4}, "args.start_line", "between 1 and 3"},
		{"end before start", "replace_lines", map[string]any{"start_line": 3, "end_line": 2, "new_content": "x"}, "args.end_line", "between start_line (3) and 3"},
		{"end past end", "delete_lines", map[string]any{"start_line": 1, "end_line": 9}, "args.end_line", "got 9"},
		{"missing content", "replace_lines", map[string]any{"start_line": 1, "end_line": 1}, "args.new_content", "required"},
		{"insert negative", "insert_lines", map[string]any{"insert_after_line": -1, "content": "x"}, "args.insert_after_line", "between 0 (the top) and 3"},
		{"insert past end", "insert_lines", map[string]any{"insert_after_line": 4, "content": "x"}, "args.insert_after_line", "got 4"},
		{"empty pattern", "search_replace", map[string]any{"search_pattern": "", "replace_with": "x"}, "args.search_pattern", "empty"},
		{"whitespace pattern", "search_replace", map[string]any{"search_pattern": " \t", "replace_with": "x"}, "args.search_pattern", "whitespace"},
		{"invalid regex", "search_replace", map[string]any{"search_pattern": "a(b", "replace_with": "x", "regex": true}, "args.search_pattern", "RE2"},
		{"regex matching empty", "search_replace", map[string]any{"search_pattern": "x*", "replace_with": "y", "regex": true}, "args.search_pattern", "empty string"},
		{"negative max", "search_replace", map[string]any{"search_pattern": "a", "replace_with": "y", "max_replacements": -1}, "args.max_replacements", "≥ 0"},
		{"unknown node", "delete_lines", map[string]any{"node_id": "shape:nope", "start_line": 1, "end_line": 1}, "args.node_id", "no node"},
		{"not a doc", "delete_lines", map[string]any{"node_id": "shape:geo", "start_line": 1, "end_line": 1}, "args.node_id", "not a \"doc\""},
		{"text not a string", "delete_lines", map[string]any{"node_id": "shape:bad", "start_line": 1, "end_line": 1}, "args.node_id", "not a string"},
		{"missing node id", "delete_lines", map[string]any{"node_id": "", "start_line": 1, "end_line": 1}, "args.node_id", "required"},
		{"unknown arg", "delete_lines", map[string]any{"start_line": 1, "end_line": 1, "bogus": 1}, "args.bogus", "start_line"},
		{"wrong arg type", "delete_lines", map[string]any{"start_line": "1", "end_line": 1}, "args.start_line", "int"},
	}
	for _, tc := range tests {
		if _, ok := tc.args["node_id"]; !ok {
			tc.args["node_id"] = testDocID
		}
		t.Run(tc.name, func(t *testing.T) {
			dec, err := docVerbs[tc.typ](s, docCmd(tc.typ, tc.args))
			var fe *canvas.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, canvas.ErrUnprocessable) {
				t.Fatalf("err = %v, want a FieldError of kind ErrUnprocessable", err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Reason, tc.detail) {
				t.Fatalf("err = %q on %q, want field %q containing %q", fe.Reason, fe.Field, tc.field, tc.detail)
			}
			if len(dec.Changes) != 0 {
				t.Fatalf("changes on error: %+v", dec.Changes)
			}
			if id, _ := tc.args["node_id"].(string); id != "" && !strings.HasPrefix(tc.name, "unknown arg") && !strings.HasPrefix(tc.name, "wrong arg") && (len(dec.Touched) != 1 || dec.Touched[0].ID != id) {
				t.Fatalf("touched = %v, want the node", dec.Touched)
			}
		})
	}
	// The empty document has no lines to replace or delete.
	_, err := decideDeleteLines(docState(""), docCmd("delete_lines", map[string]any{"start_line": 1, "end_line": 1}))
	if err == nil || !strings.Contains(err.Error(), "insert_lines") {
		t.Fatalf("empty doc delete: %v", err)
	}
}

func TestApplyTextEditRejectsBadHunks(t *testing.T) {
	for _, hunks := range [][]canvas.TextHunk{
		{{Line: 5, Del: 0}},            // past count+1
		{{Line: 3, Del: 1}},            // deletes past the end
		{{Line: 2, Del: 1}, {Line: 1}}, // out of order
		{{Line: 1, Del: -1}},
	} {
		if _, _, err := ApplyTextEdit("a\nb\n", hunks); !errors.Is(err, canvas.ErrUnprocessable) {
			t.Errorf("hunks %+v: err = %v", hunks, err)
		}
	}
	if _, _, err := ApplyTextEdit("a", []canvas.TextHunk{{Line: 2, Del: 1}}); err == nil {
		t.Error("deleting line 2 of a one-line text succeeded")
	}
	got, _, err := ApplyTextEdit("a\nb", []canvas.TextHunk{{Line: 3, Del: 0, Ins: "c"}})
	if err != nil || got != "a\nbc" { // appending at count+1 is a raw splice at the end
		t.Fatalf("append: %q %v", got, err)
	}
}

func TestLineModel(t *testing.T) {
	for text, want := range map[string][]string{
		"": {}, "a": {"a"}, "a\n": {"a"}, "\n": {""}, "a\n\n": {"a", ""}, "a\r\nb": {"a", "b"}, "a\rb\n": {"a\rb"},
	} {
		got := Lines(text)
		if fmt.Sprint(got) != fmt.Sprint(want) || LineCount(text) != len(want) {
			t.Errorf("Lines(%q) = %q (count %d), want %q", text, got, LineCount(text), want)
		}
	}
}

// eolStyle summarizes a text's line endings: "crlf", "lf", "mixed" or "none",
// and whether it ends with a line break.
func eolStyle(text string) (string, bool) {
	crlf, lf := strings.Count(text, "\r\n"), strings.Count(text, "\n")
	style := "none"
	switch {
	case lf == 0:
	case crlf == lf:
		style = "crlf"
	case crlf == 0:
		style = "lf"
	default:
		style = "mixed"
	}
	return style, strings.HasSuffix(text, "\n")
}

func FuzzDocEdit(f *testing.F) {
	f.Add("a\nb\nc\n", uint8(0), 1, 2, "x\ny", false)
	f.Add("a\r\nb\r\nc", uint8(1), 3, 0, "x\r\n", true)
	f.Add("", uint8(1), 0, 0, "", false)
	f.Add("日本\n語", uint8(2), 2, 2, "", false)
	f.Add("foo\r\nfoo bar\r\n", uint8(3), 0, 0, "o", true)
	f.Add("a\nb", uint8(4), 0, 0, "x\n", false)
	f.Add("a\rb\nb", uint8(4), 0, 0, "\r\r\n", true)
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, text string, op uint8, a, b int, content string, crlf bool) {
	{
		if crlf { // exercise CRLF documents often
			text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")
		}
		if strings.HasSuffix(text, "\r") {
			// An unterminated last line ending with CR turns into a CRLF line
			// break when a line is appended after it; the line model cannot
			// tell the two apart, so such texts are out of scope.
			text += "x"
		}
		var typ string
		args := map[string]any{}
		switch op % 5 {
		case 0:
			typ = "replace_lines"
			args["start_line"], args["end_line"], args["new_content"] = a, b, content
		case 1:
			typ = "insert_lines"
			args["insert_after_line"], args["content"] = a, content
		case 2:
			typ = "delete_lines"
			args["start_line"], args["end_line"] = a, b
		case 3:
			typ = "search_replace"
			args["search_pattern"], args["replace_with"] = content, "R"
		case 4: // the content as the replacement: line breaks and CRs inside a line
			typ = "search_replace"
			args["search_pattern"], args["replace_with"] = lastRune(text), content
		}
		got, dec, err := runDoc(t, text, typ, args)
		if err != nil {
			var fe *canvas.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("non-field error %v", err)
			}
			return
		}
		if newLineCount(t, dec.Result) != LineCount(got) {
			t.Fatalf("new_line_count %d, text has %d lines: %q", newLineCount(t, dec.Result), LineCount(got), got)
		}
		// Line-ending style and the final newline survive (unless the edit
		// emptied the document, or the document had no line break to copy).
		before, finalBefore := eolStyle(text)
		after, finalAfter := eolStyle(got)
		if got != "" && text != "" {
			emptyLast := false // an unterminated empty last line cannot exist (see doc.splice)
			if cl, _, _ := contentLines(content); op%5 <= 1 && cl[len(cl)-1] == "" {
				emptyLast = true
			}
			if op%5 == 2 && a >= 2 && a <= len(Lines(text)) && Lines(text)[a-2] == "" {
				emptyLast = true
			}
			if ls := Lines(text); op%5 == 4 && len(ls) > 0 {
				// The last line as search_replace leaves it (CRs before a line break dropped).
				r := strings.ReplaceAll(strings.ReplaceAll(ls[len(ls)-1], lastRune(text), content), "\r\n", "\n")
				r = strings.TrimRight(r, "\r")
				emptyLast = r == "" || strings.HasSuffix(r, "\n")
			}
			if finalBefore != finalAfter && !(emptyLast && !finalBefore) {
				t.Fatalf("final newline changed: %q -> %q", text, got)
			}
			if (before == "crlf" || before == "lf") && after != before && after != "none" {
				t.Fatalf("line endings changed from %s to %s: %q -> %q", before, after, text, got)
			}
		}
		// The diff of the edit reproduces the new text.
		checkDiffReproduces(t, text, got)
	}
}

// lastRune returns the last rune of text that is not white space ("b" when
// there is none), a search pattern that matches in the last line.
func lastRune(text string) string {
	t := strings.TrimRight(text, " \t\r\n")
	if t == "" {
		return "b"
	}
	_, n := utf8.DecodeLastRuneInString(t)
	return t[len(t)-n:]
}

// checkDiffReproduces rebuilds after's lines from before's lines and the
// diff's changes, and checks the unified diff's line counts.
func checkDiffReproduces(t testing.TB, before, after string) {
	t.Helper()
	d := Diff(before, after, DiffOptions{Context: DefaultContext})
	oldLines, newLines := Lines(before), Lines(after)
	if !d.HasChanges {
		if before != after {
			t.Fatalf("no changes reported for %q -> %q", before, after)
		}
		return
	}
	rebuilt := make([]*string, len(newLines))
	gone := map[int]bool{}
	for _, c := range d.Changes {
		switch c.Type {
		case ChangeAdd, ChangeModify:
			if c.Line < 1 || c.Line > len(newLines) || rebuilt[c.Line-1] != nil {
				t.Fatalf("bad change %+v", c)
			}
			rebuilt[c.Line-1] = c.After
		}
		switch c.Type {
		case ChangeDelete, ChangeModify:
			if c.OldLine < 1 || c.OldLine > len(oldLines) || *c.Before != oldLines[c.OldLine-1] {
				t.Fatalf("bad change %+v for old lines %q", c, oldLines)
			}
			gone[c.OldLine] = true
		}
	}
	keep := []string{}
	for i, l := range oldLines {
		if !gone[i+1] {
			keep = append(keep, l)
		}
	}
	k := 0
	for i := range rebuilt {
		if rebuilt[i] == nil {
			if k >= len(keep) {
				t.Fatalf("diff leaves too few kept lines for %q -> %q", before, after)
			}
			rebuilt[i] = &keep[k]
			k++
		}
	}
	if k != len(keep) {
		t.Fatalf("diff leaves %d unused old lines for %q -> %q", len(keep)-k, before, after)
	}
	for i := range rebuilt {
		if *rebuilt[i] != newLines[i] {
			t.Fatalf("line %d rebuilt as %q, want %q (%q -> %q)", i+1, *rebuilt[i], newLines[i], before, after)
		}
	}
	// Unified: applied to the old text, it gives the new text byte for byte.
	checkUnified(t, d.Diff, before, after)
}

// checkUnified applies a unified diff to before, as patch does (a line of the
// diff is its text up to a line feed, CR included; "\ No newline at end of
// file" takes the line feed off the line before it), checking that its ' '
// and '-' lines are the old text's, and compares the result with after.
func checkUnified(t testing.TB, diff, before, after string) {
	t.Helper()
	old := splitKeep(before) // lines with their terminators
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	var out strings.Builder
	next := 1 // next old line to copy
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "@@") {
			var os, oc, ns, nc int
			if _, err := fmt.Sscanf(normalizeRange(l), "@@ -%d,%d +%d,%d @@", &os, &oc, &ns, &nc); err != nil {
				t.Fatalf("bad hunk header %q: %v", l, err)
			}
			start := os
			if oc == 0 {
				start = os + 1
			}
			for ; next < start; next++ {
				out.WriteString(old[next-1])
			}
			continue
		}
		if strings.HasPrefix(l, `\`) {
			continue
		}
		text := l[1:]
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], `\`) {
			text += "\n"
		}
		switch l[0] {
		case ' ', '-':
			if next > len(old) || old[next-1] != text {
				t.Fatalf("diff line %q does not match old line %d of %q\n%s", l, next, before, diff)
			}
			if l[0] == ' ' {
				out.WriteString(text)
			}
			next++
		case '+':
			out.WriteString(text)
		default:
			t.Fatalf("bad diff line %q\n%s", l, diff)
		}
	}
	for ; next <= len(old); next++ {
		out.WriteString(old[next-1])
	}
	if out.String() != after {
		t.Fatalf("unified diff applied to %q gives %q, want %q\n%s", before, out.String(), after, diff)
	}
}

// normalizeRange rewrites "-5" and "+7" hunk ranges as "-5,1" and "+7,1".
func normalizeRange(h string) string {
	f := strings.Fields(h)
	for i := 1; i <= 2; i++ {
		if !strings.Contains(f[i], ",") {
			f[i] += ",1"
		}
	}
	return strings.Join(f, " ")
}

func TestDiff(t *testing.T) {
	before := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	after := "a\nB\nc\nd\ne\nf\ng\nh\nj\nk\n"
	d := Diff(before, after, DiffOptions{Context: 1})
	want := "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -8,3 +8,3 @@\n h\n-i\n j\n+k\n"
	if d.Diff != want {
		t.Fatalf("unified =\n%s\nwant\n%s", d.Diff, want)
	}
	got := []string{}
	for _, c := range d.Changes {
		got = append(got, fmt.Sprintf("%s@%d", c.Type, c.Line))
	}
	if fmt.Sprint(got) != "[modify@2 delete@9 add@10]" || !d.HasChanges || d.Modified != 1 || d.Added != 1 || d.Deleted != 1 {
		t.Fatalf("changes = %v %+v", got, d)
	}
	if d := Diff("x\n", "x\n", DiffOptions{}); d.HasChanges || d.Diff != "" || len(d.Changes) != 0 {
		t.Fatalf("identical diff = %+v", d)
	}
	if d := Diff("a", "a\n", DiffOptions{}); !strings.Contains(d.Diff, `\ No newline at end of file`) {
		t.Fatalf("final newline diff = %q", d.Diff)
	}
	if d := Diff("", "x\n", DiffOptions{}); d.Diff != "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n" {
		t.Fatalf("from empty = %q", d.Diff)
	}
	sp := Diff(before, after, DiffOptions{Format: DiffSplit, Context: 0})
	if sp.Format != DiffSplit || !strings.Contains(sp.Diff, "    2 b ~     2 B") || !strings.Contains(sp.Diff, "    9 i -       ") {
		t.Fatalf("split =\n%s", sp.Diff)
	}
	checkDiffReproduces(t, before, after)
	checkDiffReproduces(t, "a\r\nb\r\n", "a\r\nc\r\nb\r\n")
	checkDiffReproduces(t, "a\nb", "a\nb\n")
	checkDiffReproduces(t, "", "")
	checkDiffReproduces(t, "日本\n", "")
	if _, err := ParseDiffFormat("format", "side"); err == nil {
		t.Fatal("ParseDiffFormat accepted side")
	}
}

// TestDiffLineEndings: the unified diff writes each line with its own
// terminator, so CRLF documents, LF/CRLF conversions and final newlines come
// out exactly (as diff -u writes them) and the diff reproduces the text;
// changes carry line contents without terminators.
func TestDiffLineEndings(t *testing.T) {
	cases := []struct {
		name, before, after, unified, changes string
	}{
		{"crlf insert", "a\r\nb\r\n", "a\r\nc\r\nb\r\n",
			"--- a\n+++ b\n@@ -1,2 +1,3 @@\n a\r\n+c\r\n b\r\n", `add 2 "" "c"`},
		{"crlf modify", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n",
			"--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n", `modify 2 "b" "B"`},
		{"lf to crlf", "a\nb\n", "a\r\nb\r\n",
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-a\n-b\n+a\r\n+b\r\n", `modify 1 "a" "a"; modify 2 "b" "b"`},
		{"crlf to lf in one line", "a\r\nb\r\n", "a\r\nb\n",
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+b\n", `modify 2 "b" "b"`},
		{"crlf final newline added", "a\r\nb", "a\r\nb\r\n",
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\r\n-b\n\\ No newline at end of file\n+b\r\n", `modify 2 "b" "b"`},
		{"crlf unterminated last line", "a\r\n", "a\r\nb",
			"--- a\n+++ b\n@@ -1 +1,2 @@\n a\r\n+b\n\\ No newline at end of file\n", `add 2 "" "b"`},
		{"mixed endings delete", "a\nb\r\nc\n", "a\nc\n",
			"--- a\n+++ b\n@@ -1,3 +1,2 @@\n a\n-b\r\n c\n", `delete 2 "b" ""`},
		{"a lone CR stays in its line", "x\ry\r\n", "x\rz\r\n",
			"--- a\n+++ b\n@@ -1 +1 @@\n-x\ry\r\n+x\rz\r\n", `modify 1 "x\ry" "x\rz"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Diff(c.before, c.after, DiffOptions{Context: DefaultContext})
			if d.Diff != c.unified {
				t.Errorf("unified = %q, want %q", d.Diff, c.unified)
			}
			var got []string
			for _, ch := range d.Changes {
				b, a := "", ""
				if ch.Before != nil {
					b = *ch.Before
				}
				if ch.After != nil {
					a = *ch.After
				}
				got = append(got, fmt.Sprintf("%s %d %q %q", ch.Type, ch.Line, b, a))
			}
			if strings.Join(got, "; ") != c.changes {
				t.Errorf("changes = %s, want %s", strings.Join(got, "; "), c.changes)
			}
			checkDiffReproduces(t, c.before, c.after)
		})
	}
}

func TestContentAndSelection(t *testing.T) {
	text := "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\n"
	c, err := Content(text, 2, 3)
	if err != nil || c.Content != "l2\nl3\n" || c.LineCount != 12 || len(c.NumberedLines) != 2 || c.NumberedLines[1] != (NumberedLine{3, "l3"}) {
		t.Fatalf("Content = %+v %v", c, err)
	}
	if c, _ := Content(text, 0, 0); c.Content != text || len(c.NumberedLines) != 12 {
		t.Fatalf("whole Content = %+v", c)
	}
	if _, err := Content(text, 5, 13); err == nil || !strings.Contains(err.Error(), "end_line") {
		t.Fatalf("Content out of range: %v", err)
	}
	if c, err := Content("", 0, 0); err != nil || c.LineCount != 0 {
		t.Fatalf("empty Content = %+v %v", c, err)
	}
	sel, err := SelectContext(text, "go", 7, 8, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Selection.Content != "l7\nl8" || sel.Context.Before != "l2\nl3\nl4\nl5\nl6" || sel.Context.After != "l9\nl10\nl11\nl12" ||
		sel.Context.FullContent != text || sel.FormattedForChat != "[Selected from lines 7-8]:\n```go\nl7\nl8\n```\n\nUser question: " {
		t.Fatalf("selection = %+v", sel)
	}
	sel, err = SelectContext("héllo wörld\r\nsecond\r\n", "", 1, 1, 2, 6)
	if err != nil || sel.Selection.Content != "éllo" || sel.Context.Before != "" || sel.Context.After != "second" {
		t.Fatalf("column selection = %+v %v", sel, err)
	}
	sel, err = SelectContext("abc\ndef\n", "", 1, 2, 3, 2)
	if err != nil || sel.Selection.Content != "c\nd" {
		t.Fatalf("multi-line column selection = %+v %v", sel, err)
	}
	for _, bad := range [][4]int{{0, 1, 0, 0}, {2, 1, 0, 0}, {1, 13, 0, 0}, {1, 1, 9, 0}, {1, 1, 3, 2}} {
		if _, err := SelectContext(text, "", bad[0], bad[1], bad[2], bad[3]); !errors.Is(err, canvas.ErrUnprocessable) {
			t.Errorf("SelectContext%v: err = %v", bad, err)
		}
	}
}

// bigDoc returns a document of n lines of ~50 bytes.
func bigDoc(n int, eol string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "line %05d: the quick brown fox jumps over the dog%s", i, eol)
	}
	return b.String()
}

// BenchmarkLineEdit10k decides and applies (with undo history) a
// replace_lines on a 10,000-line document (~480 KB): the reducer's share of
// one line edit, at lines spread over the document.
func BenchmarkLineEdit10k(b *testing.B) {
	s := docState(bigDoc(10000, "\n"))
	b.ReportAllocs()
	durs := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		line := 1 + (i*7919)%10000
		cmd := docCmd("replace_lines", map[string]any{"start_line": line, "end_line": line, "new_content": "edited line"})
		cmd.Rev = s.Rev + 1
		t0 := time.Now()
		dec, err := Decide(s, cmd)
		if err != nil {
			b.Fatal(err)
		}
		c := canvas.Commit{CanvasID: "c", Rev: cmd.Rev, Type: cmd.Type, Args: cmd.Args, ActorID: "u", Changes: dec.Changes}
		if err := Apply(s, &c); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	reportPercentiles(b, durs)
}

func reportPercentiles(b *testing.B, durs []time.Duration) {
	if len(durs) < 2 {
		return
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkDiff10k100 diffs a 10,000-line document against a copy with 100 changed lines.
func BenchmarkDiff10k100(b *testing.B) {
	before := bigDoc(10000, "\n")
	lines := strings.SplitAfter(before, "\n")
	for i := 0; i < 100; i++ {
		lines[i*97] = fmt.Sprintf("changed %d\n", i)
	}
	after := strings.Join(lines, "")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		d := Diff(before, after, DiffOptions{Context: DefaultContext})
		if d.Modified != 100 {
			b.Fatalf("modified = %d", d.Modified)
		}
	}
}

// BenchmarkSearchReplace10k replaces a word on every line of a 10,000-line document.
func BenchmarkSearchReplace10k(b *testing.B) {
	s := docState(bigDoc(10000, "\n"))
	cmd := docCmd("search_replace", map[string]any{"search_pattern": "fox", "replace_with": "cat"})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := decideSearchReplace(s, cmd); err != nil {
			b.Fatal(err)
		}
	}
}
