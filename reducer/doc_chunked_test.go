package reducer

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// chunkyDoc returns a document of n lines of varied length (several DocText
// chunks), with CRLF line breaks when crlf is set and without a final line
// break when unterminated is set.
func chunkyDoc(rng *rand.Rand, n int, crlf, unterminated bool) string {
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "line %d %s", i, strings.Repeat("w", rng.IntN(120)))
		if i%97 == 0 {
			b.WriteString(" token")
		}
		if i < n-1 || !unterminated {
			b.WriteString(eol)
		}
	}
	return b.String()
}

// withStringTexts returns a copy of s whose doc texts are plain strings, the
// representation the state had before canvas.DocText.
func withStringTexts(s *canvas.State) *canvas.State {
	c := s.Clone()
	for id, n := range c.Nodes {
		if t, ok := n.Props[DocTextProp].(canvas.DocText); ok {
			nn := *n
			nn.Props = maps.Clone(n.Props)
			nn.Props[DocTextProp] = t.String()
			c.Nodes[id] = &nn
		}
	}
	return c
}

// TestDocTextRepresentation drives line edits on large documents (LF, CRLF,
// no final newline) through Decide and Apply and checks that doc texts live
// in the state as canvas.DocText, that every edit gives the text the plain
// string splice (ApplyTextEdit) gives, and that states, nodes and
// snapshots encode byte for byte as with string texts and decode to equal
// states.
func TestDocTextRepresentation(t *testing.T) {
	for _, tc := range []struct {
		name               string
		crlf, unterminated bool
	}{{"lf", false, false}, {"crlf", true, false}, {"lf-unterminated", false, true}, {"crlf-unterminated", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
			text := chunkyDoc(rng, 2500, tc.crlf, tc.unterminated)
			h := newRH(t)
			create, _ := json.Marshal(map[string]any{"id": "doc", "type": DocType, "props": map[string]any{"text": text, "language": "go"}})
			h.do("create_node", string(create))
			ref := text
			for step := 0; step < 150; step++ {
				lines := LineCount(ref)
				if lines < 10 {
					t.Fatalf("step %d: the document shrank to %d lines", step, lines)
				}
				a := 1 + rng.IntN(lines)
				b := min(lines, a+rng.IntN(3))
				content := fmt.Sprintf("edit %d", step)
				if rng.IntN(3) == 0 {
					content += "\nsecond line\n"
				}
				var typ string
				args := map[string]any{"node_id": "doc"}
				switch rng.IntN(5) {
				case 0, 1:
					typ = "replace_lines"
					args["start_line"], args["end_line"], args["new_content"] = a, b, content
				case 2:
					typ = "insert_lines"
					args["insert_after_line"], args["content"] = []int{0, a, lines}[rng.IntN(3)], content
				case 3:
					typ = "delete_lines"
					args["start_line"], args["end_line"] = a, b
					if rng.IntN(4) == 0 { // delete to the end: the final newline rule
						args["start_line"], args["end_line"] = max(2, lines-2), lines
					}
				case 4:
					typ = "search_replace"
					args["search_pattern"], args["replace_with"], args["max_replacements"] = "token", "TOKEN", 3
				}
				raw, _ := json.Marshal(args)
				dec := h.do(typ, string(raw))
				for _, ch := range dec.Changes {
					var err error
					if ref, _, err = ApplyTextEdit(ref, ch.Edit.Hunks); err != nil {
						t.Fatalf("step %d: string splice: %v", step, err)
					}
				}
				dt, ok := h.node("doc").Props[DocTextProp].(canvas.DocText)
				if !ok {
					t.Fatalf("step %d: props.text is a %T, want canvas.DocText", step, h.node("doc").Props[DocTextProp])
				}
				if got := dt.String(); got != ref {
					t.Fatalf("step %d (%s %s): text differs from the string splice", step, typ, raw)
				}
				if n := newLineCount(t, dec.Result); n != LineCount(ref) {
					t.Fatalf("step %d: new_line_count %d, text has %d lines", step, n, LineCount(ref))
				}
				if got, want := strings.HasSuffix(ref, "\n"), !tc.unterminated; got != want && ref != "" {
					t.Fatalf("step %d: final newline %v, want %v", step, got, want)
				}
			}
			// Wire forms are those of string texts.
			plain := withStringTexts(h.s)
			b1, err1 := EncodeState(h.s)
			b2, err2 := EncodeState(plain)
			if err1 != nil || err2 != nil || string(b1) != string(b2) {
				t.Fatalf("EncodeState differs from that of string texts (%v %v)", err1, err2)
			}
			n1, _ := json.Marshal(h.s.Scene())
			n2, _ := json.Marshal(plain.Scene())
			if string(n1) != string(n2) {
				t.Fatalf("scene JSON differs from that of string texts")
			}
			// Decoded, replayed and JSON-logged states equal the live one.
			d, err := DecodeState(b1)
			if err != nil || !reflect.DeepEqual(d, h.s) {
				t.Fatalf("DecodeState(EncodeState(s)) differs from s: %v", err)
			}
			d2, err := DecodeState(b2)
			if err != nil || !reflect.DeepEqual(d2, h.s) {
				t.Fatalf("a snapshot written with string texts decodes to another state: %v", err)
			}
			r, err := Replay(h.log)
			if err != nil || !reflect.DeepEqual(r, h.s) {
				t.Fatalf("replay differs from the live state: %v", err)
			}
			// Readers get the text.
			got, lang, err := DocText(h.node("doc"), "node_id")
			if err != nil || got != ref || lang != "go" {
				t.Fatalf("DocText: %v %q", err, lang)
			}
			// Undo walks back through inverse splices located in the chunk index.
			for i := 0; i < 5; i++ {
				h.do("undo", `{}`)
			}
			for _, c := range h.log[len(h.log)-5:] {
				for _, ch := range c.Changes {
					if ch.Op == canvas.OpEdit {
						if ref, _, err = ApplyTextEdit(ref, ch.Edit.Hunks); err != nil {
							t.Fatalf("undo splice: %v", err)
						}
					}
				}
			}
			if s, _ := canvas.PropText(h.node("doc").Props[DocTextProp]); s != ref {
				t.Fatalf("text after undo differs from the string splice")
			}
		})
	}
}

// TestDocEditMultiChunk runs the FuzzDocEdit checks on documents of many
// DocText chunks, where lines are located through the chunk index.
func TestDocEditMultiChunk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		crlf := rng.IntN(2) == 0
		text := chunkyDoc(rng, 400+rng.IntN(400), crlf, rng.IntN(3) == 0)
		n := LineCount(text)
		a := rng.IntN(n + 2)
		b := a + rng.IntN(3)
		if rng.IntN(5) == 0 {
			b = n
		}
		content := []string{"", "x", "x\n", "x\ny", "token", "\n"}[rng.IntN(6)]
		if crlf {
			content = strings.ReplaceAll(content, "\n", "\r\n")
		}
		fuzzBody(t, text, uint8(rng.IntN(4)), a, b, content, crlf)
	}
}
