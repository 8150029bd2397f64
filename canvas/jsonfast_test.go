package canvas

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// stdDecode decodes data as decodeJSON-style callers do: one value, numbers as json.Number.
func stdDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if !atEOF(dec) {
		return nil, errTrailing
	}
	return v, nil
}

var errTrailing = Invalid("body", "trailing data")

// randomJSONString is a JSON string literal of escapes, ASCII, multi-byte
// runes, invalid bytes and separators.
func randomJSONString(r *rand.Rand) string {
	parts := []string{`a`, `Z`, ` `, `\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u0041`, `\u00e9`, `\u2028`,
		`\ud83d\ude00`, `é`, `€`, "\u2029", `<`, `>`, `&`, "\x7f", `\u0000`, `\ud800`, "\xff", `\x`, "\x01"}
	var b strings.Builder
	b.WriteByte('"')
	for n := r.IntN(8); n > 0; n-- {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	b.WriteByte('"')
	return b.String()
}

// TestParseJSONFastAgrees: where the fast reader reads a value, it is what
// encoding/json reads; it reads the common values (so this can fail), and
// refuses what encoding/json refuses.
func TestParseJSONFastAgrees(t *testing.T) {
	must := []string{`{}`, `[]`, ` {"a":1,"b":[1,2.5e-3,-0,true,false,null],"c":{"d":"x\ny"}} `,
		`"plain"`, `"é€ \u00e9 \ud83d\ude00 \/"`, `123456789012345678901234567890`, `{"a":1,"a":2}`, `-0.5E+10`}
	refuse := []string{``, `{`, `{"a":}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`,
		`{"a" 1}`, `"a` + "\x01" + `"`, `"\x"`, `"\ud800"`, "\"\xff\"", `{} {}`, `[1] x`, `'a'`, `NaN`,
		strings.Repeat("[", maxFastDepth+1) + strings.Repeat("]", maxFastDepth+1)}
	check := func(in string) (ok bool) {
		t.Helper()
		got, ok := ParseJSONFast([]byte(in))
		want, err := stdDecode([]byte(in))
		if ok && err != nil {
			t.Errorf("%q: fast read %v; encoding/json refuses it: %v", in, got, err)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: fast read %#v, encoding/json %#v", in, got, want)
		}
		return ok
	}
	for _, in := range must {
		if !check(in) {
			t.Errorf("%q: the fast reader refused it", in)
		}
	}
	for _, in := range refuse {
		if check(in) {
			t.Errorf("%q: the fast reader read it; it should leave it to encoding/json", in)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	read := 0
	for range 5000 {
		s := randomJSONString(r)
		if check(`{` + s + `:[` + s + `,1]}`) {
			read++
		}
	}
	if read < 1000 {
		t.Errorf("the fast reader read only %d of 5000 random strings", read)
	}
}

// TestAppendJSONValueAgrees: AppendJSONValue writes what json.Marshal
// writes, and fails where it fails.
func TestAppendJSONValueAgrees(t *testing.T) {
	vals := []any{nil, "", "a<b>&c\u2028\u2029\x00\x1f\x7f\"\\/\b\f\n\r\t é", "bad\xffutf8\xc3", true, false,
		json.Number("1.50"), json.Number(""), json.Number("1e400"), 0.0, math.Copysign(0, -1), 1e21, 1e-7, 123.456, -5e-324,
		map[string]any{"z": 1.0, "a": []any{"x", json.Number("2"), nil, map[string]any{}}, "<k>": "v"},
		[]any{}, []any(nil), map[string]any(nil), 7, []string{"s"}, map[string]any{"deep": map[string]any{"n": int64(3)}}}
	for _, v := range vals {
		want, _ := json.Marshal(v)
		got, err := AppendJSONValue([]byte("x"), v)
		if err != nil || string(got) != "x"+string(want) {
			t.Errorf("%#v: got %s (%v), json.Marshal %s", v, got, err, want)
		}
	}
	for _, v := range []any{json.Number("1x"), math.NaN(), math.Inf(1), map[string]any{"a": math.Inf(-1)}, []any{json.Number("--1")}} {
		_, want := json.Marshal(v)
		if _, err := AppendJSONValue(nil, v); err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%#v: error %v, json.Marshal's %v", v, err, want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		v, ok := ParseJSONFast([]byte(randomJSONString(r)))
		if !ok {
			continue
		}
		b := []byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))} // and raw bytes
		for _, s := range []any{v, v.(string) + string(b)} {
			want, _ := json.Marshal(s)
			if got, _ := AppendJSONValue(nil, s); !bytes.Equal(got, want) {
				t.Fatalf("%q: got %s, json.Marshal %s", s, got, want)
			}
		}
	}
}

// TestImportSceneArgsFast: the args an import writes are encoded as
// json.Marshal encodes them and decoded as DecodeStrict decodes them;
// other shapes are left to DecodeStrict.
func TestImportSceneArgsFast(t *testing.T) {
	args := []ImportSceneArgs{
		{},
		{Mode: "replace", Nodes: []ImportNode{}, Edges: []ImportEdge{}},
		{Mode: "merge", Nodes: []ImportNode{
			{ID: "n1", Type: "geo", X: 10, Y: -2.5, W: 200, H: 100, Props: map[string]any{"text": "Card\nwith <two> lines", "color": "red",
				"meta": map[string]any{"jsoncanvas": map[string]any{"sig": "00ff", "drop": []any{"x"}, "keep": map[string]any{"w": json.Number("1.0")}}}}},
			{ID: "f", Type: "frame", Name: "Gr\u00fcppe", Rotation: math.Copysign(0, -1), Props: map[string]any{}},
			{ID: "c", Type: "geo", ParentID: "f", X: 1e-7, Y: 1e21},
		}, Edges: []ImportEdge{
			{ID: "e1", From: "n1", To: "c", Props: map[string]any{"fromSide": "right", "text": "next"}},
			{ID: "e2", Type: "line", Props: map[string]any{"points": []any{map[string]any{"x": 0.0, "y": 1.5}}}},
		}},
	}
	for _, a := range args {
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.AppendJSON(nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON: %s (%v)\njson.Marshal: %s", got, err, want)
		}
		var std ImportSceneArgs
		if err := DecodeStrict(want, &std); err != nil {
			t.Fatal(err)
		}
		fast, ok := DecodeImportSceneArgsFast(want)
		if !ok {
			t.Fatalf("%s: the fast decoder refused it", want)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("%s: fast %#v, DecodeStrict %#v", want, fast, std)
		}
		spaced, _ := json.MarshalIndent(a, "", "  ")
		if fast, ok := DecodeImportSceneArgsFast(spaced); !ok || !reflect.DeepEqual(fast, std) {
			t.Fatalf("%s: indented: ok %v, %#v", spaced, ok, fast)
		}
	}
	if _, err := (&ImportSceneArgs{Nodes: []ImportNode{{ID: "a", X: math.NaN()}}}).AppendJSON(nil); err == nil {
		t.Error("a NaN coordinate encoded")
	}
	for _, in := range []string{`{"ID":"x"}`, `{"mode":"merge","mode":"replace"}`, `{"nodes":null}`, `{"nodes":[{"id":"a","props":null}]}`,
		`{"nodes":[{"id":"a","Type":"geo"}]}`, `{"nodes":[{"id":"a","x":"1"}]}`, `{"nodes":[{"id":"a","x":1e999}]}`, `{"nodes":[{"id":null}]}`,
		`{"edges":[{"id":"e","extra":1}]}`, `{"nodes":[{"id":"a","props":{"a":1}}]} x`, `{"nodes":[{"id":"a","props":{"a":1},"props":{"b":2}}]}`, `[]`} {
		if a, ok := DecodeImportSceneArgsFast([]byte(in)); ok {
			t.Errorf("%s: the fast decoder read %#v; it should leave it to DecodeStrict", in, a)
		}
	}
}

// TestEdgeAppendJSON checks the edge encoder against json.Marshal.
func TestEdgeAppendJSON(t *testing.T) {
	for _, e := range []Edge{
		{},
		{ID: "e<1>", From: "a", To: "b\n", Type: "arrow", Props: map[string]any{"text": "x\u2028y&", "points": []any{map[string]any{"x": 1.5, "y": json.Number("2")}}},
			CreatedBy: "user", CreatedRev: 3, UpdatedRev: 9007199254740993},
		{ID: "e", Props: map[string]any{}},
	} {
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.AppendJSON([]byte("prefix"))
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("AppendJSON = %s, %v\nwant prefix%s", got, err, want)
		}
	}
	bad := Edge{ID: "e", Props: map[string]any{"w": math.NaN()}}
	if _, err := bad.AppendJSON(nil); err == nil {
		t.Error("AppendJSON of a NaN prop: no error")
	}
}

// TestAppendNumIsNum: AppendNum appends what Num returns.
func TestAppendNumIsNum(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -2.5, 1e21, 1e-7, 123456789.125, 5e-324, math.Inf(1), math.NaN()} {
		if got, want := string(AppendNum([]byte("x"), f)), "x"+string(Num(f)); got != want {
			t.Errorf("AppendNum(%v) = %s, want %s", f, got, want)
		}
	}
}
