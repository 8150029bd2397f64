package canvas

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeEnvelope(t *testing.T) {
	cases := []struct {
		in    string
		field string // "" = valid
	}{
		{`{"type":"create_node","base_rev":0}`, ""},
		{`{"type":"create_node","base_rev":3,"args":{"name":"x"},"strict":true,"id":"c1","idempotency_key":"k"}`, ""},
		{`{"type":"create_node"}`, "base_rev"},
		{`{"base_rev":1}`, "type"},
		{`{"type":"t","base_rev":-1}`, "base_rev"},
		{`{"type":"t","base_rev":1,"args":[1]}`, "args"},
		{`{"type":"t","base_rev":1,"args":"x"}`, "args"},
		{`{"type":"t","base_rev":1,"extra":1}`, "body"},
		{`{"type":"t","base_rev":1} {}`, "body"},
		{`{"type":"t","base_rev":1}}`, "body"},
		{`{"type":"t","base_rev":1}]`, "body"},
		{`{"type":"t","base_rev":"1"}`, "body"},
		{`[]`, "body"},
		{``, "body"},
	}
	for _, c := range cases {
		_, err := DecodeEnvelope([]byte(c.in))
		var fe *FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.in, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInvalid)):
			t.Errorf("%s: want a 400 naming %q, got %v", c.in, c.field, err)
		}
	}
}

// FuzzDecodeEnvelope decodes a body as the command route does (its text
// checked first: UTF-8, no NUL or lone surrogate, nesting depth) and asserts
// that whatever is accepted has args within those limits, re-encodes to an
// envelope that decodes to the same thing (decode → encode is stable, args
// byte for byte, so numbers stay exact), and that the fingerprint is a
// function of the decoded envelope.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"type":"create_node","base_rev":0,"args":{"name":"x","transform":{"x":1}}}`,
		`{"type":"move","base_rev":9,"strict":true,"args":{"ids":["a","b"],"dx":1.5,"dy":-2}}`,
		`{"type":"x","base_rev":1,"args":null}`,
		`{"type":"x","base_rev":1,"idempotency_key":"\u0000\n"}`,
		`{"type":"create_node","base_rev":0,"args":{"props":{"n":1795461385736852721,"f":1e400,"g":-0.000000000000000000001}}}`,
		"{\"type\":\"create_node\",\"base_rev\":0,\"args\":{\"name\":\"\xff\"}}",
		`{"type":"create_node","base_rev":0,"args":{"name":"\ud800"}}`,
		`{"type":"create_node","base_rev":0,"args":{"props":` + strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70) + `}}`,
		// At the depth limit (the body, args and props are three levels) and one past it.
		`{"type":"create_node","base_rev":0,"args":{"props":{"d":` + strings.Repeat(`[`, MaxJSONDepth-3) + strings.Repeat(`]`, MaxJSONDepth-3) + `}}}`,
		`{"type":"create_node","base_rev":0,"args":{"props":{"d":` + strings.Repeat(`[`, MaxJSONDepth-2) + strings.Repeat(`]`, MaxJSONDepth-2) + `}}}`,
		`{"type":"create_node","base_rev":0,"args":{"name":"a\u0000b"}}`,
		"{\"type\":\"create_node\",\"base_rev\":0,\"args\":{\"name\":\"a\x00b\"}}",
		`{"type":"create_node","base_rev":0,"args":{"props":{"k\u0000":1}}}`,
		`{"type":"create_node","base_rev":0,"args":{"name":"\ud83d\ude00","props":{"s":"\udc00"}}}`,
		"{\"type\":\"create_node\",\"base_rev\":0,\"args\":{\"props\":{\"\xed\xa0\x80\":1}}}",
		`{"type":"create_node","base_rev":0,"args":{"props":{"n":[-9007199254740993,12345678901234567890123456789,1E+2,-0,0.10,1e-400]}}}`,
		`{"type":"create_node","base_rev":18446744073709551616,"args":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := CheckJSONText(data); err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnprocessable) {
				t.Fatalf("text check error is not a 400/422: %v", err)
			}
			return
		}
		e, err := DecodeEnvelope(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("decode error is not a 400 FieldError: %v", err)
			}
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		if err := CheckJSONText(e.Args); err != nil {
			t.Fatalf("accepted args fail the text check: %v", err)
		}
		// The limits hold for what was accepted: valid UTF-8, no NUL, within
		// the depth limit (the args sit one level inside the body).
		if !utf8.Valid(e.Args) {
			t.Fatalf("accepted args hold invalid UTF-8: %q", e.Args)
		}
		if v, err := decodeNumbers(e.Args); err == nil {
			if depthOf(v) > MaxJSONDepth-1 {
				t.Fatalf("accepted args nest %d levels", depthOf(v))
			}
			walkStrings(v, func(s string) {
				if strings.ContainsRune(s, 0) {
					t.Fatalf("accepted args hold NUL: %q", e.Args)
				}
			})
		}
		e2, err := DecodeEnvelope(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		// Every number comes back as the literal sent (1795461385736852721,
		// not ...700), every string as sent (escapes such as \u0026 for & may
		// differ: json.Marshal escapes HTML characters).
		a1, err1 := decodeNumbers(e.Args)
		a2, err2 := decodeNumbers(e2.Args)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(a1, a2) {
			t.Fatalf("args changed across decode→encode→decode: %s → %s", e.Args, e2.Args)
		}
		if e.Fingerprint() != e2.Fingerprint() {
			t.Fatalf("fingerprint changed across decode→encode→decode: %s", b)
		}
	})
}

func TestPrincipalAccess(t *testing.T) {
	scoped := Principal{Role: RoleEditor, Canvases: []string{"a"}}
	if !scoped.CanAccess("a", RoleViewer) || !scoped.CanAccess("a", RoleEditor) || scoped.CanAccess("a", RoleAdmin) || scoped.CanAccess("b", RoleViewer) {
		t.Fatal("scoped editor access wrong")
	}
	global := Principal{Role: RoleViewer}
	if !global.CanAccess("any", RoleViewer) || global.CanAccess("any", RoleEditor) {
		t.Fatal("global viewer access wrong")
	}
	if (Principal{}).CanAccess("a", RoleViewer) {
		t.Fatal("no role must not access")
	}
}

func TestValidateIDs(t *testing.T) {
	for _, ok := range []string{"a", "shape:abc-1", "c_0123", "x.y", ".a", "..-", "a..", ":"} {
		if ValidateID("id", ok) != nil {
			t.Errorf("%q should be valid", ok)
		}
	}
	for _, bad := range []string{"", "a b", "a/b", "é", string(make([]byte, 129)), ".", "..", "...", strings.Repeat(".", MaxIDLen)} {
		err := ValidateID("id", bad)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "id" || !errors.Is(err, ErrUnprocessable) {
			t.Errorf("%q: %v, want a 422 field error on id", bad, err)
		}
	}
	if ValidateActorID("agent-123", ActorAgent) == nil || ValidateActorID("agent-0f8fad5b-d9cb-469f-a165-70867728950e", ActorAgent) != nil {
		t.Error("agent id validation wrong")
	}
}

// TestFingerprintKeepsNumbersExact: an idempotency key reused with args that
// differ only past float64's precision is a different envelope (422), while
// key order and white space do not matter.
func TestFingerprintKeepsNumbersExact(t *testing.T) {
	fp := func(args string) string {
		e, err := DecodeEnvelope([]byte(`{"type":"update_node","base_rev":1,"idempotency_key":"k","args":` + args + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return e.Fingerprint()
	}
	a := fp(`{"id":"n","props":{"big":1795461385736852721}}`)
	if a == fp(`{"id":"n","props":{"big":1795461385736852723}}`) {
		t.Error("numbers that differ past float64 precision give one fingerprint")
	}
	if a != fp(`{ "props": {"big": 1795461385736852721}, "id": "n" }`) {
		t.Error("key order or white space changed the fingerprint")
	}
}
