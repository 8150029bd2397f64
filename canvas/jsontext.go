package canvas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxJSONDepth is how deeply arrays and objects may nest in a request body
// (the body's own braces count as level 1). Deeper data would be accepted by
// Go but break other readers of the canvas (Python's json, for one), so it is
// refused before anything is written.
const MaxJSONDepth = 64

// CheckJSONText checks the text of a JSON request body (or of JSON lines)
// before it is decoded, so that what one backend stores every backend stores
// alike and every reader can read back:
//   - it must be UTF-8 (ErrInvalid: 400);
//   - no string may hold NUL (\u0000) or a lone UTF-16 surrogate escape
//     (ErrInvalid: 400), which PostgreSQL cannot store and the embedded
//     store would;
//   - arrays and objects may nest at most MaxJSONDepth levels
//     (ErrUnprocessable: 422 naming the field path and the limit).
//
// It does not check the syntax; decoding does.
func CheckJSONText(data []byte) error {
	if !utf8.Valid(data) {
		return Invalid("body", "is not valid UTF-8 (first bad byte at offset %d); send UTF-8 text", firstInvalidUTF8(data))
	}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end, err := scanString(data, i+1)
			if err != nil {
				return err
			}
			i = end
		case '{', '[':
			depth++
			if depth > MaxJSONDepth {
				return Unprocessable(deepPath(data), "nests arrays and objects more than %d levels deep, the limit; flatten the data", MaxJSONDepth)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// scanString scans the string whose first content byte is at i and returns
// the offset of its closing quote (or len(data) when it is unterminated,
// which decoding reports).
func scanString(data []byte, i int) (int, error) {
	for i < len(data) {
		j := bytes.IndexAny(data[i:], `"\`)
		if j < 0 {
			return len(data), nil
		}
		i += j
		if data[i] == '"' {
			return i, nil
		}
		// A backslash escape: only \uXXXX needs a look.
		if i+1 < len(data) && data[i+1] == 'u' {
			r, ok := hex4(data, i+2)
			switch {
			case !ok:
			case r == 0:
				return 0, Invalid("body", "holds a NUL character (\\u0000) at offset %d, which cannot be stored; remove it", i)
			case r >= 0xD800 && r <= 0xDBFF: // high surrogate: a low one must follow
				if lo, ok := hex4(data, i+8); !ok || data[i+6] != '\\' || data[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
					return 0, Invalid("body", "holds a lone UTF-16 surrogate escape at offset %d, which is not a character; send valid Unicode", i)
				}
				i += 6
			case r >= 0xDC00 && r <= 0xDFFF:
				return 0, Invalid("body", "holds a lone UTF-16 surrogate escape at offset %d, which is not a character; send valid Unicode", i)
			}
		}
		i += 2
	}
	return len(data), nil
}

// hex4 decodes the four hex digits at data[i:i+4].
func hex4(data []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i:i+4]), 16, 32)
	return rune(n), err == nil
}

func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(data)
}

// deepPath returns the field path of the first value nested deeper than
// MaxJSONDepth, like "args.props.a[2].b" (elided in the middle when long);
// "body" when the text is not JSON up to there. Only refusals pay for it.
func deepPath(data []byte) string {
	type frame struct {
		array   bool
		key     string
		index   int
		wantKey bool
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.array:
				fmt.Fprintf(&b, "[%d]", f.index)
			case b.Len() > 0:
				b.WriteString("." + f.key)
			default:
				b.WriteString(f.key)
			}
		}
		p := b.String()
		if p == "" {
			return "body"
		}
		if len(p) > 120 {
			p = p[:60] + "…" + p[len(p)-50:]
		}
		return p
	}
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "body"
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) == MaxJSONDepth {
					return path()
				}
				stack = append(stack, frame{array: t == '[', wantKey: t == '{'})
				continue
			default:
				stack = stack[:len(stack)-1]
				valueDone()
				continue
			}
		case string:
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = t, false
				continue
			}
		}
		valueDone()
	}
}
