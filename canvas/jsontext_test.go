package canvas

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckJSONText(t *testing.T) {
	nest := func(n int) string { return strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat("}", n-1) }
	ok := []string{
		`{}`, `{"x":"é😀\n\"\\"}`, `{"s":"\ud83d\ude00"}`, `[1,2,{"a":[]}]`, nest(MaxJSONDepth),
		`{"a":"[[[[[[{{{{"}`, // brackets inside strings do not nest
		`{"a":"\\u0000"}`,    // an escaped backslash, then the text u0000
		"{\"a\":1}\n{\"b\":2}\n",
	}
	for _, s := range ok {
		if err := CheckJSONText([]byte(s)); err != nil {
			t.Errorf("%.80s: %v", s, err)
		}
	}
	bad := []struct {
		body, field string
		kind        error
	}{
		{"{\"a\":\"\xff\"}", "body", ErrInvalid},
		{"{\"a\":\"\xed\xa0\x80\"}", "body", ErrInvalid}, // a surrogate encoded in UTF-8
		{`{"a":"\u0000"}`, "body", ErrInvalid},
		{`{"a":"x\ud800"}`, "body", ErrInvalid},
		{`{"a":"\ud800\u0041"}`, "body", ErrInvalid},
		{`{"a":"\udc00"}`, "body", ErrInvalid},
		{nest(MaxJSONDepth + 1), "a" + strings.Repeat(".a", MaxJSONDepth-2), ErrUnprocessable},
		{`{"args":{"props":{"list":[1,` + strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth) + `]}}}`, "args.props.list[1]" + strings.Repeat("[0]", MaxJSONDepth-5), ErrUnprocessable},
	}
	for _, c := range bad {
		err := CheckJSONText([]byte(c.body))
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, c.kind) {
			t.Errorf("%.60q: got %v, want a %v FieldError", c.body, err, c.kind)
			continue
		}
		if want := c.field; len(want) > 120 {
			want = want[:60] + "…" + want[len(want)-50:]
			c.field = want
		}
		if fe.Field != c.field {
			t.Errorf("%.60q: field %q, want %q", c.body, fe.Field, c.field)
		}
	}
}

// FuzzCheckJSONText: text that passes the check and is JSON is valid UTF-8,
// decodes to a value within the depth limit whose strings hold neither NUL
// nor a lone surrogate (which Go's decoder would silently turn into U+FFFD),
// and decode → encode → decode keeps every number exactly (json.Number: the
// literal text, so 1795461385736852721 does not become ...700); refusals are
// 400/422 FieldErrors.
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c"}]}`, `{"a":"\ud83d\ude00"}`, `{"a":"\u0000"}`, "[\"\xff\"]",
		strings.Repeat("[", 70) + strings.Repeat("]", 70), `{"n":1795461385736852721}`,
		strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth),
		strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1),
		`{"n":-9007199254740993,"f":1e400,"t":1E-400,"d":0.10,"z":-0,"e":12345678901234567890123456789}`,
		"{\"a\":\"x\x00y\"}", `{"a":"\udc00"}`, `{"a":"\ud800\u0041"}`, "{\"a\":\"\xed\xa0\x80\"}",
		`{"a":"\ufffd"}`, "{\"\xc3\x28\":1}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckJSONText(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnprocessable) {
				t.Fatalf("refusal is not a 400/422 FieldError: %v", err)
			}
			return
		}
		if !json.Valid(data) {
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("invalid UTF-8 passed the check: %q", data)
		}
		v, err := decodeNumbers(data)
		if err != nil {
			t.Fatalf("checked valid JSON does not decode: %v", err)
		}
		if d := depthOf(v); d > MaxJSONDepth {
			t.Fatalf("depth %d passed the check", d)
		}
		lower := strings.ToLower(string(data))
		hasFFFD := strings.Contains(lower, `\ufffd`) || strings.ContainsRune(string(data), utf8.RuneError)
		walkStrings(v, func(s string) {
			if strings.ContainsRune(s, 0) {
				t.Fatalf("string %q with NUL passed the check", s)
			}
			if strings.ContainsRune(s, utf8.RuneError) && !hasFFFD {
				t.Fatalf("string %q decodes with U+FFFD from %q: a lone surrogate or bad byte passed the check", s, data)
			}
		})
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := decodeNumbers(b)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("decode→encode→decode changed %s: %v", data, err)
		}
	})
}

// decodeNumbers decodes the first JSON value of data keeping numbers as
// their literal text.
func decodeNumbers(data []byte) (any, error) {
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func depthOf(v any) int {
	d := 0
	switch t := v.(type) {
	case map[string]any:
		for _, x := range t {
			d = max(d, depthOf(x))
		}
		return d + 1
	case []any:
		for _, x := range t {
			d = max(d, depthOf(x))
		}
		return d + 1
	}
	return 0
}

func walkStrings(v any, f func(string)) {
	switch t := v.(type) {
	case string:
		f(t)
	case map[string]any:
		for k, x := range t {
			f(k)
			walkStrings(x, f)
		}
	case []any:
		for _, x := range t {
			walkStrings(x, f)
		}
	}
}
