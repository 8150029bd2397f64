package canvas

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// lineStarts returns the offsets at which lines of s start, plus len(s).
func lineStarts(s string) []int {
	out := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && i+1 < len(s) {
			out = append(out, i+1)
		}
	}
	if len(s) > 0 {
		out = append(out, len(s))
	}
	return out
}

func checkDocText(t *testing.T, d DocText, want string) {
	t.Helper()
	if got := d.String(); got != want {
		t.Fatalf("String() = %q..., want %q...", got[:min(len(got), 60)], want[:min(len(want), 60)])
	}
	if d.Len() != len(want) || d.Newlines() != strings.Count(want, "\n") {
		t.Fatalf("Len %d Newlines %d, want %d %d", d.Len(), d.Newlines(), len(want), strings.Count(want, "\n"))
	}
	// The chunking is a function of the content.
	if canon := NewDocText(want); !reflect.DeepEqual(d, canon) {
		t.Fatalf("chunks differ from those of NewDocText of the same text (%d vs %d chunks)", len(d.t.chunks), len(canon.t.chunks))
	}
	if d.t != nil {
		for i, c := range d.t.chunks {
			if c == "" || i < len(d.t.chunks)-1 && c[len(c)-1] != '\n' {
				t.Fatalf("chunk %d of %d is empty or does not end a line", i, len(d.t.chunks))
			}
		}
	}
	k, every := 0, max(1, strings.Count(want, "\n")/50)
	for i := 0; i < len(want); i++ {
		if want[i] == '\n' {
			k++
			if k%every != 0 && k > 3 {
				continue
			}
			if off, ok := d.NewlineOffset(k); !ok || off != i+1 {
				t.Fatalf("NewlineOffset(%d) = %d %v, want %d", k, off, ok, i+1)
			}
		}
	}
	if _, ok := d.NewlineOffset(k + 1); ok {
		t.Fatalf("NewlineOffset past the last newline is ok")
	}
}

// TestDocTextSplice applies random line splices to a DocText and to a
// string and checks they agree, that untouched chunks are shared and that
// the chunking stays canonical.
func TestDocTextSplice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("x", rng.IntN(80)))
	}
	text := b.String()
	d := NewDocText(text)
	checkDocText(t, d, text)
	if len(d.t.chunks) < 10 {
		t.Fatalf("%d chunks for %d bytes", len(d.t.chunks), len(text))
	}
	for step := 0; step < 400; step++ {
		starts := lineStarts(text)
		var sp []TextSplice
		pos := 0
		for h := 0; h < 1+rng.IntN(3); h++ {
			i := firstAtOrAfter(starts, pos) + rng.IntN(max(1, len(starts)/4))
			if i >= len(starts) {
				break
			}
			j := min(i+rng.IntN(4), len(starts)-1)
			ins := ""
			switch rng.IntN(4) {
			case 0:
			case 1:
				ins = fmt.Sprintf("new %d\n", step)
			case 2:
				ins = strings.Repeat(fmt.Sprintf("block %d\r\n", step), rng.IntN(400))
			case 3:
				ins = "no newline"
			}
			sp = append(sp, TextSplice{Start: starts[i], End: starts[j], Ins: ins})
			pos = starts[j] + 1
		}
		want := text
		for k := len(sp) - 1; k >= 0; k-- {
			want = want[:sp[k].Start] + sp[k].Ins + want[sp[k].End:]
		}
		nd := d.Splice(sp)
		checkDocText(t, nd, want)
		if len(sp) == 1 && len(nd.t.chunks) > 8 {
			shared := 0
			old := map[string]bool{}
			for _, c := range d.t.chunks {
				old[c] = true
			}
			for _, c := range nd.t.chunks {
				if old[c] {
					shared++
				}
			}
			if shared < len(nd.t.chunks)-8 {
				t.Fatalf("step %d: only %d of %d chunks shared", step, shared, len(nd.t.chunks))
			}
		}
		if step%50 == 0 {
			checkDocText(t, d, text) // d is immutable
		}
		d, text = nd, want
		if len(text) > 400000 {
			text = text[:strings.LastIndexByte(text[:200000], '\n')+1]
			d = NewDocText(text)
		}
		if len(text) < 1000 {
			d, text = NewDocText(strings.Repeat(text+"\n", 50)), strings.Repeat(text+"\n", 50)
		}
	}
	// Delete everything, then build from nothing.
	d = d.Splice([]TextSplice{{Start: 0, End: d.Len()}})
	checkDocText(t, d, "")
	d = d.Splice([]TextSplice{{Start: 0, End: 0, Ins: "a\nb"}})
	checkDocText(t, d, "a\nb")
	d = d.Splice([]TextSplice{{Start: 2, End: 3, Ins: "c\n"}})
	checkDocText(t, d, "a\nc\n")
}

// firstAtOrAfter returns the index of the first start ≥ pos.
func firstAtOrAfter(starts []int, pos int) int {
	i := 0
	for i < len(starts) && starts[i] < pos {
		i++
	}
	return i
}

// TestDocTextJSON: a DocText encodes exactly as the same text in a string,
// with and without HTML escaping, inside props.
func TestDocTextJSON(t *testing.T) {
	text := strings.Repeat("<a href=\"x&y\">\u2028\t\x01 é \xff\r\n", 2000) + "end"
	props := map[string]any{"text": text, "language": "go"}
	dprops := map[string]any{"text": NewDocText(text), "language": "go"}
	a, err1 := json.Marshal(props)
	b, err2 := json.Marshal(dprops)
	if err1 != nil || err2 != nil || string(a) != string(b) {
		t.Fatalf("json.Marshal differs: %v %v", err1, err2)
	}
	var wa, wb strings.Builder
	ea, eb := json.NewEncoder(&wa), json.NewEncoder(&wb)
	ea.SetEscapeHTML(false)
	eb.SetEscapeHTML(false)
	_ = ea.Encode(props)
	_ = eb.Encode(dprops)
	if wa.String() != wb.String() {
		t.Fatalf("Encoder without HTML escaping differs")
	}
	ia, _ := json.MarshalIndent(props, "", "  ")
	ib, _ := json.MarshalIndent(dprops, "", "  ")
	if string(ia) != string(ib) {
		t.Fatalf("MarshalIndent differs")
	}
	if s, ok := PropText(dprops["text"]); !ok || s != text {
		t.Fatalf("PropText of a DocText")
	}
	if s, ok := PropText(text); !ok || s != text {
		t.Fatalf("PropText of a string")
	}
	if _, ok := PropText(3.0); ok {
		t.Fatalf("PropText of a number is ok")
	}
	var zero DocText
	if z, _ := json.Marshal(zero); string(z) != `""` || zero.String() != "" || zero.Len() != 0 {
		t.Fatalf("zero DocText: %s", z)
	}
}

// BenchmarkDocTextSplice: one line replaced in a 10,000-line text.
func BenchmarkDocTextSplice(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&sb, "line %05d: the quick brown fox jumps over the dog\n", i)
	}
	d := NewDocText(sb.String())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		line := 1 + (i*7919)%9999
		start, _ := d.NewlineOffset(line)
		end, _ := d.NewlineOffset(line + 1)
		d = d.Splice([]TextSplice{{Start: start, End: end, Ins: fmt.Sprintf("edited %d\n", i)}})
	}
}

// TestDocTextSpliceJoinsBoundaryLine: an insertion without a line break
// just before a line that ends a chunk changes that line, so its boundary
// must be decided anew.
func TestDocTextSpliceJoinsBoundaryLine(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 4000; i++ {
		fmt.Fprintf(&b, "line %d of the text\n", i)
	}
	text := b.String()
	d := NewDocText(text)
	for k := 1; k < len(d.t.ends)-1; k++ {
		e := d.t.ends[k]
		ls := strings.LastIndexByte(text[:e-1], '\n') + 1
		prev := strings.LastIndexByte(text[:ls-1], '\n') + 1
		for _, sp := range []TextSplice{{Start: ls, End: ls, Ins: "joined "}, {Start: prev, End: ls, Ins: "x"}, {Start: ls, End: e, Ins: ""}} {
			want := text[:sp.Start] + sp.Ins + text[sp.End:]
			checkDocText(t, d.Splice([]TextSplice{sp}), want)
		}
	}
}

// BenchmarkNewDocText: chunking a 10,000-line text (a doc's first edit after
// a create, or a stored snapshot's decode).
func BenchmarkNewDocText(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&sb, "line %05d: the quick brown fox jumps over the dog\n", i)
	}
	text := sb.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		_ = NewDocText(text)
	}
}
