package canvas

import (
	"encoding/json"
	"testing"
)

// RevisionResult's hand-written encoding must be what encoding/json writes
// for its fields.
func TestRevisionResultJSONMatchesReflection(t *testing.T) {
	type plain RevisionResult // the same fields, without MarshalJSON
	var nilMap map[string]any
	for _, r := range []RevisionResult{
		{},
		{Status: StatusApplied, CurrentRev: 42, CmdID: "cmd_1", EventID: "42-abc", CreatedIDs: []string{}},
		{Status: StatusApplied, CurrentRev: 1, CmdID: "a<b>&\"c\"\\", EventID: "é\u2028x", CreatedIDs: []string{"n1", "n<2>"}, Rebased: true},
		{Status: StatusApplied, Result: map[string]any{"z": 1, "a": []any{"<x>", json.Number("1.50")}}},
		{Status: StatusApplied, Result: nilMap},
		{Status: StatusApplied, Result: json.RawMessage(`{ "spaced" : true }`)},
	} {
		want, err := json.Marshal(plain(r))
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("json.Marshal(%+v)\n got %s\nwant %s", r, got, want)
		}
		direct, err := r.AppendJSON([]byte("x"))
		if err != nil || string(direct[1:]) != string(want) || direct[0] != 'x' {
			t.Errorf("AppendJSON(%+v) = %s, %v; want x%s", r, direct, err, want)
		}
	}
}
