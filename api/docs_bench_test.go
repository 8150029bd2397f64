package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// benchDoc is a 10,000-line document (~480 KB).
func benchDoc() string {
	var b strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&b, "line %05d: the quick brown fox jumps over the dog\n", i)
	}
	return b.String()
}

func reportLatency(b *testing.B, durs []time.Duration) {
	if len(durs) < 2 {
		return
	}
	b.ReportMetric(float64(percentile(durs, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(durs, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkDocLineEditEngine: one replace_lines on a 10,000-line document
// through store.Engine.Execute (decide, apply with undo history, durable
// SQLite append, publish): the server-side time of a line edit.
func BenchmarkDocLineEditEngine(b *testing.B) {
	e := newTestEnv(b)
	cid := e.canvas("bench")
	actor := canvas.Actor{ID: "bench", Type: canvas.ActorService}
	ctx := context.Background()
	exec := func(typ string, base int64, args map[string]any) int64 {
		raw, _ := json.Marshal(args)
		resp, err := e.engine.Execute(ctx, cid, actor, canvas.Envelope{Type: typ, BaseRev: &base, Args: raw})
		if err != nil || resp.Outcome != store.OutcomeApplied {
			b.Fatalf("%s: %v %s %s", typ, err, resp.Outcome, resp.Result)
		}
		var r canvas.RevisionResult
		_ = json.Unmarshal(resp.Result, &r)
		return r.CurrentRev
	}
	head := exec("create_node", 0, map[string]any{"id": "doc", "name": "big", "type": "doc", "props": map[string]any{"text": benchDoc()}})
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		line := 1 + (i*7919)%10000
		t0 := time.Now()
		head = exec("replace_lines", head, map[string]any{"node_id": "doc", "start_line": line, "end_line": line, "new_content": fmt.Sprintf("edited %d", i)})
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, durs)
}

// BenchmarkDocLineEditHTTP: the same edit as a client sees it over loopback HTTP.
func BenchmarkDocLineEditHTTP(b *testing.B) {
	e := newTestEnv(b)
	cid := e.canvas("bench")
	tok, _ := e.token(canvas.RoleEditor, canvas.ActorService)
	cl := e.srv.Client()
	post := func(body map[string]any) int64 {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", e.srv.URL+"/canvas_commands/"+cid+"/command", bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
		var r canvas.RevisionResult
		_ = json.Unmarshal(out, &r)
		return r.CurrentRev
	}
	head := post(env("create_node", 0, map[string]any{"id": "doc", "name": "big", "type": "doc", "props": map[string]any{"text": benchDoc()}}))
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		line := 1 + (i*7919)%10000
		t0 := time.Now()
		head = post(env("replace_lines", head, map[string]any{"node_id": "doc", "start_line": line, "end_line": line, "new_content": fmt.Sprintf("edited %d", i)}))
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, durs)
}
