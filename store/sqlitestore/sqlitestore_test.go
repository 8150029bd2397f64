package sqlitestore_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/migrations"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
	"github.com/canvasd/canvasd/store/storetest"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind (the
// committer, the checkpointer, database/sql's openers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func openAt(t testing.TB, path string, opts ...sqlitestore.Option) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, storetest.Reopen) {
		path := filepath.Join(t.TempDir(), "canvas.db")
		return openAt(t, path), func(t *testing.T) store.Store { return openAt(t, path) }
	})
}

// TestConformanceSmallBatches runs the suite with a batch limit of 2, so
// group commits are split often and savepoint handling sees full batches.
func TestConformanceSmallBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	storetest.Run(t, func(t *testing.T) (store.Store, storetest.Reopen) {
		path := filepath.Join(t.TempDir(), "canvas.db")
		open := func(t *testing.T) store.Store { return openAt(t, path, sqlitestore.WithMaxBatch(2)) }
		return open(t), open
	})
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "c.db"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	if err := s.CreateCanvas(ctx, canvas.Canvas{ID: "x"}); !errors.Is(err, canvas.ErrUnavailable) {
		t.Fatalf("CreateCanvas after Close = %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, canvas.ErrUnavailable) {
		t.Fatalf("Ping after Close = %v, want ErrUnavailable", err)
	}
}

func TestAppendValidatesRevisions(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "c.db"))
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	bad := []canvas.Commit{{Rev: 1, Type: "x"}, {Rev: 3, Type: "x"}}
	if err := s.Append(ctx, "c", 0, bad, nil); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("Append with a gap = %v, want ErrInvalid", err)
	}
	other := []canvas.Commit{{CanvasID: "d", Rev: 1, Type: "x"}}
	if err := s.Append(ctx, "c", 0, other, nil); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("Append of another canvas's commit = %v, want ErrInvalid", err)
	}
	if c, _ := s.GetCanvas(ctx, "c"); c.HeadRev != 0 {
		t.Fatalf("head moved to %d", c.HeadRev)
	}
}

func TestCanceledContextBeforeQueueing(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "c.db"))
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.CreateCanvas(ctx, canvas.Canvas{ID: "c"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateCanvas with a canceled context = %v, want context.Canceled", err)
	}
	if _, err := s.GetCanvas(context.Background(), "c"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("the canceled create was written (err %v)", err)
	}
}

func TestSecondOpenAppliesNoMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s := openAt(t, path)
	if err := s.CreateCanvas(context.Background(), canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path) // would fail on "table canvases already exists" if it re-ran 0001
	defer s.Close()
	if _, err := s.GetCanvas(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
}

// ---- crash test ----

const crashEnv = "CANVASD_SQLITESTORE_CRASH_CHILD"

const crashCanvases = 4

// TestCrashChild is the child half of TestCrashDurability: it appends in a
// loop (several canvases at once, so group commits batch them) and prints
// "ack <canvas> <rev>" after each acknowledged Append, until killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("child process of TestCrashDurability only")
	}
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(2)
	}
	var mu sync.Mutex // one line per write(2)
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for i := range crashCanvases {
		id := fmt.Sprintf("crash-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			c, err := s.GetCanvas(ctx, id) // continue from what the previous child left
			if err != nil {
				fmt.Println("get error:", err)
				os.Exit(2)
			}
			for head := c.HeadRev; ; {
				n := 1 + int(head%3) // 1..3 commits per Append
				cs := make([]canvas.Commit, n)
				for k := range cs {
					cs[k] = crashCommit(id, head+1+int64(k))
				}
				idem := []store.IdempotencyRecord{{Key: fmt.Sprintf("k%d", head+1), Fingerprint: "f", Outcome: store.OutcomeApplied, Result: []byte("{}"), Rev: head + 1, CreatedAt: time.Now()}}
				if err := s.Append(ctx, id, head, cs, idem); err != nil {
					fmt.Println("append error:", err)
					os.Exit(3)
				}
				head += int64(n)
				mu.Lock()
				fmt.Fprintf(out, "ack %s %d\n", id, head)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func crashCommit(id string, rev int64) canvas.Commit {
	return canvas.Commit{CanvasID: id, Rev: rev, EventID: fmt.Sprintf("%d-ab", rev), Type: "create_node",
		Args: json.RawMessage(`{"name":"x"}`), ActorID: "human-1", ActorType: canvas.ActorHuman, TS: time.Now(),
		Changes: []canvas.Change{{Op: canvas.OpPut, Kind: canvas.KindNode, ID: fmt.Sprintf("shape:%d", rev), Value: json.RawMessage(`{"id":"x"}`)}}}
}

// TestCrashDurability kills -9 a child process that appends in a loop, then
// reopens the database, three times over the same file: every revision the child saw acknowledged must be
// there, and every log must be gap-free.
func TestCrashDurability(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	s := openAt(t, path)
	for i := range crashCanvases {
		if err := s.CreateCanvas(context.Background(), canvas.Canvas{ID: fmt.Sprintf("crash-%d", i), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for round := range 3 { // kill at different moments, on top of the previous rounds' data
		acked := runAndKill(t, path, 300+round*700)
		s := openAt(t, path)
		total := int64(0)
		for i := range crashCanvases {
			id := fmt.Sprintf("crash-%d", i)
			c, err := s.GetCanvas(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if c.HeadRev < acked[id] {
				t.Fatalf("round %d: canvas %s head %d < acknowledged rev %d: an acknowledged commit was lost", round, id, c.HeadRev, acked[id])
			}
			cs, err := s.ReadCommits(context.Background(), id, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(cs)) != c.HeadRev {
				t.Fatalf("round %d: canvas %s has %d commits, head %d", round, id, len(cs), c.HeadRev)
			}
			for k, cm := range cs {
				if cm.Rev != int64(k+1) {
					t.Fatalf("round %d: canvas %s: gap at %d (rev %d)", round, id, k+1, cm.Rev)
				}
			}
			total += c.HeadRev
		}
		t.Logf("round %d: killed after %d acks; %d commits on disk", round, killAfterN(acked), total)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// runAndKill starts the child, SIGKILLs it after it acknowledged killAfter
// appends, and returns the highest acknowledged rev per canvas (including
// acks still in the pipe when it died).
func runAndKill(t *testing.T, path string, killAfter int) map[string]int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int64{}
	var n atomic.Int64
	defer func() { acked[""] = n.Load() }()
	sc := bufio.NewScanner(stdout)
	killed := false
	timeout := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	defer timeout.Stop()
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "ack" {
			if strings.HasPrefix(line, "PASS") || strings.HasPrefix(line, "ok") || strings.HasPrefix(line, "---") || strings.HasPrefix(line, "===") {
				continue
			}
			t.Fatalf("child: %s", line)
		}
		rev, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("child: %s", line)
		}
		acked[f[1]] = max(acked[f[1]], rev)
		if n.Add(1) == int64(killAfter) && !killed {
			killed = true
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d acks before it was killed", n.Load())
	}
	return acked
}

// ---- benchmarks ----

func benchCommit(id string, rev int64) canvas.Commit {
	nodeID := "shape:" + strconv.FormatInt(rev, 10)
	return canvas.Commit{CanvasID: id, Rev: rev, EventID: strconv.FormatInt(rev, 10) + "-0123456789abcdef", CmdID: "cmd_" + nodeID,
		Type: "create_node", Args: json.RawMessage(`{"name":"New Idea","transform":{"x":100,"y":100}}`),
		ActorID: "agent-00000000-0000-4000-8000-000000000001", ActorType: canvas.ActorAgent, TS: time.Now(),
		Changes: []canvas.Change{{Op: canvas.OpPut, Kind: canvas.KindNode, ID: nodeID,
			Value: json.RawMessage(`{"id":"` + nodeID + `","type":"geo","name":"New Idea","parent_id":"","x":100,"y":100,"w":100,"h":100,"rotation":0,"index":"a1","props":{},"created_by":"agent-1","updated_by":"agent-1","created_rev":1,"updated_rev":1}`)}}}
}

// BenchmarkAppendOneCanvasSerial: one canvas, one Append at a time, each
// durable before the next, with 1, 16 or 128 commits per Append (the engine's
// per-canvas writer batches commands under load) and one idempotency record
// per commit.
func BenchmarkAppendOneCanvasSerial(b *testing.B) {
	for _, per := range []int{1, 16, 128} {
		b.Run("commits="+strconv.Itoa(per), func(b *testing.B) { benchSerial(b, per) })
	}
}

func benchSerial(b *testing.B, per int) {
	s := openAt(b, filepath.Join(b.TempDir(), "bench.db"))
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	head := int64(0)
	commits := make([]canvas.Commit, per)
	idem := make([]store.IdempotencyRecord, per)
	for b.Loop() {
		for k := range per {
			commits[k] = benchCommit("c", head+1+int64(k))
			idem[k] = store.IdempotencyRecord{Key: "k" + strconv.FormatInt(head+1+int64(k), 10), Fingerprint: "fp", Outcome: store.OutcomeApplied,
				Result: []byte(`{"status":"applied"}`), Rev: head + 1 + int64(k), CreatedAt: time.Now()}
		}
		if err := s.Append(ctx, "c", head, commits, idem); err != nil {
			b.Fatal(err)
		}
		head += int64(per)
	}
	b.ReportMetric(float64(head)/b.Elapsed().Seconds(), "commits/s")
	reportCPU(b, cpu0, head)
}

// BenchmarkAppendManyCanvasesParallel: 64 writers, each on its own canvas,
// one commit per Append: the store's group commit batches them.
func BenchmarkAppendManyCanvasesParallel(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), "bench.db"))
	defer s.Close()
	ctx := context.Background()
	var next atomic.Int64
	var total atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	cpu0 := cpuTime()
	st0 := s.Stats()
	b.RunParallel(func(pb *testing.PB) {
		id := "c" + strconv.FormatInt(next.Add(1), 10)
		if err := s.CreateCanvas(ctx, canvas.Canvas{ID: id, CreatedAt: time.Now()}); err != nil {
			b.Error(err)
			return
		}
		head := int64(0)
		commits := make([]canvas.Commit, 1)
		idem := make([]store.IdempotencyRecord, 1)
		for pb.Next() {
			commits[0] = benchCommit(id, head+1)
			idem[0] = store.IdempotencyRecord{Key: "k" + strconv.FormatInt(head+1, 10), Fingerprint: "fp", Outcome: store.OutcomeApplied,
				Result: []byte(`{"status":"applied"}`), Rev: head + 1, CreatedAt: time.Now()}
			if err := s.Append(ctx, id, head, commits, idem); err != nil {
				b.Error(err)
				return
			}
			head++
		}
		total.Add(head)
	})
	b.ReportMetric(float64(total.Load())/b.Elapsed().Seconds(), "commits/s")
	reportCPU(b, cpu0, total.Load())
	st := s.Stats()
	if tx := st.Transactions - st0.Transactions; tx > 0 {
		b.ReportMetric(float64(st.Writes-st0.Writes)/float64(tx), "appends/tx")
	}
}

// cpuTime is the process's user+system CPU time. The machine is shared, so
// CPU per commit is a steadier measure than wall-clock throughput.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time the whole process spent per commit.
func reportCPU(b *testing.B, since time.Duration, commits int64) {
	if commits > 0 {
		b.ReportMetric(float64((cpuTime()-since).Microseconds())/float64(commits), "cpu-µs/commit")
	}
}

// killAfterN returns the number of acks runAndKill read (stored under "").
func killAfterN(acked map[string]int64) int64 { return acked[""] }

// TestMigrationDownUndoesUp applies every down script in reverse and checks
// that no table is left, then that the up scripts apply again.
func TestMigrationDownUndoesUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	openAt(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, err := migrations.Load(sqlitestore.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	tables := func() []string {
		rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'schema_migrations' ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	if got := tables(); len(got) != 12 {
		t.Fatalf("tables after up: %v", got)
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if _, err := db.Exec(ms[i].Down); err != nil {
			t.Fatalf("down %d: %v", ms[i].Version, err)
		}
		if _, err := db.Exec(`DELETE FROM schema_migrations WHERE version = ?`, ms[i].Version); err != nil {
			t.Fatal(err)
		}
	}
	if got := tables(); len(got) != 0 {
		t.Fatalf("tables left after every down: %v", got)
	}
	db.Close()
	s := openAt(t, path) // applies the ups again
	defer s.Close()
	if err := s.CreateCanvas(context.Background(), canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestAgentTables checks the agent tables' defaults and constraints, and
// that DeleteCanvas removes a canvas's sessions and their todos.
func TestAgentTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	s := openAt(t, path)
	defer s.Close()
	ctx := context.Background()
	for _, id := range []string{"c1", "c2"} {
		if err := s.CreateCanvas(ctx, canvas.Canvas{ID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec(`INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state, data) VALUES ('s1', 'c1', 'agent-x', 'streaming', '{"k":1}')`)
	mustExec(`INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state) VALUES ('s2', 'c2', 'agent-x', 'done')`)
	mustExec(`INSERT INTO canvas_agent_todos (session_id, text) VALUES ('s1', 'draw a box'), ('s1', 'label it')`)
	mustExec(`INSERT INTO canvas_agent_todos (session_id, text, status, position) VALUES ('s2', 'keep me', 'done', 1)`)

	var id, status string
	var created int64
	if err := db.QueryRow(`SELECT id, status, created_at FROM canvas_agent_todos WHERE text = 'draw a box'`).Scan(&id, &status, &created); err != nil {
		t.Fatal(err)
	}
	if len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) || status != "open" {
		t.Fatalf("todo defaults: id %q status %q, want a v4 uuid and open", id, status)
	}
	if d := time.Since(time.UnixMicro(created)); d < 0 || d > time.Minute {
		t.Fatalf("todo created_at default is %v ago", d)
	}
	if _, err := db.Exec(`INSERT INTO canvas_agent_todos (session_id, text, status) VALUES ('s1', 'x', 'bogus')`); err == nil {
		t.Fatal("a todo with status bogus was accepted")
	}
	if _, err := db.Exec(`INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state, data) VALUES ('s3', 'c1', 'a', 'done', 'not json')`); err == nil {
		t.Fatal("a session with invalid JSON data was accepted")
	}
	if _, err := db.Exec(`INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state) VALUES ('s4', 'nope', 'a', 'done')`); err == nil {
		t.Fatal("a session of a missing canvas was accepted")
	}

	if err := s.DeleteCanvas(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	var sessions, todos int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM canvas_agent_sessions), (SELECT count(*) FROM canvas_agent_todos)`).Scan(&sessions, &todos); err != nil {
		t.Fatal(err)
	}
	if sessions != 1 || todos != 1 {
		t.Fatalf("after deleting c1: %d sessions, %d todos; want c2's 1 and 1", sessions, todos)
	}
}

// BenchmarkEngineExecute measures commands through the engine (decide,
// append, publish) on this store: "one-canvas" has 64 concurrent clients on
// one canvas, "many-canvases" 64 clients each on its own canvas, and
// "one-canvas-50k-shapes" is "one-canvas" on a canvas already holding 50,000
// shapes: its x-one-canvas (its rate over one-canvas's, target ≥ 0.9) shows
// without HTTP's noise whether a command's cost grows with the canvas. Each
// client moves its own node (update_node) with the base_rev it last saw, and
// every command carries an idempotency key, as the Python client sends. The
// process collects garbage as canvasd does (store.TuneGC).
func BenchmarkEngineExecute(b *testing.B) {
	store.TuneGC() // as the server runs: at Go's default the 50,000 shapes' heap is marked twice as often
	var oneCanvasRate float64
	for _, mode := range []string{"one-canvas", "many-canvases", "one-canvas-50k-shapes"} {
		b.Run(mode, func(b *testing.B) {
			s := openAt(b, filepath.Join(b.TempDir(), "engine.db"))
			defer s.Close()
			ctx := context.Background()
			start := func() *store.Engine {
				e := store.NewEngine(s, store.EngineConfig{})
				if err := e.Start(ctx); err != nil {
					b.Fatal(err)
				}
				return e
			}
			e := start()
			defer func() { e.Stop() }()
			if err := s.CreateCanvas(ctx, canvas.Canvas{ID: "hot", CreatedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			actor := canvas.Actor{ID: "human-1", Type: canvas.ActorHuman}
			if mode == "one-canvas-50k-shapes" {
				const shapes, per = 50000, 1000
				envs := make([]canvas.Envelope, per)
				for i := range envs {
					envs[i] = canvas.Envelope{Type: "create_node", Args: json.RawMessage(`{"name":"n","transform":{"x":1,"y":2}}`)}
				}
				for rev := int64(0); rev < shapes; rev += per {
					if resp, err := e.ExecuteBatch(ctx, "hot", actor, rev, "", envs); err != nil || resp.Outcome != store.OutcomeApplied {
						b.Fatalf("seeding: %v, status %s: %s", err, resp.Outcome, resp.Result)
					}
				}
				// A restart: the snapshots of the seeding are stored (Stop
				// waits for them), and the canvas loads as a server finds it.
				e.Stop()
				e = start()
				runtime.GC()
			}
			var next, total atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32)
			b.ResetTimer()
			cpu0, st0 := cpuTime(), s.Stats()
			b.RunParallel(func(pb *testing.PB) {
				g := next.Add(1)
				id := "hot"
				if mode == "many-canvases" {
					id = "c" + strconv.FormatInt(g, 10)
					if err := s.CreateCanvas(ctx, canvas.Canvas{ID: id, CreatedAt: time.Now()}); err != nil {
						b.Error(err)
						return
					}
				}
				// Each client creates its own node, then moves it: the state
				// stays small and no command conflicts.
				node := "shape:n" + strconv.FormatInt(g, 10)
				base := int64(0)
				exec := func(typ, key, args string) bool {
					env := canvas.Envelope{Type: typ, BaseRev: &base, IdempotencyKey: key, Args: json.RawMessage(args)}
					resp, err := e.Execute(ctx, id, actor, env)
					if err != nil || resp.Outcome != store.OutcomeApplied {
						b.Errorf("Execute: %v, status %s: %s", err, resp.Outcome, resp.Result)
						return false
					}
					var r canvas.RevisionResult
					if err := json.Unmarshal(resp.Result, &r); err != nil {
						b.Error(err)
						return false
					}
					base = r.CurrentRev
					return true
				}
				if !exec("create_node", "", `{"id":"`+node+`","name":"New Idea","transform":{"x":0,"y":0,"w":100,"h":100}}`) {
					return
				}
				n := int64(0)
				for pb.Next() {
					n++
					key := "k" + strconv.FormatInt(g, 10) + "-" + strconv.FormatInt(n, 10)
					if !exec("update_node", key, `{"id":"`+node+`","transform":{"x":`+strconv.FormatInt(n, 10)+`}}`) {
						return
					}
				}
				total.Add(n)
			})
			rate := float64(total.Load()) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "commands/s")
			switch {
			case mode == "one-canvas":
				oneCanvasRate = rate
			case mode == "one-canvas-50k-shapes" && oneCanvasRate > 0:
				b.ReportMetric(rate/oneCanvasRate, "x-one-canvas")
			}
			reportCPU(b, cpu0, total.Load())
			if st := s.Stats(); st.Transactions > st0.Transactions {
				b.ReportMetric(float64(st.Writes-st0.Writes)/float64(st.Transactions-st0.Transactions), "appends/tx")
				b.ReportMetric(float64(st.Commits-st0.Commits)/float64(st.Transactions-st0.Transactions), "commits/tx")
			}
		})
	}
}

// TestPoisonedAppendFailsAlone plants a trigger that refuses the commit
// rows of one canvas (a failure the Append's checks cannot see, as only
// corruption or a manual edit could cause), so every Append to that canvas
// fails on insert, and checks that the Appends batched with it in the
// same transactions still succeed.
func TestPoisonedAppendFailsAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s := openAt(t, path)
	defer s.Close()
	ctx := context.Background()
	const healthy, rounds = 16, 15
	for i := range healthy {
		if err := s.CreateCanvas(ctx, canvas.Canvas{ID: fmt.Sprintf("ok%d", i), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateCanvas(ctx, canvas.Canvas{ID: "bad", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON commits WHEN NEW.canvas_id = 'bad' BEGIN SELECT RAISE(ABORT, 'poisoned'); END`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	st0 := s.Stats()
	var wg sync.WaitGroup
	errs := make(chan error, healthy+1)
	for i := range healthy {
		id := fmt.Sprintf("ok%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range int64(rounds) {
				if err := s.Append(ctx, id, r, []canvas.Commit{crashCommit(id, r+1)}, nil); err != nil {
					errs <- fmt.Errorf("healthy canvas %s: %w", id, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds * 2 {
			err := s.Append(ctx, "bad", 0, []canvas.Commit{crashCommit("bad", 1)}, nil)
			if err == nil || errors.Is(err, canvas.ErrHeadMismatch) {
				errs <- fmt.Errorf("poisoned append = %v, want an insert error", err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := s.Stats()
	if tx, w := st.Transactions-st0.Transactions, st.Writes-st0.Writes; tx >= w {
		t.Fatalf("%d writes in %d transactions: no batching, the test proved nothing", w, tx)
	}
	if c, _ := s.GetCanvas(ctx, "bad"); c.HeadRev != 0 {
		t.Fatalf("poisoned canvas head moved to %d", c.HeadRev)
	}
	for i := range healthy {
		if c, _ := s.GetCanvas(ctx, fmt.Sprintf("ok%d", i)); c.HeadRev != rounds {
			t.Fatalf("canvas ok%d head %d, want %d", i, c.HeadRev, rounds)
		}
	}
}
