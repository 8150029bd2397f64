package reducer

import (
	"fmt"
	"runtime/debug"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// bigState builds a state of n nodes (and n/10 edges) through Decide and Apply.
func bigState(tb testing.TB, n int) *canvas.State {
	s := canvas.NewState()
	step := func(typ, args string) {
		cmd := rhCommand(s, typ, args)
		dec, err := Decide(s, cmd)
		if err != nil {
			tb.Fatalf("%s: %v", typ, err)
		}
		c := commitOf(cmd, dec)
		if err := Apply(s, &c); err != nil {
			tb.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		step("create_shape", fmt.Sprintf(`{"id":"n%d","type":"geo","x":%d,"y":%d,"props":{"color":"blue","text":"node %d"}}`, i, i%100*120, i/100*120, i))
	}
	for i := 0; i+1 < n; i += 10 {
		step("create_edge", fmt.Sprintf(`{"id":"e%d","from":"n%d","to":"n%d"}`, i, i, i+1))
	}
	return s
}

func benchDecideApply(b *testing.B, s *canvas.State, typ string, args func(i int) string) {
	benchDecideApplyAs(b, s, "user-1", typ, args)
}

// benchDecideApplyAs runs Decide+Apply with commits by actor; an empty actor
// records no undo history (doc_history.go), which isolates the reducer core.
func benchDecideApplyAs(b *testing.B, s *canvas.State, actor, typ string, args func(i int) string) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := rhCommand(s, typ, args(i))
		dec, err := Decide(s, cmd)
		if err != nil {
			b.Fatal(err)
		}
		c := commitOf(cmd, dec)
		c.ActorID = actor
		if err := Apply(s, &c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMove10k: Decide+Apply of a one-node move on a 10k-node state.
func BenchmarkMove10k(b *testing.B) {
	s := bigState(b, 10000)
	benchDecideApply(b, s, "move", func(i int) string { return fmt.Sprintf(`{"ids":["n%d"],"dx":1,"dy":-1}`, i%10000) })
}

// BenchmarkMoveBoundNode: Decide+Apply of a move of a node with two bound
// edges (their ends follow it in the same commit), on a chain of 100 nodes
// and on one of 50,000 (each node bound to the next); x-small is the big
// canvas's time over the small one's (1: no cost grows with the canvas,
// which the node→edges index gives). The collector is off while it runs:
// its cost grows with the heap whatever the reducer does (the server tunes
// it: store.TuneGC), and the ratio is about the reducer.
func BenchmarkMoveBoundNode(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var small float64
	for _, n := range []int{100, 50000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := canvas.NewState()
			step := func(typ, args string) {
				cmd := rhCommand(s, typ, args)
				dec, err := Decide(s, cmd)
				if err != nil {
					b.Fatalf("%s: %v", typ, err)
				}
				c := commitOf(cmd, dec)
				if err := Apply(s, &c); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < n; i++ {
				step("create_shape", fmt.Sprintf(`{"id":"n%d","type":"geo","x":%d,"y":%d}`, i, i%100*120, i/100*120))
				if i > 0 {
					step("create_edge", fmt.Sprintf(`{"id":"e%d","from":"n%d","to":"n%d"}`, i, i-1, i))
				}
			}
			benchDecideApply(b, s, "move", func(i int) string { return fmt.Sprintf(`{"ids":["n50"],"dx":%d,"dy":-1}`, i%7+1) })
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if n == 100 {
				small = per
			} else if small > 0 {
				b.ReportMetric(per/small, "x-small")
			}
		})
	}
}

// BenchmarkMove10kNoHistory: the same without undo-history recording.
func BenchmarkMove10kNoHistory(b *testing.B) {
	s := bigState(b, 10000)
	benchDecideApplyAs(b, s, "", "move", func(i int) string { return fmt.Sprintf(`{"ids":["n%d"],"dx":1,"dy":-1}`, i%10000) })
}

// BenchmarkMoveDecide10k: Decide alone (the part that runs under the canvas lock before the append).
func BenchmarkMoveDecide10k(b *testing.B) {
	s := bigState(b, 10000)
	cmd := rhCommand(s, "move", `{"ids":["n5000"],"dx":1,"dy":-1}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decide(s, cmd); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreate10k: Decide+Apply of create_shape on a 10k-node state (no scan for the z-order key).
func BenchmarkCreate10k(b *testing.B) {
	s := bigState(b, 10000)
	benchDecideApply(b, s, "create_shape", func(int) string { return `{"type":"geo","x":1,"y":2,"props":{"color":"red"}}` })
}

// BenchmarkUpdateProps10k: Decide+Apply of a props merge on a 10k-node state.
func BenchmarkUpdateProps10k(b *testing.B) {
	s := bigState(b, 10000)
	benchDecideApply(b, s, "update_shape", func(i int) string { return fmt.Sprintf(`{"id":"n%d","props":{"label":"v%d"}}`, i%10000, i) })
}

// BenchmarkEncodeState10k: snapshot encoding of a 10k-node state.
func BenchmarkEncodeState10k(b *testing.B) {
	s := bigState(b, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		data, err := EncodeState(s)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
	}
}

// BenchmarkDecodeState10k: snapshot decoding of a 10k-node state (part of a cold load).
func BenchmarkDecodeState10k(b *testing.B) {
	data, err := EncodeState(bigState(b, 10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeState(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRevertTurn10k: reading what a turn of 10,000 commands on a
// 10k-node canvas changed (LoadRevert, outside the engine's writer) and
// deciding its revert (Decide, in the writer).
func BenchmarkRevertTurn10k(b *testing.B) {
	s := bigState(b, 10000)
	var log []canvas.Commit
	var revs []int64
	for i := 0; i < 10000; i++ {
		cmd := rhCommand(s, "move", fmt.Sprintf(`{"ids":["n%d"],"dx":1,"dy":-1}`, i*7%10000))
		cmd.Actor.ID = "agent"
		dec, err := Decide(s, cmd)
		if err != nil {
			b.Fatal(err)
		}
		c := commitOf(cmd, dec)
		if err := Apply(s, &c); err != nil {
			b.Fatal(err)
		}
		log = append(log, c)
		revs = append(revs, c.Rev)
	}
	args := jsonOf(map[string]any{"revs": revs})
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		before := bigState(b, 10000) // the state before the turn
		b.StartTimer()
		base, err := LoadRevert(before, revs, logReader(log))
		if err != nil {
			b.Fatal(err)
		}
		cmd := rhCommand(s, CmdRevertCommits, args)
		cmd.Revert = base
		if _, err := Decide(s, cmd); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
	}
}
