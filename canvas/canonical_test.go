package canvas

import (
	"encoding/json"
	"testing"
)

// marshalDecoded is the canonical form by its definition: the value decoded
// with UnmarshalExact, written by json.Marshal.
func marshalDecoded(data []byte) []byte {
	var v any
	_ = UnmarshalExact(data, &v)
	out, _ := json.Marshal(v)
	return out
}

var canonicalCases = []struct {
	in   string
	fast bool // taken without decoding
}{
	{`{"name":"n","transform":{"x":1,"y":2}}`, true},
	{` { "y" : [ 1 , -2.5e+3 , 0 , true , false , null , { } , [ ] ] , "x" : "é ü 日本" } `, true},
	{`{"b":1,"a":{"d":[{"z":1,"y":2}],"c":"x"}}`, true},
	{`{"a!":1,"a":2,"a ":3,"":4}`, true}, // "a" sorts before "a!" and "a ", though '"' > '!'
	{`{"n":1795461385736852721,"f":1.10,"e":1E5,"z":-0}`, true},
	{`{}`, true},
	{`[]`, true},
	{`"plain"`, true},
	{`{"a":1,"a":2}`, false},                  // the last wins when decoded
	{`{"t":"a\"b","u":"\u00e9"}`, false},      // escapes are re-encoded
	{`{"h":"<b>&</b>"}`, false},               // json.Marshal escapes them
	{"{\"l\":\"a\u2028b\"}", false},           // and these
	{"{\"bad\":\"\xff\"}", false},             // invalid UTF-8 becomes U+FFFD
	{`{"a":1,}`, false},                       // not JSON: decoded, as before
	{`{"a":01}`, false},                       //
	{`{"a":1} {"b":2}`, false},                // trailing data
	{``, false},                               // no args: null
	{`{"a":tru}`, false},                      //
	{`{"deep":` + deepArray(70) + `}`, false}, // over MaxJSONDepth
	{`{"ok":` + deepArray(60) + `}`, true},    //
}

func deepArray(n int) string {
	s := "1"
	for range n {
		s = "[" + s + "]"
	}
	return s
}

func TestCanonicalJSON(t *testing.T) {
	for _, c := range canonicalCases {
		want := marshalDecoded([]byte(c.in))
		if got := canonicalJSON([]byte(c.in)); string(got) != string(want) {
			t.Errorf("canonicalJSON(%.60q) = %.80s, want %.80s", c.in, got, want)
		}
		if _, fast := appendCanonical(nil, []byte(c.in)); fast != c.fast {
			t.Errorf("appendCanonical(%.60q) took the fast path: %v, want %v", c.in, fast, c.fast)
		}
	}
}

// FuzzCanonicalJSON: whatever the args, the canonical form is what
// decoding and marshalling gives, so that fingerprints stored before the
// fast path still match.
func FuzzCanonicalJSON(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := canonicalJSON(data), marshalDecoded(data); string(got) != string(want) {
			t.Fatalf("canonicalJSON(%q) = %s, want %s", data, got, want)
		}
	})
}

// TestFingerprintStable: fingerprints are stored with idempotency keys, so
// their form may not change (a retry after an upgrade must still match).
func TestFingerprintStable(t *testing.T) {
	base := int64(3)
	e := Envelope{ID: "c1", Type: "create_node", BaseRev: &base, Strict: true, Args: json.RawMessage(`{ "b": 1, "a": {"y": 1.50, "x": "é"} }`)}
	if got, want := e.Fingerprint(), "c1\x00create_node\x003\x00true\x00"+`{"a":{"x":"é","y":1.50},"b":1}`; got != want {
		t.Errorf("Fingerprint() = %q, want %q", got, want)
	}
	if got, want := (&Envelope{Type: "undo"}).Fingerprint(), "\x00undo\x00-1\x00false\x00null"; got != want {
		t.Errorf("Fingerprint() without args = %q, want %q", got, want)
	}
}
