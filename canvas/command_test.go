package canvas

import (
	"encoding/json"
	"errors"
	"testing"
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

// FuzzDecodeEnvelope asserts that whatever decodes, re-encodes to an envelope
// that decodes to the same thing (decode → encode is stable), and that the
// fingerprint is a function of the decoded envelope.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"type":"create_node","base_rev":0,"args":{"name":"x","transform":{"x":1}}}`,
		`{"type":"move","base_rev":9,"strict":true,"args":{"ids":["a","b"],"dx":1.5,"dy":-2}}`,
		`{"type":"x","base_rev":1,"args":null}`,
		`{"type":"x","base_rev":1,"idempotency_key":"\u0000\n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
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
		e2, err := DecodeEnvelope(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
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
	for _, ok := range []string{"a", "shape:abc-1", "c_0123", "x.y"} {
		if ValidateID("id", ok) != nil {
			t.Errorf("%q should be valid", ok)
		}
	}
	for _, bad := range []string{"", "a b", "a/b", "é", string(make([]byte, 129))} {
		if ValidateID("id", bad) == nil {
			t.Errorf("%q should be invalid", bad)
		}
	}
	if ValidateActorID("agent-123", ActorAgent) == nil || ValidateActorID("agent-0f8fad5b-d9cb-469f-a165-70867728950e", ActorAgent) != nil {
		t.Error("agent id validation wrong")
	}
}
