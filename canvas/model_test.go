package canvas

import (
	"bytes"
	"encoding/json"
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
