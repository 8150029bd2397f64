package canvas

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Rich text is tldraw's rich-text document, TipTap's JSON:
//
//	{"type": "doc", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "Hi", "marks": [{"type": "bold"}]}]}]}
//
// The model takes the nodes richTextNodes and the marks richTextMarks, with
// the attributes richTextAttrs lists; anything else is refused with the
// place it is at.

// richTextAttrs lists the attributes each rich-text node or mark may have
// (every block node may also say its text direction, dir, as tldraw does).
func richTextAttrs(typ string) []string {
	switch typ {
	case "heading":
		return []string{"level", "dir", "textAlign"}
	case "orderedList":
		return []string{"start", "type", "dir"}
	case "codeBlock":
		return []string{"language", "dir"}
	case "paragraph", "blockquote", "bulletList", "listItem":
		return []string{"dir", "textAlign"}
	case "link":
		return []string{"href", "target", "rel", "class"}
	case "highlight":
		return []string{"color"}
	}
	return nil
}

// isInline reports whether a rich-text node of type typ lies inside a line.
func isInline(typ string) bool { return typ == "text" || typ == "hardBreak" }

// CheckRichText checks a richText value (see docs/model.md, "Rich text");
// field names it in the error ("args.props.richText"), which names the
// place of what is wrong inside it ("args.props.richText.content[0].type").
func CheckRichText(v any, field string) error {
	_, err := richTextPlain(v, field)
	return err
}

// RichTextPlain returns the plain text of a valid richText value: its text,
// with paragraphs, headings, code blocks and list items on lines of their
// own and hard breaks as line breaks.
func RichTextPlain(v any) string {
	s, _ := richTextPlain(v, "richText")
	return s
}

// richTextPlain checks v and returns its plain text.
func richTextPlain(v any, field string) (string, error) {
	w := richTextWalker{}
	m, ok := v.(map[string]any)
	if !ok {
		return "", typeError(field, `a rich-text document {"type": "doc", "content": [...]}`, v)
	}
	if t, _ := m["type"].(string); t != "doc" {
		return "", Unprocessable(field+".type", `must be "doc" (a rich-text document); got %s`, describe(m["type"]))
	}
	if err := w.node(m, field, 0); err != nil {
		return "", err
	}
	text := w.b.String()
	if n := utf8.RuneCountInString(text); n > MaxTextChars {
		return "", Unprocessable(field, "holds %d characters of text, more than the %d allowed", n, MaxTextChars)
	}
	return text, nil
}

// richTextWalker checks a rich-text document and writes its plain text.
type richTextWalker struct {
	b     strings.Builder
	nodes int
	first bool // a block was written
}

// node checks node m (at field, nested depth levels) and writes its text.
func (w *richTextWalker) node(m map[string]any, field string, depth int) error {
	w.nodes++
	if w.nodes > MaxRichTextNode {
		return Unprocessable(field, "the rich-text document holds more than %d nodes", MaxRichTextNode)
	}
	typ, ok := m["type"].(string)
	if !ok || !contains(richTextNodes, typ) || (typ == "doc") != (depth == 0) {
		allowed := richTextNodes[1:]
		if depth == 0 {
			allowed = richTextNodes[:1]
		}
		return enumValueError(field+".type", m["type"], allowed)
	}
	for k, x := range m {
		switch k {
		case "type":
		case "content":
			if isInline(typ) {
				return Unprocessable(field+".content", "a %s node has no content", typ)
			}
		case "text":
			if typ != "text" {
				return Unprocessable(field+".text", "only text nodes hold text; a %s node holds content", typ)
			}
			if _, ok := x.(string); !ok {
				return typeError(field+".text", "a string", x)
			}
		case "marks":
			if typ != "text" {
				return Unprocessable(field+".marks", "only text nodes have marks")
			}
			if err := checkMarks(x, field+".marks"); err != nil {
				return err
			}
		case "attrs":
			if err := checkRichAttrs(typ, x, field+".attrs"); err != nil {
				return err
			}
		default:
			return Unprocessable(field+"."+k, "a rich-text node holds type, content, attrs, and for text nodes text and marks; not %q", k)
		}
	}
	switch typ {
	case "text":
		s, ok := m["text"].(string)
		if !ok {
			return Unprocessable(field+".text", "is required: the text of a text node")
		}
		w.b.WriteString(s)
		return nil
	case "hardBreak":
		w.b.WriteByte('\n')
		return nil
	}
	c, has := m["content"]
	if !has {
		if typ != "doc" {
			w.blockBreak()
		}
		return nil
	}
	children, ok := c.([]any)
	if !ok {
		return typeError(field+".content", "an array of rich-text nodes", c)
	}
	inline := true
	for _, x := range children {
		if cm, ok := x.(map[string]any); ok {
			if t, _ := cm["type"].(string); !isInline(t) {
				inline = false
			}
		}
	}
	if inline && typ != "doc" {
		w.blockBreak()
	}
	for i, x := range children {
		f := fmt.Sprintf("%s.content[%d]", field, i)
		cm, ok := x.(map[string]any)
		if !ok {
			return typeError(f, "a rich-text node {type, ...}", x)
		}
		if err := w.node(cm, f, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// blockBreak starts a new line for a block's text (none before the first).
func (w *richTextWalker) blockBreak() {
	if w.first {
		w.b.WriteByte('\n')
	}
	w.first = true
}

// checkMarks checks the marks of a text node.
func checkMarks(v any, field string) error {
	a, ok := v.([]any)
	if !ok {
		return typeError(field, "an array of marks {type, attrs?}", v)
	}
	for i, x := range a {
		f := fmt.Sprintf("%s[%d]", field, i)
		m, ok := x.(map[string]any)
		if !ok {
			return typeError(f, "a mark {type, attrs?}", x)
		}
		typ, ok := m["type"].(string)
		if !ok || !contains(richTextMarks, typ) {
			return enumValueError(f+".type", m["type"], richTextMarks)
		}
		for k, x := range m {
			switch k {
			case "type":
			case "attrs":
				if err := checkRichAttrs(typ, x, f+".attrs"); err != nil {
					return err
				}
			default:
				return Unprocessable(f+"."+k, "a mark holds type and attrs only")
			}
		}
		if typ == "link" {
			attrs, _ := m["attrs"].(map[string]any)
			if _, ok := attrs["href"]; !ok {
				return Unprocessable(f+".attrs.href", "is required: the link's target")
			}
		}
	}
	return nil
}

// checkRichAttrs checks the attrs of a rich-text node or mark of type typ.
func checkRichAttrs(typ string, v any, field string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return typeError(field, "an object", v)
	}
	allowed := richTextAttrs(typ)
	for k, x := range m {
		f := field + "." + k
		if !contains(allowed, k) {
			if len(allowed) == 0 {
				return Unprocessable(f, "a %s has no attrs", typ)
			}
			return Unprocessable(f, "a %s's attrs are %s", typ, strings.Join(allowed, ", "))
		}
		switch k {
		case "level":
			if l, ok := numberValue(x); !ok || l != float64(int(l)) || l < 1 || l > 6 {
				return Unprocessable(f, "must be a heading level from 1 to 6; got %s", describe(x))
			}
		case "start":
			if l, ok := numberValue(x); !ok || l != float64(int64(l)) || l < 0 || l > 1e9 {
				return Unprocessable(f, "must be a whole number from 0 to 1000000000; got %s", describe(x))
			}
		case "href":
			s, ok := x.(string)
			if !ok {
				return typeError(f, "a string", x)
			}
			if why := CheckLink(s); why != "" {
				return Unprocessable(f, "%s", why)
			}
		case "dir":
			if s, ok := x.(string); x != nil && (!ok || s != "ltr" && s != "rtl" && s != "auto") {
				return Unprocessable(f, "must be ltr, rtl, auto or null; got %s", describe(x))
			}
		case "textAlign":
			if s, ok := x.(string); x != nil && (!ok || s != "left" && s != "center" && s != "right" && s != "justify") {
				return Unprocessable(f, "must be left, center, right, justify or null; got %s", describe(x))
			}
		default: // strings (or null) of at most 256 characters
			if x == nil {
				continue
			}
			s, ok := x.(string)
			if !ok {
				return typeError(f, "a string or null", x)
			}
			if utf8.RuneCountInString(s) > 256 {
				return Unprocessable(f, "is longer than 256 characters")
			}
		}
	}
	return nil
}
