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

// The commit's hand-written changes encoding must be what encoding/json
// writes for them.
func TestChangesJSONMatchesReflection(t *testing.T) {
	type plain Change // the same fields
	for _, changes := range [][]Change{
		nil,
		{},
		{{Op: OpPut, Kind: KindNode, ID: "n1", Value: json.RawMessage(`{ "id": "n1", "x": 1.50, "props": {"a": [1, 2]} }`)}},
		{{Op: OpPut, Kind: KindNode, ID: "n<1>", Value: json.RawMessage(`{"label":"a<b>&c \u2028 é"}`)},
			{Op: OpPatch, Kind: KindEdge, ID: "e1", Patch: map[string]any{"z": nil, "a": json.Number("1"), "props": map[string]any{"<": "&"}}},
			{Op: OpDelete, Kind: KindNode, ID: "gone", Patch: map[string]any{}},
			{Op: OpEdit, Kind: KindNode, ID: "d", Edit: &TextEdit{Prop: "text", Hunks: []TextHunk{{Line: 1, Del: 1, Ins: "x\n"}}}}},
	} {
		ps := make([]plain, len(changes))
		for i, c := range changes {
			ps[i] = plain(c)
		}
		want, err := json.Marshal(ps)
		if err != nil {
			t.Fatal(err)
		}
		c := &Commit{Rev: 1, Changes: changes}
		got, err := c.ChangesJSON()
		if err != nil || string(got) != string(want) {
			t.Errorf("ChangesJSON(%+v)\n got %s, %v\nwant %s", changes, got, err, want)
		}
	}
	bad := &Commit{Rev: 1, Changes: []Change{{Op: OpPut, Kind: KindNode, ID: "n", Value: json.RawMessage(`{"x":`)}}}
	if _, err := bad.ChangesJSON(); err == nil {
		t.Error("ChangesJSON of an invalid value: no error")
	}
}
