package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"
	"strconv"

	"github.com/canvasd/canvasd/canvas"
)

// obj is a JSON object of a file.
type obj = map[string]any

// kept is what an import keeps of a file's object beside the model, under
// props.meta.<format>: the object's members the export does not give back
// as they were (Keep: the original values; Drop: members the export adds
// that the object did not have) and a signature of what the export makes
// of the model's values (Sig). While the signature still matches, the
// object is written back as it was read; once the node or edge changed,
// only the members the model does not hold are carried over.
type kept struct {
	Keep map[string]any `json:"keep,omitempty"`
	Drop []string       `json:"drop,omitempty"`
	Sig  string         `json:"sig"`
}

// keepOf compares an object read from a file with what the export makes of
// the node or edge it became; carry names the members the export only
// fills with defaults (seeds, versions, ...), left out of the signature.
func keepOf(orig, fresh obj, carry map[string]bool) kept {
	k := kept{Sig: signature(fresh, carry)}
	for key, v := range orig {
		if fv, ok := fresh[key]; !ok || !sameJSON(v, fv) {
			if k.Keep == nil {
				k.Keep = map[string]any{}
			}
			k.Keep[key] = v
		}
	}
	for key := range fresh {
		if _, ok := orig[key]; !ok {
			k.Drop = append(k.Drop, key)
		}
	}
	sort.Strings(k.Drop)
	return k
}

// apply gives the object to write: fresh with what was kept. While the
// signature matches, that is the object as it was read; else the members
// in carry and those the format does not define (known) come along.
func (k kept) apply(fresh obj, carry, known map[string]bool) obj {
	same := k.Sig != "" && k.Sig == signature(fresh, carry)
	for key, v := range k.Keep {
		if same || carry[key] || !known[key] {
			fresh[key] = v
		}
	}
	if same {
		for _, key := range k.Drop {
			delete(fresh, key)
		}
	}
	return fresh
}

// The FNV-1a 64-bit constants.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// signature hashes the members of o but those in carry.
func signature(o obj, carry map[string]bool) string {
	var small [16]string
	keys := small[:0]
	for k := range o {
		if !carry[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	h := uint64(fnvOffset) // FNV-1a, 64 bits (hash/fnv's New64a, without its allocation)
	var buf [256]byte
	b := buf[:0]
	for _, k := range keys {
		b = appendCanon(append(append(b[:0], k...), '='), o[k])
		b = append(b, ';')
		for _, c := range b {
			h = (h ^ uint64(c)) * fnvPrime
		}
	}
	return hex.EncodeToString(binary.BigEndian.AppendUint64(b[:0], h)) // as %016x
}

// appendCanon appends a canonical text of a JSON value (numbers as
// encoding/json writes them, object members sorted).
func appendCanon(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, t)
	case string:
		return appendQuote(b, t)
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return canvas.AppendNum(b, f)
		}
		return append(b, t...)
	case float64:
		return canvas.AppendNum(b, t)
	case int:
		return strconv.AppendInt(b, int64(t), 10)
	case []any:
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanon(b, x)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanon(append(appendQuote(b, k), ':'), t[k])
		}
		return append(b, '}')
	}
	j, _ := json.Marshal(v)
	return append(b, j...)
}

// appendQuote is strconv.AppendQuote, quick for printable ASCII (which it
// leaves as it is).
func appendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, s)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// sameJSON reports whether a and b are the same JSON value written the
// same way (1.0 and 1 differ: a file's text comes back as it was).
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		switch y := b.(type) {
		case json.Number:
			return x == y
		case float64:
			var buf [32]byte
			return string(x) == string(canvas.AppendNum(buf[:0], y))
		}
		return false
	case float64:
		switch y := b.(type) {
		case float64:
			return x == y
		case json.Number:
			var buf [32]byte
			return string(canvas.AppendNum(buf[:0], x)) == string(y)
		}
		return false
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// metaOf returns props.meta.<name> of props decoded into a kept, if any.
func metaOf(props map[string]any, name string) (kept, bool) {
	meta, _ := props["meta"].(map[string]any)
	m, ok := meta[name].(map[string]any)
	if !ok {
		return kept{}, false
	}
	var k kept
	b, err := json.Marshal(m)
	if err != nil || json.Unmarshal(b, &k) != nil {
		return kept{}, false
	}
	return k, true
}

// setMeta stores v under props.meta.<name>: a kept or an exKept as the
// JSON object it encodes to (built directly: an import sets thousands).
func setMeta(props map[string]any, name string, v any) {
	meta, _ := props["meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		props["meta"] = meta
	}
	switch t := v.(type) {
	case kept:
		meta[name] = t.object(map[string]any{})
	case exKept:
		m := t.kept.object(map[string]any{})
		if t.Sig == "" {
			delete(m, "sig")
		}
		if t.Label != nil {
			m["label"] = t.Label.object(map[string]any{})
		}
		if t.File != nil {
			m["file"] = t.File.object(map[string]any{})
		}
		if t.Pos != nil {
			m["pos"] = float64(*t.Pos)
		}
		if t.LPos != nil {
			m["lpos"] = float64(*t.LPos)
		}
		if t.ID != "" {
			m["id"] = t.ID
		}
		if t.LID != "" {
			m["lid"] = t.LID
		}
		meta[name] = m
	default:
		b, _ := json.Marshal(v)
		var m any
		json.Unmarshal(b, &m)
		meta[name] = m
	}
}

// object is k as the JSON object it encodes to, in m.
func (k kept) object(m map[string]any) map[string]any {
	if len(k.Keep) > 0 {
		m["keep"] = k.Keep
	}
	if len(k.Drop) > 0 {
		drop := make([]any, len(k.Drop))
		for i, d := range k.Drop {
			drop[i] = d
		}
		m["drop"] = drop
	}
	m["sig"] = k.Sig
	return m
}

// metaField returns props.meta.<name>.<field>.
func metaField(props map[string]any, name, field string) any {
	meta, _ := props["meta"].(map[string]any)
	m, _ := meta[name].(map[string]any)
	return m[field]
}

// decodeJSON decodes a file's JSON object, refusing deep nesting; numbers
// stay json.Number so integers read back as they were written.
func decodeJSON(data []byte) (obj, error) {
	if err := checkDepth(data); err != nil {
		return nil, err
	}
	if v, ok := canvas.ParseJSONFast(data); ok { // as below, without reflection
		if o, ok := v.(obj); ok {
			return o, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fileError("", "is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fileError("", "holds more than one JSON value")
	}
	o, ok := v.(obj)
	if !ok {
		return nil, fileError("", "must be a JSON object")
	}
	return o, nil
}

// checkDepth refuses JSON nested deeper than MaxDepth.
func checkDepth(data []byte) error {
	depth, inString, esc := 0, false, false
	for i, c := range data {
		switch {
		case inString:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return fileError("", "is nested deeper than %d levels (at byte %d)", MaxDepth, i)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// number reads a JSON number (json.Number or float64).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}
