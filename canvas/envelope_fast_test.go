package canvas

import (
	"reflect"
	"strings"
	"testing"
)

var envelopeSamples = []string{
	`{"type":"create_node","base_rev":0,"args":{"name":"n","transform":{"x":1,"y":2}}}`,
	` { "id" : "c1", "type" : "move", "base_rev" : 12, "strict" : true, "idempotency_key" : "k", "args" : { "ids" : ["a", "b\\"}"], "dx" : 1 } } `,
	`{"type":"x","base_rev":-3,"args":{}}`,
	`{"type":"x","base_rev":0,"strict":false}`,
	`{"TYPE":"x","Base_Rev":1,"ARGS":{"a":[{"b":"}"}]}}`,
	`{"type":"x","type":"y","base_rev":1}`,
	`{"type":"x","Type":"y","base_rev":1}`,
	`{"type":"x","base_rev":1.0}`,
	`{"type":"x","base_rev":1e2}`,
	`{"type":"x","base_rev":"1"}`,
	`{"type":"x","base_rev":null}`,
	`{"type":null,"base_rev":1}`,
	`{"type":"x","base_rev":123456789012345678901}`,
	`{"type":"x","base_rev":999999999999999999}`,
	`{"type":"x","base_rev":1,"args":null}`,
	`{"type":"x","base_rev":1,"args":[1]}`,
	`{"type":"x","base_rev":1,"args":"{}"}`,
	`{"type":"x","base_rev":1,"extra":1}`,
	`{"type":"x\u0041","base_rev":1}`,
	`{"typ\u0065":"x","base_rev":1}`,
	`{"type":"é","base_rev":1}`,
	"{\"type\":\"\xff\",\"base_rev\":1}",
	`{"type":"x","base_rev":1,"strict":1}`,
	`{"type":"x","base_rev":1}}`,
	`{"type":"x","base_rev":1} x`,
	`{"type":"x","base_rev":1`,
	`[]`,
	`{}`,
	``,
	`{"id":"` + strings.Repeat("a", 300) + `","type":"x","base_rev":1}`,
	`{"type":"` + strings.Repeat("t", 70) + `","base_rev":1}`,
}

// decodeEnvelopeFast must decode exactly what encoding/json decodes, or
// leave the body to it.
func TestDecodeEnvelopeFastMatchesSlow(t *testing.T) {
	fast := 0
	for _, s := range envelopeSamples {
		fast += checkFastEnvelope(t, []byte(s))
	}
	if fast < 6 {
		t.Errorf("the fast path took only %d of the samples", fast)
	}
}

func checkFastEnvelope(t *testing.T, data []byte) int {
	t.Helper()
	got, ok := decodeEnvelopeFast(data)
	if !ok {
		return 0
	}
	gotErr := got.Validate()
	want, wantErr := decodeEnvelopeSlow(data)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: fast error %v, slow error %v", data, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: fast %+v, slow %+v", data, got, want)
	}
	return 1
}

func FuzzDecodeEnvelopeFast(f *testing.F) {
	for _, s := range envelopeSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFastEnvelope(t, data) })
}
