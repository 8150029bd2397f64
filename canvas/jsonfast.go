package canvas

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A reflection-free reader and writer of JSON values as encoding/json
// handles them in an any (objects map[string]any, arrays []any, numbers
// json.Number when read). An import carries tens of thousands of props
// maps through the server; encoding/json's reflection was most of its
// time. Each function either does exactly what encoding/json would, or
// says it cannot (ok false) and leaves that case to encoding/json, so
// error messages and the rare cases stay as they were.

// maxFastDepth bounds the nesting the fast reader follows; deeper values
// go to encoding/json.
const maxFastDepth = 200

// ParseJSONFast decodes data, one JSON value with only white space around
// it, as a json.Decoder with UseNumber decodes it into an any. ok is false
// for input it does not decode exactly so (invalid JSON, a string with
// invalid UTF-8 or a lone surrogate escape, very deep nesting): decode
// that with encoding/json.
func ParseJSONFast(data []byte) (v any, ok bool) {
	p := fastParser{data: data}
	v, ok = p.value()
	if !ok || skipSpace(data, p.i) != len(data) {
		return nil, false
	}
	return v, true
}

// fastParser reads JSON from data at i.
type fastParser struct {
	data  []byte
	i     int
	depth int
	buf   []byte // scratch for strings with escapes
}

// value reads any JSON value.
func (p *fastParser) value() (any, bool) {
	p.i = skipSpace(p.data, p.i)
	if p.i >= len(p.data) {
		return nil, false
	}
	switch c := p.data[p.i]; c {
	case '{':
		m, ok := p.object()
		return m, ok
	case '[':
		return p.array()
	case '"':
		return p.str()
	case 't':
		return true, p.literal("true")
	case 'f':
		return false, p.literal("false")
	case 'n':
		return nil, p.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			lit, ok := p.number()
			return json.Number(lit), ok
		}
	}
	return nil, false
}

// literal reads the word w.
func (p *fastParser) literal(w string) bool {
	if len(p.data)-p.i < len(w) || string(p.data[p.i:p.i+len(w)]) != w {
		return false
	}
	p.i += len(w)
	return true
}

// number reads a JSON number and returns its text.
func (p *fastParser) number() (string, bool) {
	d, i := p.data, p.i
	start := i
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return "", false
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return "", false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return "", false
		}
	}
	p.i = i
	return string(d[start:i]), true
}

// float reads a JSON number as encoding/json decodes one into a float64.
func (p *fastParser) float() (float64, bool) {
	p.i = skipSpace(p.data, p.i)
	lit, ok := p.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(lit, 64)
	return f, err == nil
}

// str reads a JSON string.
func (p *fastParser) str() (string, bool) {
	d := p.data
	if p.i >= len(d) || d[p.i] != '"' {
		return "", false
	}
	start := p.i + 1
	ascii := true
	for i := start; i < len(d); i++ {
		switch c := d[i]; {
		case c == '"':
			if !ascii && !utf8.Valid(d[start:i]) {
				return "", false // encoding/json writes U+FFFD for the bad bytes
			}
			p.i = i + 1
			return string(d[start:i]), true
		case c == '\\':
			return p.escaped(start, i)
		case c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

// escaped reads the rest of a string that has an escape at i.
func (p *fastParser) escaped(start, i int) (string, bool) {
	d := p.data
	b := append(p.buf[:0], d[start:i]...)
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			if !utf8.Valid(b) {
				return "", false
			}
			p.i, p.buf = i+1, b
			return string(b), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			i++
			continue
		}
		if i+1 >= len(d) {
			return "", false
		}
		switch e := d[i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(d, i+2)
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+1 >= len(d) || d[i] != '\\' || d[i+1] != 'u' {
					return "", false // a lone surrogate: encoding/json writes U+FFFD
				}
				r2, ok := hex4(d, i+2)
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}

// object reads a JSON object into a new map.
func (p *fastParser) object() (map[string]any, bool) {
	if p.depth++; p.depth > maxFastDepth {
		return nil, false
	}
	m := map[string]any{}
	p.i = skipSpace(p.data, p.i+1)
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		p.depth--
		return m, true
	}
	for {
		k, ok := p.str()
		if !ok || !p.colon() {
			return nil, false
		}
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		m[k] = v // a repeated name: the last value, as encoding/json
		end, ok := p.next('}')
		if !ok {
			return nil, false
		}
		if end {
			p.depth--
			return m, true
		}
		p.i = skipSpace(p.data, p.i)
	}
}

// array reads a JSON array into a new slice.
func (p *fastParser) array() ([]any, bool) {
	if p.depth++; p.depth > maxFastDepth {
		return nil, false
	}
	a := make([]any, 0)
	p.i = skipSpace(p.data, p.i+1)
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		p.depth--
		return a, true
	}
	for {
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		a = append(a, v)
		end, ok := p.next(']')
		if !ok {
			return nil, false
		}
		if end {
			p.depth--
			return a, true
		}
	}
}

// colon reads the colon after an object's member name.
func (p *fastParser) colon() bool {
	p.i = skipSpace(p.data, p.i)
	if p.i >= len(p.data) || p.data[p.i] != ':' {
		return false
	}
	p.i++
	return true
}

// next reads the comma after a member or element (end false) or the
// closing bracket (end true).
func (p *fastParser) next(closing byte) (end, ok bool) {
	p.i = skipSpace(p.data, p.i)
	if p.i >= len(p.data) {
		return false, false
	}
	switch p.data[p.i] {
	case ',':
		p.i++
		return false, true
	case closing:
		p.i++
		return true, true
	}
	return false, false
}

// AppendJSONValue appends v as json.Marshal writes it, without reflection
// for the values JSON decodes to (maps, slices, strings, numbers, bools,
// nil); other values inside go through json.Marshal.
func AppendJSONValue(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendQuoted(b, t), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case json.Number:
		if t == "" {
			return append(b, '0'), nil
		}
		if p := (fastParser{data: []byte(t)}); !p.isNumber() {
			_, err := json.Marshal(t) // its error
			return nil, err
		}
		return append(b, t...), nil
	case float64:
		if f, err := appendJSONFloat(b, t); err == nil {
			return f, nil
		}
	case map[string]any:
		return appendJSONObject(b, t)
	case []any:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = AppendJSONValue(b, x); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	m, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, m...), nil
}

// isNumber reports whether data is exactly one JSON number.
func (p *fastParser) isNumber() bool {
	_, ok := p.number()
	return ok && p.i == len(p.data)
}

// appendJSONObject appends m with its members sorted by name, as
// json.Marshal writes a map.
func appendJSONObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendQuoted(b, k), ':')
		var err error
		if b, err = AppendJSONValue(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendQuoted appends s as json.Marshal writes a string: <, > and &
// escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendQuoted(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSON appends the edge's JSON, byte for byte what json.Marshal
// writes, without reflection (but for props values of types JSON does not
// decode to).
func (e *Edge) AppendJSON(b []byte) ([]byte, error) {
	b = appendJSONString(append(b, `{"id":`...), e.ID)
	b = appendJSONString(append(b, `,"from":`...), e.From)
	b = appendJSONString(append(b, `,"to":`...), e.To)
	b = appendJSONString(append(b, `,"type":`...), e.Type)
	var err error
	if b, err = appendJSONObject(append(b, `,"props":`...), e.Props); err != nil {
		return nil, err
	}
	b = appendJSONString(append(b, `,"created_by":`...), e.CreatedBy)
	b = strconv.AppendInt(append(b, `,"created_rev":`...), e.CreatedRev, 10)
	b = strconv.AppendInt(append(b, `,"updated_rev":`...), e.UpdatedRev, 10)
	return append(b, '}'), nil
}

// AppendNum appends Num(f) without allocating it.
func AppendNum(b []byte, f float64) []byte {
	if out, err := appendJSONFloat(b, f); err == nil {
		return out
	}
	return append(b, '0')
}
