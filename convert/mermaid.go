package convert

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Mermaid flowcharts (mermaid.js.org/syntax/flowchart.html): a header
// `graph` or `flowchart` with a direction (TD, TB, BT, LR, RL), node
// statements with shapes ([], (), ([]), [[]], [()], (()), ((())), >],
// {}, {{}}, [//], [\\], [/\\], [\\/] and the @{ shape: ... } form),
// links of every style (--> --- -.-> ==> ~~~ with o and x ends, both ends
// <-->, labels as -- text --> or -->|text|, chains A --> B --> C and
// groups A & B --> C), subgraphs (nested, with titles), `style`,
// `classDef`, `class` and `:::class` for colours. `click`, `linkStyle`
// and `direction` inside subgraphs are accepted and left out.

// MaxMermaidNodes bounds the nodes (with subgraphs) of a Mermaid file, and
// MaxMermaidEdges its links (Mermaid's own default maxEdges): dot's layout
// grows much faster than linearly, and these bounds keep the hardest chart's
// layout to about a second of a core (BenchmarkMermaidWorstCase; within the
// old bounds of 2,000 and 5,000, a chart of random links took minutes; a
// layout past dotTimeout is stopped). MaxMermaidDepth bounds how deep
// subgraphs nest: at 300 levels go-graphviz failed to read dot's answer.
const (
	MaxMermaidNodes = 1000
	MaxMermaidEdges = 500
	MaxMermaidDepth = 20
)

// mmGraph is a parsed flowchart.
type mmGraph struct {
	dir      string // TB, BT, LR or RL
	nodes    []*mmNode
	byID     map[string]*mmNode
	edges    []*mmEdge
	subs     []*mmSub
	classes  map[string]map[string]string // classDef name → style
	subByID  map[string]*mmSub
	subStack []*mmSub
}

type mmNode struct {
	id, text, shape string
	sub             *mmSub // the subgraph it was first seen in
	style           map[string]string
	classes         []string
	line            int
}

type mmEdge struct {
	from, to   string
	text       string
	start, end string // heads: "", arrow, circle, cross
	stroke     string // normal, thick, dotted, invisible
	line       int
}

type mmSub struct {
	id, title string
	parent    *mmSub
	line      int
}

// parseMermaid reads a flowchart.
func parseMermaid(src string) (*mmGraph, error) {
	g := &mmGraph{byID: map[string]*mmNode{}, classes: map[string]map[string]string{}, subByID: map[string]*mmSub{}}
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	header := false
	front := 0 // the lines of a front matter block (--- ... ---) to skip
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for i := 1; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "---" {
				front = i + 1
				break
			}
		}
		if front == 0 {
			return nil, mmError(1, "the front matter that starts with --- is not closed with ---")
		}
	}
	for i := 0; i < len(lines); i++ {
		ln := i + 1
		if i < front {
			continue
		}
		line := lines[i]
		if j := strings.Index(line, "%%"); j >= 0 {
			line = line[:j]
		}
		// A quoted label may run over several lines.
		for strings.Count(line, `"`)%2 == 1 && i+1 < len(lines) {
			i++
			line += "\n" + lines[i]
		}
		for _, stmt := range splitStatements(line) {
			stmt = strings.TrimSpace(stmt)
			if stmt == "" {
				continue
			}
			if !header {
				f := strings.Fields(stmt)
				if f[0] != "graph" && f[0] != "flowchart" && f[0] != "flowchart-elk" {
					return nil, mmError(ln, "a Mermaid flowchart starts with `flowchart` or `graph` and a direction (TD, LR, ...); got %q (other diagram types are not read)", firstWord(stmt))
				}
				g.dir = "TB"
				if len(f) > 1 {
					d, ok := mmDirection(f[1])
					if !ok {
						return nil, mmError(ln, "the direction must be TD, TB, BT, LR or RL; got %q", f[1])
					}
					g.dir = d
				}
				header = true
				continue
			}
			if err := g.statement(stmt, ln); err != nil {
				return nil, err
			}
		}
	}
	if !header {
		return nil, mmError(1, "the file is empty: a Mermaid flowchart starts with `flowchart TD` (or LR, ...)")
	}
	if len(g.subStack) > 0 {
		s := g.subStack[len(g.subStack)-1]
		return nil, mmError(s.line, "subgraph %q is not closed with `end`", s.title)
	}
	return g, nil
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

func mmDirection(s string) (string, bool) {
	switch strings.ToUpper(s) {
	case "TD", "TB":
		return "TB", true
	case "BT", "LR", "RL":
		return strings.ToUpper(s), true
	}
	return "", false
}

// mmError is a FieldError naming a line of the file.
func mmError(line int, format string, a ...any) error {
	return fileError(fmt.Sprintf(" line %d", line), format, a...)
}

// splitStatements splits a line at semicolons outside quotes and brackets.
func splitStatements(line string) []string {
	var out []string
	depth, inQ, start := 0, false, 0
	for i, r := range line {
		switch {
		case r == '"':
			inQ = !inQ
		case inQ:
		case strings.ContainsRune("[({", r):
			depth++
		case strings.ContainsRune("])}", r):
			if depth > 0 {
				depth--
			}
		case r == ';' && depth == 0:
			out = append(out, line[start:i])
			start = i + 1
		}
	}
	return append(out, line[start:])
}

var (
	reSubgraph = regexp.MustCompile(`^subgraph\s+(.*)$`)
	reStyleKV  = regexp.MustCompile(`([a-zA-Z-]+)\s*:\s*([^,;]+)`)
)

func (g *mmGraph) statement(stmt string, ln int) error {
	word := firstWord(stmt)
	switch word {
	case "end":
		if len(g.subStack) == 0 {
			return mmError(ln, "`end` closes no subgraph")
		}
		g.subStack = g.subStack[:len(g.subStack)-1]
		return nil
	case "subgraph":
		m := reSubgraph.FindStringSubmatch(stmt)
		if m == nil {
			return mmError(ln, "a subgraph needs a name: `subgraph id [Title]`")
		}
		spec := strings.TrimSpace(m[1])
		id, title := spec, spec
		if j := strings.IndexAny(spec, "[\""); j >= 0 {
			if spec[j] == '[' {
				id = strings.TrimSpace(spec[:j])
				title = strings.TrimSuffix(strings.TrimSpace(spec[j+1:]), "]")
			} else {
				title = spec
				id = ""
			}
		} else if strings.ContainsRune(spec, ' ') {
			id = ""
		}
		title = strings.Trim(strings.TrimSpace(title), `"`)
		if id == "" {
			id = fmt.Sprintf("subgraph-%d", len(g.subs)+1)
		}
		s := &mmSub{id: id, title: title, line: ln}
		if len(g.subStack) > 0 {
			s.parent = g.subStack[len(g.subStack)-1]
		}
		if _, dup := g.subByID[id]; dup {
			return mmError(ln, "subgraph %q is defined twice", id)
		}
		g.subByID[id] = s
		g.subs = append(g.subs, s)
		g.subStack = append(g.subStack, s)
		return nil
	case "direction", "click", "linkStyle", "accTitle", "accDescr", "title":
		return nil
	case "classDef":
		f := strings.Fields(stmt)
		if len(f) < 3 {
			return mmError(ln, "classDef needs a name and a style: `classDef name fill:#f9f,stroke:#333`")
		}
		style := parseStyle(strings.Join(f[2:], " "))
		for _, name := range strings.Split(f[1], ",") {
			g.classes[name] = style
		}
		return nil
	case "class":
		f := strings.Fields(stmt)
		if len(f) < 3 {
			return mmError(ln, "class needs node ids and a class name: `class a,b name`")
		}
		for _, id := range strings.Split(f[1], ",") {
			n := g.node(id, ln)
			n.classes = append(n.classes, f[2])
		}
		return nil
	case "style":
		f := strings.Fields(stmt)
		if len(f) < 3 {
			return mmError(ln, "style needs a node id and a style: `style a fill:#f9f`")
		}
		if _, isSub := g.subByID[f[1]]; isSub {
			return nil
		}
		n := g.node(f[1], ln)
		if n.style == nil {
			n.style = map[string]string{}
		}
		for k, v := range parseStyle(strings.Join(f[2:], " ")) {
			n.style[k] = v
		}
		return nil
	}
	return g.chain(stmt, ln)
}

func parseStyle(s string) map[string]string {
	out := map[string]string{}
	for _, m := range reStyleKV.FindAllStringSubmatch(s, -1) {
		out[m[1]] = strings.TrimSpace(m[2])
	}
	return out
}

// node returns the node of id, making it (a rectangle named id) if new.
func (g *mmGraph) node(id string, ln int) *mmNode {
	if n := g.byID[id]; n != nil {
		return n
	}
	n := &mmNode{id: id, text: id, shape: "rect", line: ln}
	if len(g.subStack) > 0 {
		n.sub = g.subStack[len(g.subStack)-1]
	}
	g.byID[id] = n
	g.nodes = append(g.nodes, n)
	return n
}

// scanner reads a chain statement.
type scanner struct {
	s   string
	pos int
	ln  int
}

func (sc *scanner) skip() {
	for sc.pos < len(sc.s) && (sc.s[sc.pos] == ' ' || sc.s[sc.pos] == '\t') {
		sc.pos++
	}
}

func (sc *scanner) done() bool { sc.skip(); return sc.pos >= len(sc.s) }

func (sc *scanner) rest() string { return sc.s[sc.pos:] }

// chain reads `group (link group)*`.
func (g *mmGraph) chain(stmt string, ln int) error {
	sc := &scanner{s: stmt, ln: ln}
	prev, err := g.group(sc)
	if err != nil {
		return err
	}
	for !sc.done() {
		link, err := sc.link()
		if err != nil {
			return err
		}
		next, err := g.group(sc)
		if err != nil {
			return err
		}
		if link.stroke != "invisible" {
			for _, a := range prev {
				for _, b := range next {
					e := *link
					e.from, e.to, e.line = a, b, ln
					g.edges = append(g.edges, &e)
				}
			}
		} else {
			for _, a := range prev {
				for _, b := range next {
					g.edges = append(g.edges, &mmEdge{from: a, to: b, stroke: "invisible", line: ln})
				}
			}
		}
		prev = next
	}
	return nil
}

// group reads `node (& node)*` and returns the node ids.
func (g *mmGraph) group(sc *scanner) ([]string, error) {
	var ids []string
	for {
		id, err := g.nodeRef(sc)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		sc.skip()
		if sc.pos < len(sc.s) && sc.s[sc.pos] == '&' {
			sc.pos++
			continue
		}
		return ids, nil
	}
}

// shapeOpen lists the node shape brackets, longest first.
var shapeOpen = []struct{ open, close, shape string }{
	{"(((", ")))", "double-circle"},
	{"((", "))", "circle"},
	{"([", "])", "stadium"},
	{"[(", ")]", "cylinder"},
	{"[[", "]]", "subroutine"},
	{"{{", "}}", "hexagon"},
	{"[/", "/]", "parallelogram"},
	{"[\\", "\\]", "parallelogram-alt"},
	{"[/", "\\]", "trapezoid"},
	{"[\\", "/]", "trapezoid-alt"},
	{"[", "]", "rect"},
	{"(", ")", "rounded"},
	{"{", "}", "diamond"},
	{">", "]", "asymmetric"},
}

// mmShapeNames maps the names of the @{ shape: ... } form to shapes.
var mmShapeNames = map[string]string{"rect": "rect", "rectangle": "rect", "proc": "rect", "process": "rect",
	"rounded": "rounded", "event": "rounded", "stadium": "stadium", "pill": "stadium", "terminal": "stadium",
	"circle": "circle", "circ": "circle", "dbl-circ": "double-circle", "double-circle": "double-circle",
	"diam": "diamond", "diamond": "diamond", "decision": "diamond", "question": "diamond",
	"hex": "hexagon", "hexagon": "hexagon", "prepare": "hexagon", "cyl": "cylinder", "cylinder": "cylinder",
	"database": "cylinder", "db": "cylinder", "subproc": "subroutine", "subroutine": "subroutine",
	"lean-r": "parallelogram", "lean-l": "parallelogram-alt", "trap-b": "trapezoid", "trap-t": "trapezoid-alt",
	"odd": "asymmetric", "tri": "triangle", "triangle": "triangle", "doc": "rect", "document": "rect"}

func isIDRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
}

// nodeRef reads a node id with its optional shape and text, and class.
func (g *mmGraph) nodeRef(sc *scanner) (string, error) {
	sc.skip()
	start := sc.pos
	for sc.pos < len(sc.s) {
		r := rune(sc.s[sc.pos])
		if r >= 0x80 {
			r = []rune(sc.s[sc.pos:])[0]
		}
		if isIDRune(r) || (r == '-' && sc.pos+1 < len(sc.s) && isIDRune(rune(sc.s[sc.pos+1])) && sc.pos > start) {
			sc.pos += len(string(r))
			continue
		}
		break
	}
	id := sc.s[start:sc.pos]
	if id == "" {
		if sc.pos >= len(sc.s) {
			return "", mmError(sc.ln, "a link must end at a node")
		}
		return "", mmError(sc.ln, "expected a node id at %q", truncate(sc.rest(), 20))
	}
	if sub, ok := g.subByID[id]; ok && sub != nil {
		return "subgraph:" + id, nil
	}
	n := g.node(id, sc.ln)
	// @{ shape: ..., label: "..." }
	if strings.HasPrefix(sc.rest(), "@{") {
		end := strings.Index(sc.rest(), "}")
		if end < 0 {
			return "", mmError(sc.ln, "`@{` is not closed with `}`")
		}
		body := sc.rest()[2:end]
		sc.pos += end + 1
		for _, m := range regexp.MustCompile(`(\w+)\s*:\s*("([^"]*)"|[^,]+)`).FindAllStringSubmatch(body, -1) {
			v := strings.TrimSpace(m[2])
			if m[3] != "" || strings.HasPrefix(v, `"`) {
				v = m[3]
			}
			switch m[1] {
			case "shape":
				s, ok := mmShapeNames[v]
				if !ok {
					s = "rect"
				}
				n.shape = s
			case "label":
				n.text = cleanLabel(v)
			}
		}
	}
	for _, sh := range shapeOpen {
		if !strings.HasPrefix(sc.rest(), sh.open) {
			continue
		}
		body := sc.rest()[len(sh.open):]
		var text string
		var used int
		if strings.HasPrefix(strings.TrimLeft(body, " "), `"`) {
			lead := len(body) - len(strings.TrimLeft(body, " "))
			q := strings.Index(body[lead+1:], `"`)
			if q < 0 {
				return "", mmError(sc.ln, "a quoted label is not closed")
			}
			text = body[lead+1 : lead+1+q]
			after := body[lead+1+q+1:]
			trim := len(after) - len(strings.TrimLeft(after, " "))
			if !strings.HasPrefix(after[trim:], sh.close) {
				continue
			}
			used = lead + 1 + q + 1 + trim + len(sh.close)
		} else {
			j := strings.Index(body, sh.close)
			if j < 0 {
				continue
			}
			// The (( shape and others must not stop at a closer of a longer one.
			text = body[:j]
			used = j + len(sh.close)
		}
		n.shape = sh.shape
		n.text = cleanLabel(text)
		sc.pos += len(sh.open) + used
		break
	}
	if strings.HasPrefix(sc.rest(), ":::") {
		sc.pos += 3
		st := sc.pos
		for sc.pos < len(sc.s) && (isIDRune(rune(sc.s[sc.pos])) || sc.s[sc.pos] == '-') {
			sc.pos++
		}
		n.classes = append(n.classes, sc.s[st:sc.pos])
	}
	return id, nil
}

// cleanLabel turns a Mermaid label into plain text: <br> to line breaks,
// Markdown strings' backticks and emphasis markers dropped, entities read.
func cleanLabel(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
		s = s[1 : len(s)-1]
	}
	if strings.HasPrefix(s, "`") && strings.HasSuffix(s, "`") && len(s) >= 2 {
		s = s[1 : len(s)-1]
		s = strings.NewReplacer("**", "", "__", "").Replace(s)
	}
	s = regexp.MustCompile(`(?i)<br\s*/?>`).ReplaceAllString(s, "\n")
	s = strings.NewReplacer("#quot;", `"`, "#amp;", "&", "#lt;", "<", "#gt;", ">", "&quot;", `"`, "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
	return s
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// link reads a link: its line style, heads and label.
func (sc *scanner) link() (*mmEdge, error) {
	sc.skip()
	s := sc.s
	e := &mmEdge{stroke: "normal"}
	p := sc.pos
	if p < len(s) && strings.ContainsRune("<ox", rune(s[p])) && p+1 < len(s) && strings.ContainsRune("-=.", rune(s[p+1])) {
		if s[p] == '<' {
			e.start = "arrow"
		} else {
			e.start = mmHeadAt(s[p])
		}
		p++
	}
	p, err := sc.linkLine(e, p)
	if err != nil {
		return nil, err
	}
	sc.pos = p
	sc.skip()
	if sc.pos < len(s) && s[sc.pos] == '|' {
		j := strings.IndexByte(s[sc.pos+1:], '|')
		if j < 0 {
			return nil, mmError(sc.ln, "a link label `|text|` is not closed")
		}
		e.text = cleanLabel(strings.Trim(s[sc.pos+1:sc.pos+1+j], `"`))
		sc.pos += j + 2
	}
	return e, nil
}

// mmHeadAt is the head a character draws at a link's end ("" for none).
func mmHeadAt(c byte) string {
	switch c {
	case '>':
		return "arrow"
	case 'o':
		return "circle"
	case 'x':
		return "cross"
	}
	return ""
}

// linkLine reads the line of a link from sc.s[p:] (after its start head):
// its style, a label written inside it (-- text -->) and its end head. It
// returns where the line ends.
func (sc *scanner) linkLine(e *mmEdge, p int) (int, error) {
	s := sc.s
	count := func(c byte) int { // how many times c repeats at p
		n := 0
		for p+n < len(s) && s[p+n] == c {
			n++
		}
		return n
	}
	switch {
	case strings.HasPrefix(s[p:], "~~~"):
		e.stroke = "invisible"
		p += count('~')
	case strings.HasPrefix(s[p:], "=="):
		e.stroke = "thick"
		n := count('=')
		p += n
		if n == 2 && p < len(s) && mmHeadAt(s[p]) == "" && s[p] != '=' {
			// == text ==>
			j := strings.Index(s[p:], "==")
			if j < 0 {
				return 0, mmError(sc.ln, "a link label `== text ==>` is not closed")
			}
			e.text = cleanLabel(s[p : p+j])
			p += j
			p += count('=')
		}
		if p < len(s) && mmHeadAt(s[p]) != "" && (p+1 >= len(s) || !isIDRune(rune(s[p+1])) || s[p] == '>') {
			e.end = mmHeadAt(s[p])
			p++
		}
	case strings.HasPrefix(s[p:], "-."):
		e.stroke = "dotted"
		p++
		n := count('.')
		p += n
		if p < len(s) && s[p] == ' ' {
			// -. text .->
			j := strings.Index(s[p:], ".-")
			if j < 0 {
				return 0, mmError(sc.ln, "a link label `-. text .->` is not closed")
			}
			e.text = cleanLabel(s[p : p+j])
			p += j
			p += count('.')
		}
		if p < len(s) && s[p] == '-' {
			p++
		}
		if p < len(s) && mmHeadAt(s[p]) != "" && (s[p] == '>' || p+1 >= len(s) || !isIDRune(rune(s[p+1]))) {
			e.end = mmHeadAt(s[p])
			p++
		}
	case strings.HasPrefix(s[p:], "--"):
		n := count('-')
		p += n
		if n == 2 && p < len(s) && s[p] != '>' && !(strings.ContainsRune("ox", rune(s[p])) && (p+1 >= len(s) || !isIDRune(rune(s[p+1])))) {
			// -- text -->
			j := indexLinkEnd(s[p:])
			if j < 0 {
				return 0, mmError(sc.ln, "a link label `-- text -->` is not closed")
			}
			e.text = cleanLabel(s[p : p+j])
			p += j
			p += count('-')
		}
		if p < len(s) && mmHeadAt(s[p]) != "" && (s[p] == '>' || p+1 >= len(s) || !isIDRune(rune(s[p+1]))) {
			e.end = mmHeadAt(s[p])
			p++
		}
	default:
		return 0, mmError(sc.ln, "expected a link (-->, ---, -.->, ==>, ~~~, ...) at %q", truncate(s[p:], 20))
	}
	return p, nil
}

// indexLinkEnd finds where the closing part of `-- text -->` starts.
func indexLinkEnd(s string) int {
	for i := 0; i+2 < len(s)+1; i++ {
		if strings.HasPrefix(s[i:], "--") {
			rest := strings.TrimLeft(s[i:], "-")
			if rest == "" || strings.ContainsRune(">ox", rune(rest[0])) || rest[0] == ' ' || len(s[i:])-len(rest) >= 3 {
				return i
			}
		}
	}
	return -1
}
