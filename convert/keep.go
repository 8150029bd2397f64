package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
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

// signature hashes the members of o but those in carry.
func signature(o obj, carry map[string]bool) string {
	keys := make([]string, 0, len(o))
	for k := range o {
		if !carry[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := fnv.New64a()
	for _, k := range keys {
		b, _ := json.Marshal(o[k])
		fmt.Fprintf(h, "%s=%s;", k, b)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// sameJSON reports whether a and b encode to the same JSON.
func sameJSON(a, b any) bool {
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

// setMeta stores v under props.meta.<name>.
func setMeta(props map[string]any, name string, v any) {
	meta, _ := props["meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		props["meta"] = meta
	}
	b, _ := json.Marshal(v)
	var m any
	json.Unmarshal(b, &m)
	meta[name] = m
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

// plain turns json.Numbers back into float64s (for props, which the model
// holds as plain JSON).
func plain(v any) any {
	switch t := v.(type) {
	case json.Number:
		f, _ := t.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = plain(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = plain(x)
		}
		return out
	}
	return v
}
