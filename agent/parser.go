package agent

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ParsedAction is one action the parser found in the model's text so far.
// Index is its position in the actions array; Complete is true once its
// closing brace arrived (then it never changes again). A partial action's
// Name and Params hold what has streamed so far (strings may be cut). An
// element that is not a JSON object, or is malformed, is a complete action
// without a name (a bad action, which the sanitizer drops); it still takes
// an index, and the elements after it are parsed as usual.
type ParsedAction struct {
	Index    int
	Complete bool
	Name     string
	Params   map[string]any
	// Kit: the element is in the tldraw agent starter kit's form, its name
	// under "_type" and its fields beside it (Params holds them all but
	// "_type"); kit.go maps it to catalog actions.
	Kit bool
}

// Parser parses the model output protocol ({"actions": [...]}, optionally in
// a ```json fence, possibly preceded by prose: see findStart) incrementally.
// It also reads the tldraw agent starter kit's replies: elements named by
// "_type", the array under the kit's earlier key "events", and replies
// written as JavaScript object literals, as the kit's own example is (keys
// without quotes, trailing commas, a comma missing between members).
// Feed parses:
// Feed appends a chunk and returns the actions completed by it plus a preview
// of the action in progress. Each complete action is returned exactly once, in order.
// Work per Feed is proportional to the unparsed tail, not the whole text.
// A Parser is not safe for concurrent use.
type Parser struct {
	buf      []byte
	max      int
	started  bool // found the start of the JSON value
	fenced   bool // inside a ```json (or bare ```) fence: the JSON starts at its first '{' or '['
	arrStart int  // offset just after the actions array's '[' (-1: not found yet)
	resume   int  // offset where the next unparsed element (or top-level member) starts
	next     int  // index of the next action
	done     bool // the actions array closed
	topObj   bool // the top-level value is an object (else the array itself)
	overflow bool
}

// DefaultMaxOutputBytes bounds the model text a Parser accepts (later bytes are ignored).
const DefaultMaxOutputBytes = 1 << 20

// NewParser returns a parser accepting at most maxBytes of model text (≤ 0: DefaultMaxOutputBytes).
func NewParser(maxBytes int) *Parser {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxOutputBytes
	}
	return &Parser{arrStart: -1, max: maxBytes}
}

// Overflowed reports whether text beyond the byte bound was dropped.
func (p *Parser) Overflowed() bool { return p.overflow }

// Done reports whether the actions array has closed.
func (p *Parser) Done() bool { return p.done }

// Feed adds a chunk of model text. It returns the newly completed actions in
// order and, when an action is in progress, its partial preview (nil otherwise).
func (p *Parser) Feed(chunk string) (complete []ParsedAction, partial *ParsedAction) {
	if p.done {
		return nil, nil
	}
	room := p.max - len(p.buf)
	if room <= 0 {
		p.overflow = p.overflow || len(chunk) > 0
		return nil, nil
	}
	if len(chunk) > room {
		chunk = chunk[:room]
		p.overflow = true
	}
	p.buf = append(p.buf, chunk...)
	if !p.findArray() {
		return nil, nil
	}
	for !p.done {
		i := skipWS(p.buf, p.resume)
		if i < len(p.buf) && p.buf[i] == ',' {
			i = skipWS(p.buf, i+1)
		}
		if i >= len(p.buf) {
			return complete, nil
		}
		if p.buf[i] == ']' {
			p.done = true
			p.resume = i + 1
			return complete, nil
		}
		v, ok, end := parseValue(p.buf, i, 0)
		if !ok && end < 0 {
			// A malformed element (a trailing comma, a stray token): skip it
			// once it has all arrived and report it as a bad action, like a
			// non-object element, so that the actions after it still count.
			skip, found := skipElement(p.buf, i)
			if !found {
				return complete, nil
			}
			p.resume = skip
			complete = append(complete, ParsedAction{Index: p.next, Complete: true})
			p.next++
			continue
		}
		if !ok {
			if m, isObj := v.(map[string]any); isObj {
				pa := toAction(p.next, false, m)
				return complete, &pa
			}
			return complete, nil
		}
		p.resume = end
		if m, isObj := v.(map[string]any); isObj {
			complete = append(complete, toAction(p.next, true, m))
		} else {
			// A non-object element is not an action; it still takes an index.
			complete = append(complete, ParsedAction{Index: p.next, Complete: true})
		}
		p.next++
	}
	return complete, nil
}

func toAction(idx int, complete bool, m map[string]any) ParsedAction {
	pa := ParsedAction{Index: idx, Complete: complete}
	if kitName, ok := m["_type"].(string); ok {
		pa.Name, pa.Kit = kitName, true
		pa.Params = make(map[string]any, len(m))
		for k, v := range m {
			if k != "_type" {
				pa.Params[k] = v
			}
		}
		return pa
	}
	pa.Name, _ = m["name"].(string)
	if pa.Name == "" {
		// Tolerate {"type": "create_shape", ...} and {"action": ...} spellings.
		if s, ok := m["action"].(string); ok {
			pa.Name = s
		}
	}
	if params, ok := m["params"].(map[string]any); ok {
		pa.Params = params
	} else if params, ok := m["args"].(map[string]any); ok {
		pa.Params = params
	} else {
		pa.Params = map[string]any{}
	}
	return pa
}

// findArray locates the actions array; it reports whether it has been found.
func (p *Parser) findArray() bool {
	if p.arrStart >= 0 {
		return true
	}
	if !p.started {
		i, found := p.findStart()
		if !found {
			return false
		}
		p.started = true
		if p.buf[i] == '[' {
			p.arrStart, p.resume = i+1, i+1
			return true
		}
		p.topObj = true
		p.resume = i + 1
	}
	// Walk the top-level object's members until "actions": [.
	for {
		i := skipWS(p.buf, p.resume)
		if i < len(p.buf) && p.buf[i] == ',' {
			i = skipWS(p.buf, i+1)
		}
		if i >= len(p.buf) {
			return false
		}
		if p.buf[i] == '}' {
			// The object closed without actions: nothing to do, ever.
			p.done = true
			p.arrStart = len(p.buf)
			p.resume = len(p.buf)
			return true
		}
		if !keyStart(p.buf[i]) {
			p.done, p.arrStart = true, len(p.buf) // not JSON we understand
			return true
		}
		key, ok, end := parseKey(p.buf, i)
		if !ok {
			return false
		}
		j := skipWS(p.buf, end)
		if j >= len(p.buf) {
			return false
		}
		if p.buf[j] != ':' {
			p.done, p.arrStart = true, len(p.buf)
			return true
		}
		j = skipWS(p.buf, j+1)
		if j >= len(p.buf) {
			return false
		}
		if (key == "actions" || key == "events") && p.buf[j] == '[' {
			p.arrStart, p.resume = j+1, j+1
			return true
		}
		_, ok, end = parseValue(p.buf, j, 0)
		if !ok {
			return false
		}
		p.resume = end
	}
}

// findStart finds where the JSON value starts, scanning from p.resume. A
// ```json fence (or a bare ``` one) that opens before any JSON is preferred:
// the value is the first '{' or '[' inside it. Outside a fence, prose may
// hold brackets ("[plan below]", "{curly}"), so the value starts at the
// first '{' followed by '"', '}' or a bare key and ':', or '[' followed by
// '{' or ']' (white space between allowed); a fence of another language is skipped whole. It
// reports false while the text so far cannot tell, keeping p.resume where to
// look again.
func (p *Parser) findStart() (int, bool) {
	b := p.buf
	i := p.resume
	for i < len(b) {
		switch c := b[i]; {
		case c == '`' && !p.fenced:
			if len(b)-i < 3 {
				if strings.HasPrefix("```", string(b[i:])) {
					p.resume = i // maybe a fence: wait for more
					return 0, false
				}
				i++
				continue
			}
			if string(b[i:i+3]) != "```" {
				i++
				continue
			}
			w := i + 3 // the info string's first word: the fence's language
			for w < len(b) && (b[w] >= 'a' && b[w] <= 'z' || b[w] >= 'A' && b[w] <= 'Z' || b[w] >= '0' && b[w] <= '9' || b[w] == '`') {
				w++
			}
			if w == len(b) {
				p.resume = i // the language may go on
				return 0, false
			}
			switch strings.ToLower(strings.Trim(string(b[i+3:w]), "`")) {
			case "", "json", "jsonc", "json5":
				p.fenced = true
				i = w
			default: // another language's block: skip it to its closing fence
				end := bytes.Index(b[w:], []byte("```"))
				if end < 0 {
					p.resume = i
					return 0, false
				}
				i = w + end + 3
			}
		case c == '{' || c == '[':
			if p.fenced {
				return i, true
			}
			j := skipWS(b, i+1)
			if j >= len(b) {
				p.resume = i
				return 0, false
			}
			if c == '{' && (b[j] == '"' || b[j] == '}') || c == '[' && (b[j] == '{' || b[j] == ']') {
				return i, true
			}
			if c == '{' && keyStart(b[j]) {
				switch bareKeyColon(b, j) {
				case 1:
					return i, true
				case 0:
					p.resume = i
					return 0, false
				}
			}
			i++
		default:
			i++
		}
	}
	p.resume = len(b)
	return 0, false
}

// skipElement returns the offset just after the malformed array element that
// starts at b[i]: after its balanced braces and brackets (strings skipped),
// or at the ',' or ']' that ends it at the top level. found is false while
// the element has not all arrived. The offset is always beyond i.
func skipElement(b []byte, i int) (end int, found bool) {
	depth, inStr := 0, false
	for j := i; j < len(b); j++ {
		c := b[j]
		if inStr {
			switch c {
			case '\\':
				j++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return max(j, i+1), true // the array's ']' (or a stray '}') ends the element
			}
			if depth--; depth == 0 {
				return j + 1, true
			}
		case ',':
			if depth == 0 {
				return max(j, i+1), true
			}
		}
	}
	return 0, false
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

const maxDepth = 64

// parseValue parses the JSON value at b[i:]. When the text ends inside the
// value it returns what it has with ok=false: objects and arrays with the
// members seen so far (a member whose value is cut keeps the cut value for
// strings, and is left out otherwise), strings cut where the text ends.
// Malformed JSON yields ok=false and end=-1.
//
// It stays over 100 lines because it is one switch over JSON's kinds of
// value, each case applying the same rules for text that ends inside it;
// the recursion over objects and arrays reads best beside the scalars.
func parseValue(b []byte, i, depth int) (v any, ok bool, end int) {
	if depth > maxDepth {
		return nil, false, -1
	}
	i = skipWS(b, i)
	if i >= len(b) {
		return nil, false, i
	}
	switch c := b[i]; {
	case c == '{':
		m := map[string]any{}
		j := i + 1
		first := true
		for {
			j = skipWS(b, j)
			if j >= len(b) {
				return m, false, j
			}
			if b[j] == '}' {
				return m, true, j + 1
			}
			if !first {
				switch {
				case b[j] == ',':
					j = skipWS(b, j+1)
					if j >= len(b) {
						return m, false, j
					}
					if b[j] == '}' { // a trailing comma
						return m, true, j + 1
					}
				case !keyStart(b[j]): // a missing comma before a key is tolerated
					return m, false, -1
				}
			}
			first = false
			if !keyStart(b[j]) {
				return m, false, -1
			}
			key, kok, kend := parseKey(b, j)
			if !kok {
				return m, false, kend
			}
			j = skipWS(b, kend)
			if j >= len(b) {
				return m, false, j
			}
			if b[j] != ':' {
				return m, false, -1
			}
			val, vok, vend := parseValue(b, j+1, depth+1)
			if !vok {
				if vend >= 0 && val != nil {
					m[key] = val // partial preview
				}
				return m, false, vend
			}
			m[key] = val
			j = vend
		}
	case c == '[':
		arr := []any{}
		j := i + 1
		first := true
		for {
			j = skipWS(b, j)
			if j >= len(b) {
				return arr, false, j
			}
			if b[j] == ']' {
				return arr, true, j + 1
			}
			if !first {
				if b[j] != ',' {
					return arr, false, -1
				}
				j = skipWS(b, j+1)
				if j < len(b) && b[j] == ']' { // a trailing comma
					return arr, true, j + 1
				}
			}
			first = false
			val, vok, vend := parseValue(b, j, depth+1)
			if !vok {
				if vend >= 0 && val != nil {
					arr = append(arr, val)
				}
				return arr, false, vend
			}
			arr = append(arr, val)
			j = vend
		}
	case c == '"':
		s, sok, send := parseString(b, i)
		return s, sok, send
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) {
			return nil, false, j // the number may go on
		}
		f, err := strconv.ParseFloat(string(b[i:j]), 64)
		if err != nil {
			if ne, isNE := err.(*strconv.NumError); isNE && ne.Err == strconv.ErrRange {
				return f, true, j // ±Inf or 0: the sanitizer clamps
			}
			return nil, false, -1
		}
		return f, true, j
	default:
		for _, lit := range []struct {
			s string
			v any
		}{{"true", true}, {"false", false}, {"null", nil}, {"NaN", math.NaN()}, {"Infinity", math.Inf(1)}} {
			n := len(lit.s)
			if len(b)-i >= n && string(b[i:i+n]) == lit.s {
				return lit.v, true, i + n
			}
			if len(b)-i < n && string(b[i:]) == lit.s[:len(b)-i] {
				return nil, false, len(b)
			}
		}
		return nil, false, -1
	}
}

// keyStart reports whether c can start an object key: a JSON string, or a
// bare JavaScript-style name.
func keyStart(c byte) bool {
	return c == '"' || c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func nameByte(c byte) bool {
	return c == '_' || c == '$' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// parseKey parses an object key at b[i]: a JSON string or a bare name
// (letters, digits, '_', '$', '-'). Cut by the end of text, ok is false and
// end is len(b); a bare name must be followed by a non-name byte to end.
func parseKey(b []byte, i int) (string, bool, int) {
	if b[i] == '"' {
		return parseString(b, i)
	}
	j := i
	for j < len(b) && nameByte(b[j]) {
		j++
	}
	if j == len(b) {
		return string(b[i:j]), false, len(b)
	}
	return string(b[i:j]), true, j
}

// bareKeyColon tells whether b[j:] is a bare name followed by ':' (1), is
// not (-1), or cannot tell yet (0).
func bareKeyColon(b []byte, j int) int {
	_, ok, end := parseKey(b, j)
	if !ok {
		return 0
	}
	k := skipWS(b, end)
	switch {
	case k >= len(b):
		return 0
	case b[k] == ':':
		return 1
	}
	return -1
}

// parseString parses a JSON string at b[i] == '"'. Cut by the end of text, it
// returns the decoded prefix with ok=false (never a dangling escape).
func parseString(b []byte, i int) (string, bool, int) {
	out := make([]byte, 0, 16)
	j := i + 1
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			return string(out), true, j + 1
		case c == '\\':
			if j+1 >= len(b) {
				return string(out), false, len(b)
			}
			e := b[j+1]
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				if j+6 > len(b) {
					return string(out), false, len(b)
				}
				r, err := strconv.ParseUint(string(b[j+2:j+6]), 16, 32)
				if err != nil {
					return string(out), false, -1
				}
				rn := rune(r)
				if utf16.IsSurrogate(rn) {
					if j+12 > len(b) {
						return string(out), false, len(b)
					}
					if b[j+6] == '\\' && b[j+7] == 'u' {
						r2, err := strconv.ParseUint(string(b[j+8:j+12]), 16, 32)
						if err == nil {
							rn = utf16.DecodeRune(rn, rune(r2))
							j += 6
						}
					}
				}
				if rn == utf8.RuneError || utf16.IsSurrogate(rn) {
					rn = utf8.RuneError
				}
				out = utf8.AppendRune(out, rn)
				j += 6
				continue
			default:
				return string(out), false, -1
			}
			j += 2
		case c < 0x20:
			return string(out), false, -1
		default:
			out = append(out, c)
			j++
		}
	}
	// Cut inside the string: drop a trailing partial UTF-8 sequence.
	for len(out) > 0 && !utf8.Valid(out) {
		out = out[:len(out)-1]
	}
	return string(out), false, len(b)
}
