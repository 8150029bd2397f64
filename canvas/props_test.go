package canvas

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// props decodes JSON props as a request's args hold them (numbers as json.Number).
func props(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := UnmarshalExact([]byte(s), &m); err != nil {
		t.Fatalf("props %s: %v", s, err)
	}
	return m
}

func TestValidatePropsAcceptsTheModel(t *testing.T) {
	rich := `{"type":"doc","content":[{"type":"heading","attrs":{"level":2,"dir":"auto"},"content":[{"type":"text","text":"Title","marks":[{"type":"bold"}]}]},` +
		`{"type":"bulletList","content":[{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"see ","marks":[{"type":"link","attrs":{"href":"https://example.com","target":"_blank","rel":null,"class":null}}]},{"type":"hardBreak"},{"type":"text","text":"x"}]}]}]},` +
		`{"type":"codeBlock","attrs":{"language":"go"},"content":[{"type":"text","text":"a := 1"}]},{"type":"paragraph"}]}`
	for _, c := range []struct{ kind, props string }{
		{"geo", `{}`},
		{"geo", `{"geo":"cloud","color":"light-violet","fillColor":"#ABCDEF12","fill":"lined-fill","dash":"dotted","size":"xl","strokeWidth":0,"roughness":5,"roundness":"round","opacity":0.5,"text":"hi","font":"liberation","fontSize":1000,"align":"end","verticalAlign":"start","labelColor":"transparent","link":"#frame-2","locked":true,"meta":{"anything":[1,{"x":null}]}}`},
		{"geo", `{"richText":` + rich + `,"text":"plain"}`},
		{"geo", `{"link":"https://example.com/a?b#c"}`},
		{"geo", `{"link":"mailto:a@example.com"}`},
		{"geo", `{"link":"docs/page.html"}`},
		{"geo", `{"color":"#fff"}`},
		{"note", `{"color":"yellow","text":"n","align":"middle","labelColor":"black"}`},
		{"text", `{"autoSize":false,"text":"","size":"s","font":"mono"}`},
		{"draw", `{"segments":[{"type":"free","points":[{"x":0,"y":0,"z":0.5},{"x":10,"y":12}]},{"type":"straight","points":[{"x":1,"y":2}]}],"closed":true,"fill":"solid"}`},
		{"draw", `{"segments":[]}`},
		{"line", `{"points":[{"x":0,"y":0},{"x":-50.5,"y":1e3}],"routing":"curved","closed":false,"roundness":"sharp"}`},
		{"frame", `{"color":"red","opacity":1,"locked":false}`},
		{"image", `{"url":"data:image/svg+xml;base64,PHN2Zy8+","altText":"a cat","crop":{"x":0,"y":0.25,"w":1,"h":0.5},"flipX":true,"flipY":false,"roundness":"round","strokeWidth":2}`},
		{"image", `{"url":"https://example.com/cat.png"}`},
		{"embed", `{"url":"https://www.youtube.com/embed/x","color":"grey"}`},
		{"embed", `{"url":"http://localhost:8080/"}`},
		{"group", `{"opacity":0.2,"locked":true}`},
		{"doc", `{"text":"def main():\n    pass\n","language":"python","color":"black"}`},
		{EdgeKind, `{"points":[{"x":0,"y":0},{"x":5,"y":5},{"x":10,"y":0}],"routing":"elbow","arrowheadStart":"crowfoot-one-or-many","arrowheadEnd":"inverted","fromSide":"top","toSide":"left","text":"calls","richText":{"type":"doc","content":[]},"labelColor":"red","dash":"draw"}`},
	} {
		if err := ValidateProps(c.kind, props(t, c.props), "args.props"); err != nil {
			t.Errorf("%s %s: %v", c.kind, c.props, err)
		}
	}
}

func TestValidatePropsRefusesNamingTheField(t *testing.T) {
	for _, c := range []struct{ kind, props, field, says string }{
		{"geo", `{"size":"xxl"}`, "args.props.size", "s, m, l, xl"},
		{"geo", `{"dash":"wavy"}`, "args.props.dash", "draw, solid, dashed, dotted"},
		{"geo", `{"fill":"tint"}`, "args.props.fill", "lined-fill"},
		{"geo", `{"geo":"pill"}`, "args.props.geo", "rhombus-2"},
		{"geo", `{"weight":3}`, "args.props.weight", "props.meta"},
		{"geo", `{"start_binding":"a"}`, "args.props.start_binding", "takes geo, color"},
		{"geo", `{"color":"bleu"}`, "args.props.color", "#rrggbb"},
		{"geo", `{"color":"#12345"}`, "args.props.color", "hex colour"},
		{"geo", `{"color":7}`, "args.props.color", "got 7"},
		{"geo", `{"opacity":1.5}`, "args.props.opacity", "from 0 to 1"},
		{"geo", `{"opacity":"0.5"}`, "args.props.opacity", "a number"},
		{"geo", `{"strokeWidth":65}`, "args.props.strokeWidth", "0 to 64"},
		{"geo", `{"fontSize":0}`, "args.props.fontSize", "1 to 1000"},
		{"geo", `{"roughness":1e400}`, "args.props.roughness", "a number"},
		{"geo", `{"locked":"yes"}`, "args.props.locked", "true or false"},
		{"geo", `{"text":null}`, "args.props.text", "null"},
		{"geo", `{"text":"` + strings.Repeat("é", MaxTextChars+1) + `"}`, "args.props.text", "100000"},
		{"geo", `{"link":"javascript:alert(1)"}`, "args.props.link", `"javascript:"`},
		{"geo", `{"link":"JavaScript:alert(1)"}`, "args.props.link", "not allowed"},
		{"geo", `{"link":" javascript:alert(1)"}`, "args.props.link", "white space"},
		{"geo", `{"link":"java\tscript:alert(1)"}`, "args.props.link", "control"},
		{"geo", `{"link":"data:text/html,x"}`, "args.props.link", `"data:"`},
		{"geo", `{"link":""}`, "args.props.link", "empty"},
		{"geo", `{"link":"https://x/` + strings.Repeat("a", MaxLinkChars) + `"}`, "args.props.link", "2048"},
		{"geo", `{"meta":[1]}`, "args.props.meta", "JSON object"},
		{"geo", `{"meta":"x"}`, "args.props.meta", "JSON object"},
		{"note", `{"geo":"rectangle"}`, "args.props.geo", "a note node does not take"},
		{"note", `{"fill":"solid"}`, "args.props.fill", "note node"},
		{"text", `{"autoSize":1}`, "args.props.autoSize", "true or false"},
		{"draw", `{"segments":{"a":1}}`, "args.props.segments", "array of pen strokes"},
		{"draw", `{"segments":[{"type":"curly","points":[{"x":0,"y":0}]}]}`, "args.props.segments[0].type", "free, straight"},
		{"draw", `{"segments":[{"type":"free"}]}`, "args.props.segments[0].points", "required"},
		{"draw", `{"segments":[{"type":"free","points":[{"x":0,"y":0,"z":2}]}]}`, "args.props.segments[0].points[0].z", "0 to 1"},
		{"draw", `{"segments":[{"type":"free","points":[{"x":0,"y":0}],"pen":true}]}`, "args.props.segments[0].pen", "type and points only"},
		{"line", `{"points":[{"x":0,"y":0}]}`, "args.props.points", "2 to 10000"},
		{"line", `{"points":{"a1":{"id":"a1","index":"a1","x":0,"y":0}}}`, "args.props.points", "array of 2"},
		{"line", `{"points":[{"x":0,"y":0},{"x":1}]}`, "args.props.points[1].y", "required"},
		{"line", `{"points":[{"x":0,"y":0},{"x":1,"y":"2"}]}`, "args.props.points[1].y", "a number"},
		{"line", `{"points":[{"x":0,"y":0},{"x":1,"y":2,"z":0}]}`, "args.props.points[1].z", "x and y only"},
		{"line", `{"routing":"elbow"}`, "args.props.routing", "straight, curved"},
		{"frame", `{"fill":"solid"}`, "args.props.fill", "frame node"},
		{"image", `{"src":"data:image/png;base64,AAAA"}`, "args.props.src", "url"},
		{"image", `{"url":"data:image/bmp;base64,AAAA"}`, "args.props.url", "data:image/"},
		{"image", `{"url":"data:image/png;base64,<script>"}`, "args.props.url", "data:image/"},
		{"image", `{"url":"http://example.com/a.png"}`, "args.props.url", "https:"},
		{"image", `{"url":"javascript:alert(1)"}`, "args.props.url", "https:"},
		{"image", `{"crop":{"x":0,"y":0,"w":2,"h":1}}`, "args.props.crop.w", "0 to 1"},
		{"image", `{"crop":{"x":0,"y":0,"w":1}}`, "args.props.crop.h", "required"},
		{"image", `{"crop":{"x":0,"y":0,"w":1,"h":1,"z":0}}`, "args.props.crop.z", "x, y, w and h only"},
		{"embed", `{"url":"ftp://example.com/"}`, "args.props.url", "https: or http:"},
		{"embed", `{"url":"https://"}`, "args.props.url", "https: or http:"},
		{"group", `{"color":"red"}`, "args.props.color", "group node"},
		{"doc", `{"text":3}`, "args.props.text", "a string"},
		{"doc", `{"language":"` + strings.Repeat("x", 65) + `"}`, "args.props.language", "64"},
		{"doc", `{"fill":"none"}`, "args.props.fill", "doc node"},
		{EdgeKind, `{"points":[{"x":0,"y":0}]}`, "args.props.points", "2 to 10000"},
		{EdgeKind, `{"routing":"zigzag"}`, "args.props.routing", "elbow"},
		{EdgeKind, `{"arrowheadEnd":"spear"}`, "args.props.arrowheadEnd", "crowfoot-many"},
		{EdgeKind, `{"fromSide":"north"}`, "args.props.fromSide", "top, right, bottom, left"},
		{EdgeKind, `{"align":"start"}`, "args.props.align", "an edge does not take"},
		{EdgeKind, `{"label":"x"}`, "args.props.label", "props.meta"},
		{"geo", `{"richText":"hi"}`, "args.props.richText", "rich-text document"},
		{"geo", `{"richText":{"type":"paragraph"}}`, "args.props.richText.type", `"doc"`},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"table"}]}}`, "args.props.richText.content[0].type", "paragraph, heading"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a"},{"type":"image"}]}]}}`, "args.props.richText.content[0].content[1].type", "hardBreak"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a","marks":[{"type":"superscript"}]}]}]}}`, "args.props.richText.content[0].content[0].marks[0].type", "underline"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a","marks":[{"type":"link","attrs":{"href":"javascript:alert(1)"}}]}]}]}}`, "args.props.richText.content[0].content[0].marks[0].attrs.href", "not allowed"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a","marks":[{"type":"link"}]}]}]}}`, "args.props.richText.content[0].content[0].marks[0].attrs.href", "required"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"heading","attrs":{"level":7}}]}}`, "args.props.richText.content[0].attrs.level", "1 to 6"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"paragraph","attrs":{"style":"x"}}]}}`, "args.props.richText.content[0].attrs.style", "dir"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"paragraph","text":"x"}]}}`, "args.props.richText.content[0].text", "only text nodes"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"text"}]}}`, "args.props.richText.content[0].text", "required"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"doc"}]}}`, "args.props.richText.content[0].type", "paragraph"},
		{"geo", `{"richText":{"type":"doc","content":[{"type":"paragraph","content":[{"type":"hardBreak","content":[]}]}]}}`, "args.props.richText.content[0].content[0].content", "no content"},
	} {
		err := ValidateProps(c.kind, props(t, c.props), "args.props")
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrUnprocessable) {
			t.Errorf("%s %.80s: got %v, want a 422 on %s", c.kind, c.props, err, c.field)
			continue
		}
		if fe.Field != c.field || !strings.Contains(fe.Reason, c.says) {
			t.Errorf("%s %.80s: got %s: %s; want %s saying %q", c.kind, c.props, fe.Field, fe.Reason, c.field, c.says)
		}
	}
}

// Of several bad keys the error names the first in byte order, whatever
// the map's order.
func TestValidatePropsNamesTheFirstBadKey(t *testing.T) {
	p := props(t, `{"size":"xxl","dash":"wavy","fill":"tint","zz":1,"color":"blue"}`)
	for range 50 {
		err := ValidateProps("geo", p, "args.props")
		if fe, ok := err.(*FieldError); !ok || fe.Field != "args.props.dash" {
			t.Fatalf("got %v, want args.props.dash", err)
		}
	}
}

func TestRichTextPlain(t *testing.T) {
	for _, c := range []struct{ rich, want string }{
		{`{"type":"doc"}`, ""},
		{`{"type":"doc","content":[{"type":"paragraph"}]}`, ""},
		{`{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a"},{"type":"text","text":"b","marks":[{"type":"bold"}]}]},{"type":"paragraph","content":[{"type":"text","text":"c"}]}]}`, "ab\nc"},
		{`{"type":"doc","content":[{"type":"heading","attrs":{"level":1},"content":[{"type":"text","text":"T"}]},{"type":"bulletList","content":[{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"one"}]}]},{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"two"}]},{"type":"orderedList","content":[{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"2.1"}]}]}]}]}]}]}`, "T\none\ntwo\n2.1"},
		{`{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a"},{"type":"hardBreak"},{"type":"text","text":"b"}]},{"type":"paragraph"},{"type":"blockquote","content":[{"type":"paragraph","content":[{"type":"text","text":"q"}]}]},{"type":"codeBlock","content":[{"type":"text","text":"x\ny"}]}]}`, "a\nb\n\nq\nx\ny"},
	} {
		v := props(t, `{"r":`+c.rich+`}`)["r"]
		if err := CheckRichText(v, "r"); err != nil {
			t.Errorf("%s: %v", c.rich, err)
		}
		if got := RichTextPlain(v); got != c.want {
			t.Errorf("%s: plain text %q, want %q", c.rich, got, c.want)
		}
	}
}

// Every kind lists meta, and docs/model.md's table of kinds lists exactly
// the keys the schema has (so the document and the validator agree).
func TestPropKeysMatchTheModelDocument(t *testing.T) {
	doc, err := os.ReadFile("../docs/model.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\|(.*?)\\| (`.*) \\|$")
	code := regexp.MustCompile("`([A-Za-z]+)`")
	seen := 0
	_, table, ok := strings.Cut(string(doc), "### Per kind")
	if !ok {
		t.Fatal(`docs/model.md has no "### Per kind"`)
	}
	table, _, _ = strings.Cut(table, "\n\n`geo` is")
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		kind := m[1]
		if !ValidNodeType(kind) {
			continue
		}
		seen++
		var want []string
		own := m[2] // its own keys, with what is said of them in parentheses
		for paren := regexp.MustCompile(`\([^()]*\)`); paren.MatchString(own); {
			own = paren.ReplaceAllString(own, "")
		}
		for _, c := range code.FindAllStringSubmatch(own, -1) {
			want = append(want, c[1])
		}
		for _, c := range code.FindAllStringSubmatch(m[3], -1) {
			want = append(want, c[1])
		}
		want = append(want, MetaProp)
		got := PropKeys(kind)
		slices.Sort(want)
		want = slices.Compact(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("docs/model.md lists for %s: %v\nthe schema has: %v", kind, want, got)
		}
	}
	if seen != len(NodeTypes) {
		t.Errorf("docs/model.md's table of kinds has %d of the %d kinds", seen, len(NodeTypes))
	}
}

// FuzzValidatedPropsRoundTrip: props that validate still validate after a
// JSON round trip (what the log and the snapshots do to them), and
// RichTextPlain of a valid richText is the same before and after.
func FuzzValidatedPropsRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{"geo":"star","opacity":0.25,"strokeWidth":1e1,"text":"é"}`,
		`{"richText":{"type":"doc","content":[{"type":"paragraph","content":[{"type":"text","text":"a\u2028b"}]}]}}`,
		`{"points":[{"x":1e-7,"y":-0},{"x":1795461385736852721,"y":0.1}]}`,
		`{"link":"https://example.com/<a>&b"}`,
		`{"meta":{"n":1795461385736852721,"deep":[[[{}]]]}}`,
		`{"color":"#AbC","fillColor":"transparent"}`,
		`{"segments":[{"type":"free","points":[{"x":0,"y":0,"z":1}]}]}`,
	} {
		f.Add("geo", s)
		f.Add(EdgeKind, s)
		f.Add("line", s)
		f.Add("draw", s)
	}
	f.Fuzz(func(t *testing.T, kind, s string) {
		if kindSpecs[kind] == nil {
			return
		}
		var p map[string]any
		if UnmarshalExact([]byte(s), &p) != nil || p == nil {
			return
		}
		if ValidateProps(kind, p, "args.props") != nil {
			return
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("valid props do not encode: %v", err)
		}
		var q map[string]any
		if err := UnmarshalExact(b, &q); err != nil {
			t.Fatalf("encoded props do not decode: %v", err)
		}
		if err := ValidateProps(kind, q, "args.props"); err != nil {
			t.Fatalf("%s props %s validated, and after a round trip (%s) do not: %v", kind, s, b, err)
		}
		if r, ok := p["richText"]; ok && RichTextPlain(r) != RichTextPlain(q["richText"]) {
			t.Fatalf("the plain text of richText changed in a round trip")
		}
	})
}
