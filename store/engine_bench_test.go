package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// BenchmarkColdLoad100k measures loading a canvas of 100,000 shapes into a
// fresh engine: the stored state snapshots plus the log after the last one
// (500 moves are made after the last 1,000-commit boundary). It also reports
// the heap the loaded canvas holds per shape (after a GC, with the engine
// holding nothing else).
func BenchmarkColdLoad100k(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "cold.db")
	st, err := sqlitestore.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "big", CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	e := store.NewEngine(st, store.EngineConfig{SnapshotEvery: 1000})
	if err := e.Start(ctx); err != nil {
		b.Fatal(err)
	}
	const shapes, tail, batch = 100000, 500, 1000
	const total = shapes + tail
	rev := int64(0)
	for rev < total {
		n := min(batch, int(total-rev))
		envs := make([]canvas.Envelope, 0, n)
		for i := 0; i < n; i++ {
			k := int(rev) + i
			var args any
			typ := "create_shape"
			if k < shapes {
				args = map[string]any{"id": fmt.Sprintf("n%d", k), "type": "geo", "x": k % 300 * 120, "y": k / 300 * 120,
					"props": map[string]any{"color": "blue", "text": fmt.Sprintf("node %d", k)}}
			} else {
				typ, args = "move", map[string]any{"ids": []string{fmt.Sprintf("n%d", k%shapes)}, "dx": 1, "dy": -1}
			}
			a, _ := json.Marshal(args)
			envs = append(envs, canvas.Envelope{Type: typ, Args: a})
		}
		resp, err := e.ExecuteBatch(ctx, "big", canvas.Actor{ID: "user-1", Type: canvas.ActorHuman}, rev, "", envs)
		if err != nil || resp.Outcome != store.OutcomeApplied {
			b.Fatalf("batch at %d: %v %s", rev, err, resp.Result)
		}
		rev += int64(n)
	}
	e.Stop() // waits for the background snapshot writes
	e = nil
	var times []time.Duration
	var perShape float64
	for i := 0; i < max(b.N, 5); i++ {
		before := heapInUse()
		fresh := store.NewEngine(st, store.EngineConfig{})
		if err := fresh.Start(ctx); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		var head int64
		var count int
		if err := fresh.View(ctx, "big", -1, func(s *canvas.State, _ string) error { head, count = s.Rev, len(s.Nodes); return nil }); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		if i == 0 {
			perShape = float64(heapInUse()-before) / shapes
		}
		fresh.Stop()
		if head != total || count != shapes {
			b.Fatalf("cold load reached rev %d with %d shapes, want %d and %d", head, count, total, shapes)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(perShape, "heap-B/shape")
}

// heapInUse returns the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
