package canvas

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// canonicalJSON returns the canonical form of the JSON value data, as
// Fingerprint defines it: what json.Marshal writes for data decoded with
// UnmarshalExact (no whitespace, object keys sorted, numbers as sent,
// strings re-encoded).
func canonicalJSON(data []byte) []byte {
	if out, ok := appendCanonical(make([]byte, 0, len(data)), data); ok {
		return out
	}
	var v any
	_ = UnmarshalExact(data, &v)
	out, _ := json.Marshal(v)
	return out
}

// appendCanonical appends the canonical form of data to dst without
// decoding it, for the data clients usually send: keys and strings of
// printable ASCII or plain UTF-8, without escapes or the characters
// json.Marshal escapes (<, >, &, U+2028, U+2029), no key twice in an
// object, at most MaxJSONDepth levels. For anything else it reports false
// and canonicalJSON decodes instead; on such data the two would differ.
func appendCanonical(dst, data []byte) ([]byte, bool) {
	c := canonicalizer{src: data, i: skipSpace(data, 0)}
	dst, ok := c.value(dst, 0)
	return dst, ok && skipSpace(data, c.i) == len(data)
}

type canonicalizer struct {
	src []byte
	i   int
}

// skipSpace moves past white space.
func (c *canonicalizer) skipSpace() { c.i = skipSpace(c.src, c.i) }

// value appends the value at c.i and moves past it.
func (c *canonicalizer) value(dst []byte, depth int) ([]byte, bool) {
	if c.i >= len(c.src) {
		return dst, false
	}
	switch b := c.src[c.i]; {
	case b == '{':
		return c.object(dst, depth+1)
	case b == '[':
		return c.array(dst, depth+1)
	case b == '"':
		s, ok := c.plainString()
		return append(dst, s...), ok
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number(dst)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(c.src[c.i:], []byte(lit)) {
			c.i += len(lit)
			return append(dst, lit...), true
		}
	}
	return dst, false
}

// member is one object member, its canonical value at dst[from:to].
type member struct {
	key      []byte // with its quotes
	from, to int
}

func (c *canonicalizer) object(dst []byte, depth int) ([]byte, bool) {
	if depth > MaxJSONDepth {
		return dst, false
	}
	c.i++ // {
	start := len(dst)
	var small [8]member
	members := small[:0]
	c.skipSpace()
	if c.i < len(c.src) && c.src[c.i] == '}' {
		c.i++
		return append(dst, "{}"...), true
	}
	for {
		c.skipSpace()
		if c.i >= len(c.src) || c.src[c.i] != '"' {
			return dst, false
		}
		key, ok := c.plainString()
		if !ok {
			return dst, false
		}
		c.skipSpace()
		if c.i >= len(c.src) || c.src[c.i] != ':' {
			return dst, false
		}
		c.i++
		c.skipSpace()
		from := len(dst)
		if dst, ok = c.value(dst, depth); !ok {
			return dst, false
		}
		members = append(members, member{key: key, from: from, to: len(dst)})
		c.skipSpace()
		if c.i >= len(c.src) {
			return dst, false
		}
		c.i++
		if c.src[c.i-1] == '}' {
			break
		}
		if c.src[c.i-1] != ',' {
			return dst, false
		}
	}
	// Keys in the byte order json.Marshal sorts map keys in; a key twice
	// (the last wins when decoding) is left to the decoder.
	unquoted := func(m member) []byte { return m.key[1 : len(m.key)-1] }
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(unquoted(a), unquoted(b)) })
	for k := 1; k < len(members); k++ {
		if bytes.Equal(members[k-1].key, members[k].key) {
			return dst, false
		}
	}
	values := bytes.Clone(dst[start:])
	dst = append(dst[:start], '{')
	for k, m := range members {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(append(dst, m.key...), ':'), values[m.from-start:m.to-start]...)
	}
	return append(dst, '}'), true
}

func (c *canonicalizer) array(dst []byte, depth int) ([]byte, bool) {
	if depth > MaxJSONDepth {
		return dst, false
	}
	c.i++ // [
	dst = append(dst, '[')
	c.skipSpace()
	if c.i < len(c.src) && c.src[c.i] == ']' {
		c.i++
		return append(dst, ']'), true
	}
	for first := true; ; first = false {
		if !first {
			dst = append(dst, ',')
		}
		c.skipSpace()
		var ok bool
		if dst, ok = c.value(dst, depth); !ok {
			return dst, false
		}
		c.skipSpace()
		if c.i >= len(c.src) {
			return dst, false
		}
		c.i++
		switch c.src[c.i-1] {
		case ']':
			return append(dst, ']'), true
		case ',':
		default:
			return dst, false
		}
	}
}

// plainString returns the string at c.i, quotes included, when json.Marshal
// would write it back byte for byte: no escape, no control character, none
// of <, >, &, valid UTF-8 without U+2028 or U+2029.
func (c *canonicalizer) plainString() ([]byte, bool) {
	start := c.i
	ascii := true
	for c.i++; c.i < len(c.src); c.i++ {
		switch b := c.src[c.i]; {
		case b == '"':
			c.i++
			s := c.src[start:c.i]
			if !ascii && (!utf8.Valid(s) || bytes.Contains(s, []byte("\u2028")) || bytes.Contains(s, []byte("\u2029"))) {
				return nil, false
			}
			return s, true
		case b < 0x20 || b == '\\' || b == '<' || b == '>' || b == '&':
			return nil, false
		case b >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// number appends the number at c.i as sent, if it is valid JSON.
func (c *canonicalizer) number(dst []byte) ([]byte, bool) {
	start := c.i
	digits := func() int {
		n := 0
		for c.i < len(c.src) && c.src[c.i] >= '0' && c.src[c.i] <= '9' {
			c.i++
			n++
		}
		return n
	}
	if c.src[c.i] == '-' {
		c.i++
	}
	if c.i < len(c.src) && c.src[c.i] == '0' {
		c.i++
	} else if digits() == 0 {
		return dst, false
	}
	if c.i < len(c.src) && c.src[c.i] == '.' {
		c.i++
		if digits() == 0 {
			return dst, false
		}
	}
	if c.i < len(c.src) && (c.src[c.i] == 'e' || c.src[c.i] == 'E') {
		c.i++
		if c.i < len(c.src) && (c.src[c.i] == '+' || c.src[c.i] == '-') {
			c.i++
		}
		if digits() == 0 {
			return dst, false
		}
	}
	return append(dst, c.src[start:c.i]...), true
}
