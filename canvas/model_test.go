package canvas

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// TestCommitEncode checks that a commit's own encoding reads back as the
// commit (args compacted, nil changes as []), that ChangesJSON is the part
// of it json.Marshal would write for the changes, and that Encode keeps it.
func TestCommitEncode(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 678900000, time.UTC)
	for _, c := range []Commit{
		{CanvasID: "c1", EventID: "1-ab", Rev: 1, CmdID: "cmd_1", Type: "create_node", Args: json.RawMessage(`{ "name": "a <b> & \"c\"",
			"n": [1, 2.5e3] }`), ActorID: "user-1", ActorType: ActorHuman, TS: ts,
			Changes: []Change{{Op: OpPut, Kind: KindNode, ID: "n1", Value: json.RawMessage(`{"id":"n1","props":{"t":"x\u2028y"}}`)},
				{Op: OpPatch, Kind: KindNode, ID: "n2", Patch: map[string]any{"x": 1.5, "name": "é\n"}}}},
		{CanvasID: "c\"odd", EventID: "2-cd", Rev: 2, Type: "undo", ActorID: "agent-<1>", ActorType: ActorAgent, TS: ts},
	} {
		got, err := c.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Commit
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("encoding is not JSON: %v: %s", err, got)
		}
		wantBack := c
		if c.Args == nil {
			wantBack.Args = json.RawMessage("null") // as encoding/json reads null into a RawMessage
		} else {
			var buf bytes.Buffer
			_ = json.Compact(&buf, c.Args)
			wantBack.Args = buf.Bytes()
		}
		if wantBack.Changes == nil {
			wantBack.Changes = []Change{}
		}
		for i := range wantBack.Changes { // values read back compact, as stored
			if v := wantBack.Changes[i].Value; v != nil {
				var buf bytes.Buffer
				_ = json.Compact(&buf, v)
				wantBack.Changes[i].Value = buf.Bytes()
			}
		}
		if !reflect.DeepEqual(back, wantBack) {
			t.Fatalf("read back:\n%+v\nwant\n%+v\nfrom %s", back, wantBack, got)
		}
		changes, _ := json.Marshal(wantBack.Changes)
		if cj, _ := c.ChangesJSON(); !bytes.Equal(cj, changes) {
			t.Fatalf("ChangesJSON = %s, want %s", cj, changes)
		}
		if err := c.Encode(); err != nil {
			t.Fatal(err)
		}
		if enc, _ := c.JSON(); !bytes.Equal(enc, got) {
			t.Fatalf("after Encode JSON = %s, want %s", enc, got)
		}
		if cj, _ := c.ChangesJSON(); !bytes.Equal(cj, changes) {
			t.Fatalf("after Encode ChangesJSON = %s, want %s", cj, changes)
		}
		// Documents listing commits use the kept encoding (json.Marshal escapes HTML in it).
		var viaMarshal, kept any
		if m, err := json.Marshal(&c); err != nil || json.Unmarshal(m, &viaMarshal) != nil || json.Unmarshal(got, &kept) != nil ||
			!reflect.DeepEqual(viaMarshal, kept) {
			t.Fatalf("json.Marshal(&c) = %s, %v", m, err)
		}
	}
}

// TestIsCompact checks the encoders' first look against encoding/json:
// isCompact says a value is unchanged exactly when compacting it (escaping
// HTML and U+2028/U+2029 too, as json.Marshal does, with htmlSafe) leaves
// it unchanged.
func TestIsCompact(t *testing.T) {
	for _, raw := range []string{
		`{"a":1}`, `{"a": 1}`, "{\"a\":1}\n", `[1,2,{"b":[true,null]}]`, `"plain"`, `12.5e3`,
		`{"s":"with spaces\tand tabs inside"}`, `{"s":"a\"b c"}`, `{"s":"a\\"}`, `{"s":"a\\" ,"t":1}`,
		`{"s":"<b>"}`, `{"s":"a & b"}`, `{"s":"x` + "\u2028" + `y"}`, `{"s":"x` + "\u2029" + `"}`,
		`{"s":"x\u2028y"}`, `{"s":"é and ✓"}`, `{"s":"` + "\u20ac" + `"}`, ` {"a":1}`, `{"a":[1, 2]}`,
	} {
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(raw)); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if got, want := isCompact([]byte(raw), false), compact.String() == raw; got != want {
			t.Errorf("isCompact(%s, false) = %v, want %v", raw, got, want)
		}
		marshalled, _ := json.Marshal(json.RawMessage(raw))
		if got, want := isCompact([]byte(raw), true), string(marshalled) == raw; got != want {
			t.Errorf("isCompact(%s, true) = %v, want %v", raw, got, want)
		}
		if got, _ := appendRawJSON(nil, json.RawMessage(raw)); string(got) != string(marshalled) {
			t.Errorf("appendRawJSON(%s) = %s, want %s", raw, got, marshalled)
		}
	}
	for _, truncated := range []string{`{"x":`, `[1,2`, `"abc`, `{"a":1}}`, `{"a":"}`, ``} {
		if isCompact([]byte(truncated), true) {
			t.Errorf("isCompact(%s) = true for a truncated value", truncated)
		}
		if _, err := appendRawJSON(nil, json.RawMessage(truncated)); err == nil {
			t.Errorf("appendRawJSON(%s): no error", truncated)
		}
	}
}

// TestNodeAppendJSON checks the node encoder against json.Marshal, also for
// the numbers encoding/json writes with an exponent and strings it escapes.
func TestNodeAppendJSON(t *testing.T) {
	for _, n := range []Node{
		{},
		{ID: "shape:1", Type: "geo", Name: "a <b> & \"c\"\n", ParentID: "frame:é", X: 1, Y: -2.5, W: 1e21, H: 1e-7,
			Rotation: 123456789.125, Index: "a1", Props: map[string]any{"text": "x\u2028y", "n": json.Number("1.50"), "nested": map[string]any{"k": []any{true, nil}}},
			CreatedBy: "user<1>", UpdatedBy: "agent", CreatedRev: 1, UpdatedRev: 9007199254740993},
		{ID: "n", X: 5e-324, Y: -1e-6, W: 0.000001, H: 999999999999999999999, Rotation: math.Copysign(0, -1), Props: map[string]any{}},
	} {
		want, err := json.Marshal(&n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := n.AppendJSON([]byte("prefix"))
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("AppendJSON = %s, %v\nwant prefix%s", got, err, want)
		}
	}
	bad := Node{ID: "n", X: math.Inf(1)}
	if _, err := bad.AppendJSON(nil); err == nil {
		t.Error("AppendJSON of an infinite x: no error")
	}
}
