package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// BenchmarkColdLoad100k measures loading a canvas whose log holds 100,500
// commits (1,000 nodes, each moved about 100 times) into a fresh engine: the
// stored state snapshot at rev 100,000 plus the 500-commit tail after it.
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
	const nodes, total, batch = 1000, 100500, 1000
	rev := int64(0)
	for rev < total {
		n := min(batch, int(total-rev))
		envs := make([]canvas.Envelope, 0, n)
		for i := 0; i < n; i++ {
			k := int(rev) + i
			var args any
			typ := "create_node"
			if k < nodes {
				args = map[string]any{"id": fmt.Sprintf("n%d", k), "name": "node", "transform": map[string]any{"x": k, "y": k}}
			} else {
				typ, args = "move", map[string]any{"id": fmt.Sprintf("n%d", k%nodes), "x": k, "y": -k}
			}
			a, _ := json.Marshal(args)
			envs = append(envs, canvas.Envelope{Type: typ, Args: a})
		}
		resp, err := e.ExecuteBatch(ctx, "big", canvas.Actor{ID: "user-1", Type: canvas.ActorHuman}, rev, "", envs)
		if err != nil || resp.Status != 200 {
			b.Fatalf("batch at %d: %v %s", rev, err, resp.Body)
		}
		rev += int64(n)
	}
	e.Stop() // waits for the background snapshot writes
	var times []time.Duration
	for i := 0; i < max(b.N, 5); i++ {
		fresh := store.NewEngine(st, store.EngineConfig{})
		if err := fresh.Start(ctx); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		var head int64
		if err := fresh.View(ctx, "big", -1, func(s *canvas.State, _ string) error { head = s.Rev; return nil }); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		fresh.Stop()
		if head != total {
			b.Fatalf("cold load reached rev %d, want %d", head, total)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "max-ms")
}
