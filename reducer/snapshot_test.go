package reducer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// badSnapshots returns malformed variants of the snapshot good: each must be
// refused with canvas.ErrInvalid.
func badSnapshots(good []byte) [][]byte {
	header := func(rev, base int64, count uint64) []byte {
		b := append([]byte(snapshotMagic), binary.AppendVarint(nil, rev)...)
		b = binary.AppendVarint(b, base)
		return binary.AppendUvarint(b, count)
	}
	withRecord := func(kind byte, id string, flags byte, rest ...byte) []byte {
		b := header(1, 0, 1)
		b = append(b, kind)
		b = appendString(b, id)
		return append(append(b, flags), rest...)
	}
	return [][]byte{
		nil,
		[]byte(`{"schema":1,"rev":1}`),
		good[:len(good)-1],
		append(append([]byte(nil), good...), 0),
		header(-1, 0, 0),
		header(5, 3, 0),                               // a delta alone
		header(1, 0, 1),                               // a missing record
		header(1, 0, 1<<40),                           // more records than bytes
		withRecord('x', "a", 0),                       // unknown kind
		withRecord(recNode, "a", hasValue, 1, 0),      // a node value cut short
		withRecord(recNode, "a", hasValue, 0),         // an empty node value
		withRecord(recHistory, "u", hasValue, 2, '{'), // a history that is not JSON
		append(withRecord(recEdge, "b", hasTomb, 2), append([]byte{recEdge}, append(appendString(nil, "a"), hasTomb, 2)...)...), // out of order
	}
}

// setAll sets every field of the struct v points to to a non-zero value
// (props to one value of each kind a snapshot stores).
func setAll(t *testing.T, v any) {
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("%s-%d", rv.Type().Field(i).Name, i))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.25)
		case reflect.Int64:
			f.SetInt(int64(i) + 1)
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]any{"s": "x", "f": 1.5, "t": true, "n": nil, "num": json.Number("12345678901234567890"),
				"a": []any{false, "y", map[string]any{}}, "o": map[string]any{"k": []any{}}}))
		default:
			t.Fatalf("setAll: field %s of kind %s: teach the snapshot test (and appendNode/appendEdge) about it", rv.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestSnapshotKeepsEveryField: a node and an edge with every field set
// survive encoding (a new field that the binary codec misses fails here).
func TestSnapshotKeepsEveryField(t *testing.T) {
	var n canvas.Node
	var e canvas.Edge
	setAll(t, &n)
	setAll(t, &e)
	s := canvas.NewState()
	s.Rev = 9
	s.Nodes[n.ID] = &n
	s.SetEdge(e.ID, &e)
	b, err := EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, s) {
		t.Fatalf("round trip differs:\n%+v %+v\n%+v %+v", d.Nodes[n.ID], d.Edges[e.ID], &n, &e)
	}
}

// TestSnapshotDeltas drives a state through many commands, storing a delta
// every few commits as the engine does (the refs the commits changed, the
// histories that differ), and checks that every chain decodes to the state
// at its last revision, merged whole or not, and that merging part of a
// chain (deltas only) and then the rest gives the same.
func TestSnapshotDeltas(t *testing.T) {
	h := fuzzBaseRH(t)
	var chain [][]byte
	var states []*canvas.State
	base := int64(0)
	changed := map[canvas.Ref]struct{}{}
	var prevHist canvas.History
	logged := 0
	snap := func() {
		for _, c := range h.log[logged:] {
			for _, ch := range c.Changes {
				changed[canvas.Ref{Kind: ch.Kind, ID: ch.ID}] = struct{}{}
			}
		}
		logged = len(h.log)
		b, err := CaptureDelta(h.s, base, changed, prevHist).Encode()
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, b)
		states = append(states, h.s.Clone())
		base, prevHist = h.s.Rev, h.s.History
		clear(changed)
	}
	for round := 0; round < 6; round++ {
		for _, line := range fuzzSeeds() {
			typ, args := splitLine(line)
			_, _ = h.try(typ, args)
		}
		h.box(fmt.Sprintf("r%d", round), float64(round), 0, 5, 5)
		h.do("create_edge", fmt.Sprintf(`{"id":"re%d","from":"r%d","to":"doc"}`, round, round))
		if round%2 == 1 {
			h.do("delete_node", fmt.Sprintf(`{"id":"r%d"}`, round-1))
		}
		snap()
	}
	if len(h.s.Tombstones) == 0 || len(h.s.History) == 0 || len(h.s.Edges) == 0 {
		t.Fatal("the test state lacks tombstones, histories or edges: it proves little")
	}
	for i := range chain {
		want := states[i]
		got, err := DecodeState(chain[:i+1]...)
		if err != nil {
			t.Fatalf("chain of %d: %v", i+1, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("chain of %d decodes to another state", i+1)
		}
		whole, err := MergeSnapshots(chain[:i+1]...)
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := EncodeState(want)
		if string(whole) != string(enc) {
			t.Fatalf("chain of %d merged differs from the state's own whole encoding", i+1)
		}
		if i >= 2 {
			tail, err := MergeSnapshots(chain[1 : i+1]...)
			if err != nil {
				t.Fatal(err)
			}
			if rev, b, _, _ := SnapshotHeader(tail); rev != want.Rev || b == 0 {
				t.Fatalf("merged deltas: rev %d base %d", rev, b)
			}
			got, err := DecodeState(chain[0], tail)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("whole + merged deltas of %d: %v", i+1, err)
			}
		}
	}
	if _, err := DecodeState(chain[0], chain[2]); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("a chain with a gap decoded: %v", err)
	}
}

// TestPropsNumbersStayExact: numbers in props are kept as sent (not through
// float64) by Decide, Apply of the logged commit, undo, and the snapshot
// codec, history included.
func TestPropsNumbersStayExact(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "alice", "create_node", json.RawMessage(`{"id":"n","name":"n","props":{"meta":{"big":1795461385736852721,"huge":1e400,"dec":0.10,"deep":[[-9007199254740993]]}}}`))
	mustExec(t, s, "alice", "update_node", json.RawMessage(`{"id":"n","props":{"meta":{"big":1795461385736852723}}}`))
	props := func(s *canvas.State) string {
		b, err := json.Marshal(s.Nodes["n"].Props)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const after = `{"meta":{"big":1795461385736852723,"dec":0.10,"deep":[[-9007199254740993]],"huge":1e400}}`
	if got := props(s); got != after {
		t.Fatalf("props %s, want %s", got, after)
	}
	b, err := EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, s) {
		t.Fatal("state differs after EncodeState/DecodeState")
	}
	mustExec(t, d, "alice", "undo", json.RawMessage(`{}`))
	if got, want := props(d), `{"meta":{"big":1795461385736852721,"dec":0.10,"deep":[[-9007199254740993]],"huge":1e400}}`; got != want {
		t.Fatalf("after undo from a decoded snapshot: props %s, want %s", got, want)
	}
}
