package reducer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// fuzzBase is a state with one of everything: plain shapes, a frame with a
// child, a nested group, a doc, edges, and tombstones.
func fuzzBase(t testing.TB) *canvas.State { return fuzzBaseRH(t).s }

// fuzzBaseRH is fuzzBase's harness, with the log that built the state.
func fuzzBaseRH(t testing.TB) *rh {
	h := newRH(t)
	h.box("a", 0, 0, 10, 10)
	h.box("b", 20, 5, 10, 20)
	h.box("c", 50, -5, 30, 10)
	h.do("create_shape", `{"id":"f","type":"frame","x":100,"y":100,"w":200,"h":200}`)
	h.do("create_shape", `{"id":"k","type":"note","x":110,"y":110,"parent_id":"f","props":{"color":"blue"}}`)
	h.box("g1", 300, 0, 10, 10)
	h.box("g2", 330, 30, 10, 10)
	h.box("g3", 360, 60, 10, 10)
	h.do("group", `{"ids":["g1","g2"],"group_id":"g"}`)
	h.do("group", `{"ids":["g","g3"],"group_id":"gg"}`)
	h.do("create_node", `{"id":"doc","type":"doc","props":{"text":"one\ntwo\nthree\n","language":"go"}}`)
	h.do("create_edge", `{"id":"e1","from":"a","to":"b"}`)
	h.do("create_edge", `{"id":"e2","from":"g1","to":"k","props":{"text":"x"}}`)
	h.do("create_edge", `{"id":"e3","from":"c","to":"gg","props":{"routing":"elbow","fromSide":"bottom"}}`)
	h.do("create_edge", `{"id":"e4","from":"f","props":{"routing":"curved","points":[{"x":100,"y":150},{"x":50,"y":60},{"x":-20,"y":30}]}}`)
	h.box("dead", 0, 0, 1, 1)
	h.do("delete_node", `{"id":"dead"}`)
	h.do("rotate", `{"ids":["c"],"degrees":30}`)
	checkInvariants(t, h.s)
	return h
}

// fuzzSeeds are command lines "type args" used as seeds by both fuzz tests.
func fuzzSeeds() []string {
	return []string{
		`create_node {"name":"x","transform":{"x":1,"y":2}}`,
		`create_node {"id":"n1","type":"frame","parent_id":"f"}`,
		`create_node {"id":"a"}`,
		`create_shape {"type":"text","x":5,"y":5,"parent_id":"gg"}`,
		`update_node {"id":"a","name":"A","transform":{"x":3,"w":0},"props":{"meta":{"z":{"q":1}}}}`,
		`update_shape {"id":"g","x":0,"y":0,"w":5,"h":5}`,
		`update_shape {"id":"f","rotation":1.2,"x":-3}`,
		`update_shape {"id":"gg","rotation":0.5}`,
		`delete_node {"id":"g"}`,
		`delete_node {"id":"f"}`,
		`delete_shape {"ids":["g1","g2"]}`,
		`delete_shape {"ids":["gg","g3","a"]}`,
		`create_edge {"from":"a","to":"doc"}`,
		`create_edge {"from":"a","to":"dead"}`,
		`update_edge {"id":"e2","props":{"text":null,"meta":{"a":[1]}}}`,
		`delete_edge {"id":"e1"}`,
		`update_edge {"id":"e1","to":"c","props":{"routing":"elbow"}}`,
		`update_edge {"id":"e3","from":"","props":{"toSide":"left"}}`,
		`update_edge {"id":"e4","to":"doc","props":{"points":null}}`,
		`create_edge {"props":{"points":[{"x":1,"y":2},{"x":3,"y":4}]}}`,
		`create_edge {"from":"k","to":"k","props":{"points":[{"x":-900,"y":2},{"x":3,"y":4},{"x":900,"y":900}]}}`,
		`move {"ids":["a","gg","g1"],"dx":1e308,"dy":1e308}`,
		`move {"ids":["a","gg","g1"],"dx":3,"dy":-4}`,
		`move {"id":"k","x":0,"y":0}`,
		`resize {"ids":["gg","c"],"scale_x":2,"scale_y":0.25}`,
		`resize {"id":"gg","w":1,"h":1000}`,
		`resize {"ids":["f"],"scale_x":1e-300,"scale_y":3,"origin_x":7}`,
		`rotate {"ids":["gg","a","k"],"degrees":33.3}`,
		`rotate {"ids":["f"],"degrees":-270,"origin_y":0}`,
		`group {"ids":["a","k"]}`,
		`group {"ids":["g1","g3"],"group_id":"x"}`,
		`ungroup {"id":"gg"}`,
		`ungroup {"id":"g"}`,
		`align {"ids":["a","b","c","gg"],"alignment":"right"}`,
		`align {"ids":["g1","g2"],"alignment":"center-vertical"}`,
		`distribute {"ids":["a","b","c","f","gg"],"direction":"vertical"}`,
		`stack {"ids":["c","b","a","g1"],"direction":"horizontal","gap":-2}`,
		`reorder {"ids":["a","c"],"op":"bring_forward"}`,
		`reorder {"ids":["doc"],"op":"send_to_back"}`,
		`reorder {"ids":["g1","k","b"],"op":"send_backward"}`,
		`reorder {"ids":["a","b","c"],"op":"bring_to_front"}`,
		`replace_lines {"node_id":"doc","start_line":1,"end_line":2,"new_content":"x\ny\nz"}`,
		`search_replace {"node_id":"doc","search_pattern":"t","replace_with":"T","case_sensitive":true,"regex":false,"max_replacements":0}`,
		`undo {}`,
		`redo {}`,
		`move {"ids":[],"dx":1}`,
		`move {"ids":["a"],"dx":"1"}`,
		`nonsense {}`,
		`create_node {"id":"n1"} x`,
		// The text limits and exact numbers (the API checks the text first:
		// canvas.CheckJSONText; the reducer must keep numbers as sent).
		`create_node {"id":"big","props":{"meta":{"n":1795461385736852721,"neg":-9007199254740993,"f":1e400,"t":1e-400,"d":0.10,"z":-0,"e":1E+2}}}`,
		`update_node {"id":"a","props":{"meta":{"n":12345678901234567890123456789,"l":[9007199254740993,{"x":-1795461385736852721}]}}}`,
		`update_edge {"id":"e2","props":{"meta":{"w":18446744073709551617}}}`,
		`create_shape {"type":"geo","x":1,"y":2,"props":{"meta":{"n":9223372036854775808},"opacity":0.10}}`,
		`create_node {"name":"deep","props":{"meta":{"d":` + strings.Repeat("[", canvas.MaxJSONDepth-4) + strings.Repeat("]", canvas.MaxJSONDepth-4) + `}}}`,
		`create_node {"name":"deeper","props":{"meta":{"d":` + strings.Repeat("[", canvas.MaxJSONDepth) + strings.Repeat("]", canvas.MaxJSONDepth) + `}}}`,
		`create_node {"name":"a\u0000b"}`,
		"create_node {\"name\":\"\xff\"}",
		`create_node {"name":"\udc00","props":{"meta":{"\ud83d\ude00":"\ud83d"}}}`,
	}
}

// propNumbers returns the literal text of every number inside args.props,
// as the last of duplicate keys leaves it (nil: no props object).
func propNumbers(args string) []string {
	d := json.NewDecoder(strings.NewReader(args))
	d.UseNumber()
	var a struct {
		Props map[string]any `json:"props"`
	}
	if d.Decode(&a) != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case json.Number:
			out = append(out, t.String())
		case map[string]any:
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(a.Props)
	return out
}

func splitLine(line string) (typ, args string) {
	typ, args, _ = strings.Cut(strings.TrimSpace(line), " ")
	return typ, args
}

func commitOf(cmd canvas.Command, dec Decision) canvas.Commit {
	return canvas.Commit{CanvasID: cmd.CanvasID, EventID: "e", Rev: cmd.Rev, CmdID: cmd.ID, Type: cmd.Type,
		Args: cmd.Args, ActorID: cmd.Actor.ID, ActorType: cmd.Actor.Type, TS: cmd.TS, Changes: dec.Changes}
}

// jsonRoundTrip returns c as it comes back from the event log.
func jsonRoundTrip(t testing.TB, c canvas.Commit) canvas.Commit {
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshal commit: %v", err)
	}
	var out canvas.Commit
	if err := canvas.UnmarshalExact(b, &out); err != nil { // as the stores decode it
		t.Fatalf("unmarshal commit: %v", err)
	}
	canvas.NormalizePatchNumbers(out.Changes)
	return out
}

func checkRoundTrip(t testing.TB, s *canvas.State) {
	b, err := EncodeState(s)
	if err != nil {
		t.Fatalf("EncodeState: %v", err)
	}
	d, err := DecodeState(b)
	if err != nil {
		t.Fatalf("DecodeState: %v", err)
	}
	if !reflect.DeepEqual(d, s) {
		t.Fatalf("state round trip differs")
	}
}

// FuzzDecide: Decide never modifies its input; a rejection is an
// Unprocessable FieldError; decisions are deterministic; applying the
// decision (ApplyDecision) and the logged (JSON) changes gives equal states
// that keep every invariant and survive EncodeState/DecodeState.
func FuzzDecide(f *testing.F) {
	for _, s := range fuzzSeeds() {
		typ, args := splitLine(s)
		f.Add(typ, args)
	}
	base := fuzzBase(f)
	pristine := base.Clone()
	f.Fuzz(func(t *testing.T, typ, args string) {
		cmd := rhCommand(base, typ, args)
		dec, err := Decide(base, cmd)
		if !reflect.DeepEqual(base, pristine) {
			t.Fatalf("Decide modified its input")
		}
		if err != nil {
			checkDecideError(t, err)
			return
		}
		again, err := Decide(base, cmd)
		if err != nil || !reflect.DeepEqual(again, dec) {
			t.Fatalf("Decide is not deterministic: %v", err)
		}
		live, logged := base.Clone(), base.Clone()
		c := commitOf(cmd, dec)
		if err := ApplyDecision(live, &c, &dec); err != nil { // as the engine applies what it decided
			t.Fatalf("ApplyDecision: %v", err)
		}
		rc := jsonRoundTrip(t, c)
		if err := Apply(logged, &rc); err != nil {
			t.Fatalf("Apply of the logged commit: %v", err)
		}
		if !reflect.DeepEqual(live, logged) {
			t.Fatalf("live and logged apply differ")
		}
		if !reflect.DeepEqual(base, pristine) {
			t.Fatalf("Apply on a clone modified the base")
		}
		checkInvariants(t, live)
		checkRoundTrip(t, live)
		// Client data comes back exactly as sent: every number of the props
		// of text that passes the API's check is in the state as its literal
		// (1795461385736852721, not ...700), and so in the changes of a create.
		if canvas.CheckJSONText([]byte(args)) == nil {
			enc, err := EncodeState(live)
			if err != nil {
				t.Fatalf("EncodeState: %v", err)
			}
			ch, err := json.Marshal(dec.Changes)
			if err != nil {
				t.Fatalf("encoding changes: %v", err)
			}
			for _, n := range propNumbers(args) {
				if strings.Contains(args, `"points"`) && strings.HasSuffix(typ, "_edge") {
					break // an edge's bound ends given away from their nodes move onto them
				}
				if !strings.Contains(string(enc), n) {
					t.Fatalf("props number %s is not in the state as sent", n)
				}
				if strings.HasPrefix(typ, "create_") && !strings.Contains(string(ch), n) {
					t.Fatalf("props number %s is not in the changes as sent: %s", n, ch)
				}
			}
		}
		// Every written entity is touched.
		touched := map[canvas.Ref]bool{}
		for _, r := range dec.Touched {
			touched[r] = true
		}
		for _, ch := range dec.Changes {
			if !touched[canvas.Ref{Kind: ch.Kind, ID: ch.ID}] {
				t.Fatalf("change of %s %s not in Touched", ch.Kind, ch.ID)
			}
		}
	})
}

// FuzzReplay runs a script of commands (one "type args" per line) and checks
// that replaying the log, twice and from its JSON form, rebuilds the live state.
func FuzzReplay(f *testing.F) {
	seeds := fuzzSeeds()
	for i := range seeds {
		f.Add(strings.Join(seeds[i:min(i+8, len(seeds))], "\n"))
	}
	f.Add(strings.Join(seeds, "\n"))
	// Reverts (revisions 1 to 13 are the setup's) and undos over them.
	f.Add(strings.Join([]string{`update_shape {"id":"a","x":5}`, `update_shape {"id":"a","x":9}`, `move {"ids":["b"],"dx":3,"dy":0}`,
		`revert_commits {"revs":[15,16]}`, `undo {}`, `revert_commits {"revs":[15]}`, `undo {}`, `undo {}`, `redo {}`}, "\n"))
	setup := []string{
		`create_shape {"id":"a","type":"geo","x":0,"y":0,"w":10,"h":10}`,
		`create_shape {"id":"b","type":"geo","x":20,"y":5,"w":10,"h":20}`,
		`create_shape {"id":"c","type":"geo","x":50,"y":-5,"w":30,"h":10}`,
		`create_shape {"id":"f","type":"frame","x":100,"y":100,"w":200,"h":200}`,
		`create_shape {"id":"k","type":"note","x":110,"y":110,"parent_id":"f"}`,
		`create_shape {"id":"g1","type":"geo","x":300,"y":0}`,
		`create_shape {"id":"g2","type":"geo","x":330,"y":30}`,
		`create_shape {"id":"g3","type":"geo","x":360,"y":60}`,
		`group {"ids":["g1","g2"],"group_id":"g"}`,
		`group {"ids":["g","g3"],"group_id":"gg"}`,
		`create_node {"id":"doc","type":"doc","props":{"text":"one\ntwo\n"}}`,
		`create_edge {"id":"e1","from":"a","to":"b"}`,
		`create_edge {"id":"e2","from":"g1","to":"k"}`,
	}
	f.Fuzz(func(t *testing.T, script string) {
		lines := strings.Split(script, "\n")
		if len(lines) > 64 {
			lines = lines[:64]
		}
		h := newRH(t)
		for _, l := range append(append([]string{}, setup...), lines...) {
			typ, args := splitLine(l)
			_, _ = h.try(typ, args)
		}
		checkInvariants(t, h.s)
		r1, err := Replay(h.log)
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
		r2, err := Replay(h.log)
		if err != nil {
			t.Fatalf("Replay: %v", err)
		}
		logged := make([]canvas.Commit, len(h.log))
		for i, c := range h.log {
			logged[i] = jsonRoundTrip(t, c)
		}
		r3, err := Replay(logged)
		if err != nil {
			t.Fatalf("Replay of the JSON log: %v", err)
		}
		if !reflect.DeepEqual(r1, h.s) || !reflect.DeepEqual(r2, r1) || !reflect.DeepEqual(r3, r1) {
			t.Fatalf("replay differs from the live state")
		}
		checkRoundTrip(t, h.s)
	})
}

// FuzzDecodeState: whatever DecodeState accepts re-encodes stably.
func FuzzDecodeState(f *testing.F) {
	b, err := EncodeState(fuzzBase(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, bad := range badSnapshots(b) {
		f.Add(bad)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeState(data)
		if err != nil {
			if !errors.Is(err, canvas.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		b1, err := EncodeState(s)
		if err != nil {
			return // e.g. props holding values JSON cannot encode
		}
		s2, err := DecodeState(b1)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		b2, err := EncodeState(s2)
		if err != nil || string(b1) != string(b2) {
			t.Fatalf("encoding not stable: %v", err)
		}
	})
}

// The seeds must mostly exercise the success path, or the fuzz tests check little.
func TestFuzzSeedsApply(t *testing.T) {
	base := fuzzBase(t)
	ok := 0
	for _, s := range fuzzSeeds() {
		typ, args := splitLine(s)
		if _, err := Decide(base, rhCommand(base, typ, args)); err != nil {
			t.Logf("seed %s: %v", s, err)
			continue
		}
		ok++
	}
	if ok < len(fuzzSeeds())-9 {
		t.Fatalf("only %d of %d seeds apply", ok, len(fuzzSeeds()))
	}
}

// checkDecideError: Decide fails only with an Unprocessable FieldError, or
// (undo/redo of something another actor changed since) a *canvas.ConflictError.
func checkDecideError(t testing.TB, err error) {
	t.Helper()
	var fe *canvas.FieldError
	var ce *canvas.ConflictError
	if errors.As(err, &fe) && errors.Is(err, canvas.ErrUnprocessable) || errors.As(err, &ce) {
		return
	}
	t.Fatalf("error %v is neither an Unprocessable FieldError nor a ConflictError", err)
}

// TestRandomHistoryKeepsInvariants runs random scripts of the fuzz seeds by
// two actors, interleaved with their undos, redos and reverts of earlier
// commits, and checks the invariants after every command that applied (undo
// and revert over what the other actor did since must keep them too).
func TestRandomHistoryKeepsInvariants(t *testing.T) {
	seeds := fuzzSeeds()[:40]
	trials := 1500
	if testing.Short() {
		trials = 300
	}
	for trial := 0; trial < trials; trial++ {
		rng := rand.New(rand.NewSource(int64(trial)))
		h := fuzzBaseRH(t)
		var script []string
		for i := 0; i < 16; i++ {
			l := seeds[rng.Intn(len(seeds))]
			if rng.Intn(3) == 0 {
				switch r1, r2 := h.s.Rev-rng.Int63n(6), h.s.Rev-rng.Int63n(6); rng.Intn(4) {
				case 0, 1:
					l = `undo {}`
				case 2:
					l = `redo {}`
				default:
					if r1 == r2 {
						l = fmt.Sprintf(`revert_commits {"revs":[%d]}`, r1)
					} else {
						l = fmt.Sprintf(`revert_commits {"revs":[%d,%d]}`, r1, r2)
					}
				}
			}
			actor := []string{"user-1", "bob"}[rng.Intn(2)]
			typ, args := splitLine(l)
			cmd := rhCommand(h.s, typ, args)
			cmd.Actor.ID = actor
			cmd, err := withRevert(cmd, h.log)
			if err != nil {
				checkDecideError(t, err)
				continue
			}
			dec, err := Decide(h.s, cmd)
			if err != nil {
				checkDecideError(t, err)
				continue
			}
			c := jsonRoundTrip(t, commitOf(cmd, dec))
			if err := Apply(h.s, &c); err != nil {
				t.Fatalf("trial %d: apply %s: %v", trial, l, err)
			}
			h.log = append(h.log, c)
			script = append(script, actor+": "+l)
			if msg := invariantError(t, h.s); msg != "" {
				t.Fatalf("trial %d: %s\nafter:\n  %s", trial, msg, strings.Join(script, "\n  "))
			}
		}
		// Replaying the log rebuilds the live state, histories included.
		for range 2 {
			r, err := Replay(h.log)
			if err != nil {
				t.Fatalf("trial %d: Replay: %v", trial, err)
			}
			if !reflect.DeepEqual(r, h.s) {
				t.Fatalf("trial %d: replay differs from the live state after:\n  %s", trial, strings.Join(script, "\n  "))
			}
		}
	}
}

// invariantError returns checkInvariants' complaint about s, or "".
func invariantError(t testing.TB, s *canvas.State) (msg string) {
	ft := &fatalTB{TB: t}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			msg = string(f)
		}
	}()
	checkInvariants(ft, s)
	return ""
}

type fatal string

// fatalTB turns Fatalf into a panic of type fatal.
type fatalTB struct{ testing.TB }

func (f *fatalTB) Fatalf(format string, args ...any) { panic(fatal(fmt.Sprintf(format, args...))) }
func (f *fatalTB) Helper()                           {}
