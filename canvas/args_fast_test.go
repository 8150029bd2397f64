package canvas

import (
	"reflect"
	"testing"
)

// FuzzDecodeCreateNodeArgsFast: where the fast decoder answers, it answers
// what DecodeStrict decodes; the shapes it is meant for it does answer.
func FuzzDecodeCreateNodeArgsFast(f *testing.F) {
	fast := []string{
		`{}`,
		`{"name":"n","transform":{"x":1,"y":2}}`,
		` { "id" : "a1", "type":"note", "parent_id":"", "name":"" , "transform": {"x":-1.5e3,"y":0,"w":10,"h":20.25,"rotation":0.5} } `,
		`{"props":{"text":"hi","n":1795461385736852721,"meta":{"k":[1,2]}},"transform":{}}`,
	}
	for _, s := range fast {
		if _, ok := DecodeCreateNodeArgsFast([]byte(s)); !ok {
			f.Errorf("%s: not decoded by the fast path", s)
		}
		f.Add(s)
	}
	for _, s := range []string{
		`{"Name":"n"}`, `{"name":"n","name":"m"}`, `{"name":"\u00e9"}`, `{"name":"é"}`, `{"transform":null}`,
		`{"transform":{"x":1,"x":2}}`, `{"transform":{"x":"1"}}`, `{"transform":{"x":1e400}}`, `{"props":null}`,
		`{"props":[]}`, `{"other":1}`, `{"name":"n"} x`, `{"name":"n"}}`, `[]`, `{"transform":{"X":1}}`, `{"name":1}`,
		`{"transform":{"x":01}}`, `{"transform":{"x":-}}`, `{"id":"a","props":{"a":1,"a":2}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := DecodeCreateNodeArgsFast([]byte(s))
		if !ok {
			return
		}
		var want CreateNodeArgs
		if err := DecodeStrict([]byte(s), &want); err != nil {
			t.Fatalf("%s: fast path decoded %+v, DecodeStrict refused: %v", s, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: fast path %+v, DecodeStrict %+v", s, got, want)
		}
	})
}
