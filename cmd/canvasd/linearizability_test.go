package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/canvasd/canvasd/store/pgstore/faultproxy"
)

// The linearizability test: clients send concurrent writes and reads of one
// canvas to two canvasd processes sharing one PostgreSQL database, while
// one process is killed with SIGKILL and restarted and the other is cut off
// from the database and reconnected. The history of what was asked and
// answered (with the time each request was sent and its answer arrived) is
// checked with Porcupine (github.com/anishathalye/porcupine) against a
// sequential model of a canvas: it must be linearizable, every answer
// explained by one order of the operations that respects real time.
//
// The model's state is the canvas's head revision and a hash chained over
// the ids of the nodes created at revisions 1..head, in order; every write
// creates one node with a fresh id. Operations:
//
//   - write: create_node from base_rev 0 (rebased onto the head whatever it
//     is): applied at revision head+1;
//   - cas: create_node with "strict": true from the base_rev the client last
//     saw: applied at base+1 when base is the head, else a 409 whose
//     current_rev must be the head;
//   - snapshot and events: a read of the head and of the nodes (or commits)
//     up to it.
//
// A write whose answer was lost (the process died, or a 503 says the
// outcome is unknown) may or may not have happened: its return is put at
// the end of time and its output accepts either. A request refused before
// it could run (connection refused, a 503 that says nothing was written)
// and a read that failed are left out: they changed nothing and told
// nothing.

// linInput is an operation's input.
type linInput struct {
	op   string // write, cas, snapshot, events
	id   string // the node a write creates
	base int64  // a cas's base_rev
	proc string // the process asked (for the report)
}

// linOutput is what the answer says; unknown: it was lost.
type linOutput struct {
	unknown  bool
	conflict bool   // a cas refused with 409
	rev      int64  // a write's revision, a 409's current_rev, a read's head
	chain    uint64 // a read's hash of the node ids up to rev
}

// linState is the model's state: the head and the chain of node ids.
type linState struct {
	rev   int64
	chain uint64
}

func chainID(chain uint64, id string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(chain >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(id))
	return h.Sum64()
}

var canvasModel = porcupine.Model{
	Init: func() any { return linState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(linState), input.(linInput), output.(linOutput)
		switch in.op {
		case "write":
			next := linState{s.rev + 1, chainID(s.chain, in.id)}
			return out.unknown || out.rev == next.rev, next
		case "cas":
			if s.rev != in.base {
				return out.unknown || out.conflict && out.rev == s.rev, s
			}
			next := linState{s.rev + 1, chainID(s.chain, in.id)}
			return out.unknown || !out.conflict && out.rev == next.rev, next
		default: // snapshot, events
			return out.rev == s.rev && out.chain == s.chain, s
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		res := fmt.Sprintf("rev %d", out.rev)
		switch {
		case out.unknown:
			res = "unknown"
		case out.conflict:
			res = fmt.Sprintf("409 current_rev %d", out.rev)
		}
		switch in.op {
		case "write":
			return fmt.Sprintf("%s: write %s -> %s", in.proc, in.id, res)
		case "cas":
			return fmt.Sprintf("%s: cas base %d %s -> %s", in.proc, in.base, in.id, res)
		}
		return fmt.Sprintf("%s: %s -> %s %x", in.proc, in.op, res, out.chain)
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		return fmt.Sprintf("head %d %x", s.rev, s.chain)
	},
}

// linHistory collects the operations of every client.
type linHistory struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// Counts of what happened, for the report.
	unknown, conflicts, dropped, refusedReads int

	done     atomic.Int64 // operations with an answer that tells something
	progress chan struct{}
}

func (h *linHistory) now() int64 { return int64(time.Since(h.start)) }

func (h *linHistory) add(client int, in linInput, out linOutput, call, ret int64) {
	h.mu.Lock()
	if out.unknown {
		h.unknown++
		ret = math.MaxInt64 // it may take effect at any time after its call, or never
	}
	if out.conflict {
		h.conflicts++
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
	h.done.Add(1)
	select {
	case h.progress <- struct{}{}:
	default:
	}
}

// resolveLostAnswers settles the writes whose answer was lost, from the
// canvas as it ends (snap, a snapshot read after every request ended):
// every write creates a node of its own id, so one that took effect is
// there, made at its revision, which becomes its output (its answer stays
// lost: it may have taken effect at any time after its call); one that did
// not is left out, as a request that changed nothing and told nothing may
// be. Without this, each lost write may or may not have happened at any
// point after its call, and the checker's search doubles with each one (a
// run with six took a minute). It returns how many took effect.
func (h *linHistory) resolveLostAnswers(t *testing.T, snap map[string]any) (took int) {
	t.Helper()
	state, _ := snap["state"].(map[string]any)
	nodes, _ := state["nodes"].([]any)
	made := map[string]int64{}
	for _, v := range nodes {
		n, _ := v.(map[string]any)
		id, _ := n["id"].(string)
		rev, _ := n["created_rev"].(float64)
		made[id] = int64(rev)
	}
	if len(made) == 0 {
		t.Fatalf("the final snapshot holds no nodes: %v", snap)
	}
	kept := h.ops[:0]
	for _, op := range h.ops {
		out := op.Output.(linOutput)
		if out.unknown {
			rev, ok := made[op.Input.(linInput).id]
			if !ok {
				continue
			}
			op.Output = linOutput{rev: rev}
			took++
		}
		kept = append(kept, op)
	}
	h.ops = kept
	return took
}

func (h *linHistory) drop(read bool) {
	h.mu.Lock()
	if read {
		h.refusedReads++
	} else {
		h.dropped++
	}
	h.mu.Unlock()
}

// waitOps waits until n more operations have an answer, or fails the test.
func (h *linHistory) waitOps(t *testing.T, n int64, what string) {
	t.Helper()
	want := h.done.Load() + n
	deadline := time.After(60 * time.Second)
	for h.done.Load() < want {
		select {
		case <-h.progress:
		case <-deadline:
			t.Fatalf("%s: only %d of %d operations answered within 60 s", what, h.done.Load(), want)
		}
	}
}

// linClient is one client of the test: it sends one request at a time to
// a process it picks at random.
type linClient struct {
	id    int
	http  *http.Client
	procs []*proc
	h     *linHistory
	cv    string
	seen  int64 // the highest revision this client was told of
	n     int
}

// refusedBeforeSending reports whether err means the request never reached
// the process (nothing can have been done).
func refusedBeforeSending(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) && op.Op == "dial"
}

func (c *linClient) request(p *proc, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base()+path, rd)
	req.Header.Set("Authorization", "Bearer "+mpAdmin)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// step sends one operation and records it; false when it was not answered
// (the caller paces its next attempt).
func (c *linClient) step(t *testing.T) bool {
	p := c.procs[rand.IntN(len(c.procs))]
	c.n++
	in := linInput{proc: p.name}
	switch r := rand.IntN(10); {
	case r < 3:
		in.op = "write"
	case r < 5:
		in.op, in.base = "cas", c.seen
	case r < 8:
		in.op = "snapshot"
	default:
		in.op = "events"
	}
	if in.op == "write" || in.op == "cas" {
		in.id = fmt.Sprintf("c%d-%d", c.id, c.n)
	}
	call := c.h.now()
	var status int
	var body []byte
	var err error
	switch in.op {
	case "write", "cas":
		status, body, err = c.request(p, "POST", "/canvas_commands/"+c.cv+"/command", map[string]any{
			"type": "create_node", "base_rev": in.base, "strict": in.op == "cas", "args": map[string]any{"id": in.id, "name": in.id}})
	case "snapshot":
		status, body, err = c.request(p, "GET", "/canvas_commands/snapshot/"+c.cv, nil)
	case "events":
		status, body, err = c.request(p, "GET", "/canvas_commands/"+c.cv+"/events?after_rev=0&limit=1000", nil)
	}
	ret := c.h.now()
	read := in.op == "snapshot" || in.op == "events"
	var out linOutput
	switch {
	case err != nil && (read || refusedBeforeSending(err)):
		c.h.drop(read)
		return false
	case err != nil: // sent, and the answer was lost (the process was killed)
		out.unknown = true
	case status == http.StatusServiceUnavailable:
		var prob struct{ Outcome string }
		_ = json.Unmarshal(body, &prob)
		if read || prob.Outcome == "not_written" {
			c.h.drop(read)
			return false
		}
		out.unknown = true
	case status == http.StatusConflict && in.op == "cas":
		var res struct {
			CurrentRev int64 `json:"current_rev"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			t.Errorf("409: %v: %s", err, body)
			return false
		}
		out.conflict, out.rev = true, res.CurrentRev
	case status != http.StatusOK:
		t.Errorf("%s via %s: %d %s", in.op, p.name, status, body)
		return false
	case in.op == "write" || in.op == "cas":
		var res struct {
			CurrentRev int64 `json:"current_rev"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			t.Errorf("write answer: %v: %s", err, body)
			return false
		}
		out.rev = res.CurrentRev
	case in.op == "snapshot":
		var snap struct {
			HeadRev int64 `json:"head_rev"`
			State   struct {
				Nodes []struct {
					ID         string `json:"id"`
					CreatedRev int64  `json:"created_rev"`
				} `json:"nodes"`
			} `json:"state"`
		}
		if err := json.Unmarshal(body, &snap); err != nil {
			t.Errorf("snapshot: %v", err)
			return false
		}
		nodes := snap.State.Nodes
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].CreatedRev < nodes[j].CreatedRev })
		out.rev = snap.HeadRev
		for _, n := range nodes {
			out.chain = chainID(out.chain, n.ID)
		}
	case in.op == "events":
		var page struct {
			HeadRev int64 `json:"head_rev"`
			Commits []struct {
				Rev  int64 `json:"rev"`
				Args struct {
					ID string `json:"id"`
				} `json:"args"`
			} `json:"commits"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Errorf("events: %v", err)
			return false
		}
		if len(page.Commits) == 1000 {
			t.Errorf("the events page is full: the test wrote more commits than one page holds")
		}
		out.rev = page.HeadRev
		for i, cm := range page.Commits {
			if cm.Rev != int64(i+1) {
				t.Errorf("events via %s: commit %d has rev %d", p.name, i, cm.Rev)
			}
			out.chain = chainID(out.chain, cm.Args.ID)
		}
		if n := int64(len(page.Commits)); n != page.HeadRev {
			t.Errorf("events via %s: %d commits up to head %d", p.name, n, page.HeadRev)
		}
	}
	if !out.unknown {
		c.seen = max(c.seen, out.rev)
	}
	c.h.add(c.id, in, out, call, ret)
	return true
}

// TestLinearizableUnderFaults is the linearizability test (see the top of
// this file): about 1,050 operations through a kill -9 and a cut. On a
// 2-core machine it takes about 6 s once the binary is built (up to 27 s
// while the machine was loaded by other work); the check itself, well
// under a second.
func TestLinearizableUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dbURL := pgSchemaURL(t)
	bin := buildCanvasd(t)
	// B reaches the database through a proxy the test can cut.
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	u, _ := url.Parse(dbURL)
	u.Host = proxy.Addr()
	a, b := newProc(t, "A", bin, dbURL), newProc(t, "B", bin, u.String())
	for _, p := range []*proc{a, b} {
		p.env = []string{"CANVASD_STORE_TIMEOUT=1s"}
		p.start()
	}
	waitReady(t, a.base())
	waitReady(t, b.base())
	hc := mpClient()
	hc.Timeout = 10 * time.Second
	const cv = "lin"
	mustCall(t, hc, 201, "POST", a.base()+"/api/canvases", map[string]any{"canvas_id": cv})

	h := &linHistory{start: time.Now(), progress: make(chan struct{}, 1)}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	const clients = 6
	for i := range clients {
		c := &linClient{id: i, http: hc, procs: []*proc{a, b}, h: h, cv: cv}
		wg.Go(func() {
			pace := time.NewTicker(20 * time.Millisecond) // after a refused request only
			defer pace.Stop()
			for ctx.Err() == nil {
				if !c.step(t) {
					select {
					case <-pace.C:
					case <-ctx.Done():
					}
				}
			}
		})
	}
	started := time.Now()
	h.waitOps(t, 200, "before the faults")
	a.kill() // kill -9, requests in flight
	h.waitOps(t, 100, "while A is down")
	a.start()
	waitReady(t, a.base())
	h.waitOps(t, 200, "after A's restart")
	proxy.Cut() // B loses every connection to the database
	h.waitOps(t, 200, "while B is cut off")
	proxy.Restore()
	waitReady(t, b.base())
	h.waitOps(t, 300, "after B is back")
	stop()
	wg.Wait()
	ran := time.Since(started)

	h.mu.Lock()
	defer h.mu.Unlock()
	took := h.resolveLostAnswers(t, mustCall(t, hc, 200, "GET", a.base()+"/canvas_commands/snapshot/"+cv, nil).decoded)
	checkStart := time.Now()
	res, info := porcupine.CheckOperationsVerbose(canvasModel, h.ops, 2*time.Minute)
	t.Logf("%d operations in %v (%d writes with a lost answer, %d of them applied; %d 409s; left out: %d writes refused before running, %d failed reads), checked in %v: %s",
		len(h.ops), ran.Round(time.Millisecond), h.unknown, took, h.conflicts, h.dropped, h.refusedReads, time.Since(checkStart).Round(time.Millisecond), res)
	if h.conflicts == 0 || h.refusedReads == 0 {
		t.Errorf("the run exercised too little: %d 409s, %d reads refused while B was cut off", h.conflicts, h.refusedReads)
	}
	if res != porcupine.Ok {
		dir := filepath.Join("..", "..", "test-artifacts", "linearizability")
		_ = os.MkdirAll(dir, 0o755)
		file := filepath.Join(dir, "history.html")
		if err := porcupine.VisualizePath(canvasModel, info, file); err == nil {
			t.Logf("the history, with the longest linearizable prefix, is drawn in %s", file)
		}
		t.Fatalf("the history is not linearizable (%s)", res)
	}
}
