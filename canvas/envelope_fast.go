package canvas

import "encoding/json"

// decodeEnvelopeFast decodes the common shape of an envelope without
// reflection: a valid JSON object whose members are the envelope's fields
// (matched as encoding/json matches them, ASCII case-insensitively), each at
// most once, with plain strings (no escape, ASCII only), an integer
// base_rev, a boolean strict and an object args. It reports false for
// anything else, which DecodeEnvelope then decodes (or rejects) the general
// way; where it reports true the result is what that would have decoded.
func decodeEnvelopeFast(data []byte) (Envelope, bool) {
	var e Envelope
	if !json.Valid(data) {
		return e, false
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return e, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return e, true
	}
	var seen uint8
	for {
		// data is valid JSON, so a member is "key" : value, then , or }.
		key, end, ok := plainString(data, i)
		if !ok {
			return e, false
		}
		field := envelopeField(key)
		if field < 0 || seen&(1<<field) != 0 {
			return e, false
		}
		seen |= 1 << field
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		switch field {
		case fieldID, fieldType, fieldIdempotencyKey:
			v, end, ok := plainString(data, i)
			if !ok {
				return e, false
			}
			switch field {
			case fieldID:
				e.ID = string(v)
			case fieldType:
				e.Type = string(v)
			default:
				e.IdempotencyKey = string(v)
			}
			i = end
		case fieldBaseRev:
			j := i
			if j < len(data) && data[j] == '-' {
				j++
			}
			for j < len(data) && data[j] >= '0' && data[j] <= '9' {
				j++
			}
			if j == i || j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E') {
				return e, false
			}
			n, ok := smallInt(data[i:j])
			if !ok {
				return e, false
			}
			e.BaseRev = &n
			i = j
		case fieldStrict:
			switch data[i] {
			case 't':
				e.Strict, i = true, i+4
			case 'f':
				e.Strict, i = false, i+5
			default:
				return e, false
			}
		case fieldArgs:
			if data[i] != '{' {
				return e, false
			}
			end := skipValue(data, i)
			e.Args = append(json.RawMessage(nil), data[i:end]...)
			i = end
		}
		i = skipSpace(data, i)
		if data[i] == '}' {
			return e, true
		}
		i = skipSpace(data, i+1) // past the comma
	}
}

const (
	fieldID = iota
	fieldType
	fieldBaseRev
	fieldIdempotencyKey
	fieldStrict
	fieldArgs
)

var envelopeFields = [...]string{fieldID: "id", fieldType: "type", fieldBaseRev: "base_rev",
	fieldIdempotencyKey: "idempotency_key", fieldStrict: "strict", fieldArgs: "args"}

// envelopeField returns the field key names (ASCII case-insensitively, as
// encoding/json matches names), or -1.
func envelopeField(key []byte) int {
	for f, name := range envelopeFields {
		if len(key) != len(name) {
			continue
		}
		match := true
		for k := 0; k < len(key) && match; k++ {
			c := key[k]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			match = c == name[k]
		}
		if match {
			return f
		}
	}
	return -1
}

// plainString returns the content of the JSON string starting at data[i]
// and the offset past it, when it holds no escape and only ASCII (ok false
// otherwise, or when data[i] starts no string).
func plainString(data []byte, i int) (s []byte, end int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return data[i+1 : j], j + 1, true
		case c == '\\' || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipSpace returns the offset of the first non-space byte at or after i.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the offset past the object or array starting at
// data[i], in valid JSON.
func skipValue(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return i
}

// smallInt parses an optionally negative run of at most 18 digits.
func smallInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
