package api

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// The floors of `make bench`: servers doing the least a server of canvasd's
// kind can do, measured in the same run as canvasd so that each figure is
// also printed as a ratio that the machine's noise moves much less than the
// figure itself (the targets in docs/architecture.md are such ratios).
//
// writeFloor is the write floor: net/http, the command envelope decoded
// with encoding/json, and one INSERT of the command into a modernc SQLite
// database (WAL, synchronous=NORMAL as canvasd's default) per command,
// group-committed by one goroutine (everything queued goes into one
// transaction), answering each request once its transaction committed.

type writeFloor struct {
	db   *sql.DB
	ins  *sql.Stmt
	jobs chan *floorJob
	srv  *httptest.Server
	rev  int64 // the committer's
	txs  atomic.Int64
}

type floorJob struct {
	typ  string
	args []byte
	rev  int64
	err  error
	done chan struct{}
}

// newWriteFloor starts the write floor on a real listener; it stops at cleanup.
func newWriteFloor(b *testing.B) *writeFloor {
	path := filepath.Join(b.TempDir(), "floor.db")
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE log (rev INTEGER PRIMARY KEY, type TEXT NOT NULL, args TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	ins, err := db.Prepare(`INSERT INTO log (rev, type, args) VALUES (?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	f := &writeFloor{db: db, ins: ins, jobs: make(chan *floorJob, 256)}
	go f.commitLoop()
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	b.Cleanup(func() {
		f.srv.Close()
		close(f.jobs)
		ins.Close()
		db.Close()
	})
	return f
}

var floorJobs = sync.Pool{New: func() any { return &floorJob{done: make(chan struct{}, 1)} }}

func (f *writeFloor) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var env struct {
		Type    string          `json:"type"`
		BaseRev *int64          `json:"base_rev"`
		Args    json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Type == "" || env.BaseRev == nil {
		http.Error(w, "bad envelope", http.StatusBadRequest)
		return
	}
	j := floorJobs.Get().(*floorJob)
	j.typ, j.args = env.Type, env.Args
	f.jobs <- j
	<-j.done
	rev, err := j.rev, j.err
	floorJobs.Put(j)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(strconv.AppendInt([]byte(`{"status":"applied","current_rev":`), rev, 10))
	_, _ = w.Write([]byte("}"))
}

func (f *writeFloor) commitLoop() {
	batch := make([]*floorJob, 0, 256)
	for j := range f.jobs {
		batch = append(batch[:0], j)
	fill:
		for len(batch) < cap(batch) {
			select {
			case j, ok := <-f.jobs:
				if !ok {
					break fill
				}
				batch = append(batch, j)
			default:
				break fill
			}
		}
		err := f.commit(batch)
		for _, j := range batch {
			j.err = err
			j.done <- struct{}{}
		}
	}
}

func (f *writeFloor) commit(batch []*floorJob) error {
	tx, err := f.db.Begin()
	if err != nil {
		return err
	}
	st := tx.Stmt(f.ins)
	rev := f.rev
	for _, j := range batch {
		rev++
		if _, err := st.Exec(rev, j.typ, j.args); err != nil {
			_ = tx.Rollback()
			return err
		}
		j.rev = rev
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	f.txs.Add(1)
	f.rev = rev
	return nil
}

// writeRun is one timed burst of commands.
type writeRun struct {
	rate float64 // commands per second
	p50  time.Duration
	p99  time.Duration
	cpu  float64 // CPU time of the whole process (server and clients) per command, µs
}

// processCPU returns the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sendCommands posts total copies of body to url from clients concurrent
// keep-alive clients (token "" sends none) and times them; every answer must be 200.
func sendCommands(b *testing.B, c *http.Client, url, token string, body []byte, clients, total int) writeRun {
	b.Helper()
	per := total / clients
	lats := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var failed sync.Once
	cpu0, t0 := processCPU(), time.Now()
	for w := range clients {
		wg.Go(func() {
			local := make([]time.Duration, 0, per)
			for range per {
				s := time.Now()
				code, msg, err := postAs(c, url, token, body)
				if err != nil || code != http.StatusOK {
					failed.Do(func() { b.Errorf("POST %s: %d %v %s", url, code, err, msg) })
					return
				}
				local = append(local, time.Since(s))
			}
			lats[w] = local
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(t0), processCPU()-cpu0
	all := slices.Concat(lats...)
	if len(all) == 0 {
		b.FailNow()
	}
	return writeRun{rate: float64(len(all)) / elapsed.Seconds(), p50: percentile(all, 0.50), p99: percentile(all, 0.99),
		cpu: float64(cpu.Microseconds()) / float64(len(all))}
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// reportSpread reports the median of xs as unit, and its range as unit-min
// and unit-max when there is more than one run.
func reportSpread(b *testing.B, xs []float64, unit string) {
	b.ReportMetric(median(slices.Clone(xs)), unit)
	if len(xs) > 1 {
		b.ReportMetric(slices.Min(xs), unit+"-min")
		b.ReportMetric(slices.Max(xs), unit+"-max")
	}
}

// writeCommand is the command every write benchmark sends: a new node.
var writeCommand = []byte(`{"type":"create_node","base_rev":0,"args":{"name":"n","transform":{"x":1,"y":2}}}`)

// BenchmarkWrites measures the write targets (docs/architecture.md) against the write floor
// in the same run: five rounds of 10,000 commands from 8 keep-alive clients on
// one canvas, sent to the floor, to canvasd on an empty canvas, and to
// canvasd on a canvas already holding 50,000 shapes (and more each round),
// interleaved (in an order reversed every other round) so that the machine's
// noise falls on all three alike. The process collects garbage as canvasd
// does (store.TuneGC).
// canvasd's clients use an editor token (the hot path authenticates through
// the store as a real client would). It reports each figure's median over
// the rounds with its range, and the median of the per-round ratios:
// x-floor (empty canvas / floor, target ≥ 0.85) and big/empty (target ≥ 0.9).
// cpu-µs/cmd is the CPU time the whole process (server and load generator)
// spent per command, which the machine's load moves less than rates do.
func BenchmarkWrites(b *testing.B) {
	const rounds, total, clients, bigShapes = 5, 10000, 8, 50000
	store.TuneGC() // as the server runs
	floor := newWriteFloor(b)
	e := newTestEnv(b)
	editor, _ := e.token("editor", "human")
	c := benchClient()
	for i := 0; i < bigShapes; i += maxBatch {
		if i == 0 {
			e.canvas("big")
		}
		cmds := make([]any, maxBatch)
		for k := range cmds {
			cmds[k] = map[string]any{"type": "create_node", "args": map[string]any{"name": "n", "transform": map[string]any{"x": k, "y": i}}}
		}
		e.must(200, "POST", "/canvas_commands/big/commands", testAdmin, map[string]any{"base_rev": i, "commands": cmds})
	}
	var floorRate, emptyRate, bigRate, emptyP99, bigP99, floorP99, xFloor, bigEmpty, floorCPU, emptyCPU, bigCPU []float64
	sq := e.st.(*sqlitestore.Store)
	floorTx0, st0 := floor.txs.Load(), sq.Stats()
	for round := range rounds {
		id := fmt.Sprintf("empty%d", round)
		e.canvas(id)
		var f, em, bg writeRun
		runs := []func(){
			func() { f = sendCommands(b, c, floor.srv.URL, "", writeCommand, clients, total) },
			func() {
				em = sendCommands(b, c, e.srv.URL+"/canvas_commands/"+id+"/command", editor, writeCommand, clients, total)
			},
			func() {
				bg = sendCommands(b, c, e.srv.URL+"/canvas_commands/big/command", editor, writeCommand, clients, total)
			},
		}
		if round%2 == 1 { // the order alternates, so that neither drift nor what ran before favours one
			slices.Reverse(runs)
		}
		for _, run := range runs {
			runtime.GC()
			run()
		}
		floorRate, emptyRate, bigRate = append(floorRate, f.rate), append(emptyRate, em.rate), append(bigRate, bg.rate)
		floorP99 = append(floorP99, ms(f.p99))
		emptyP99, bigP99 = append(emptyP99, ms(em.p99)), append(bigP99, ms(bg.p99))
		xFloor, bigEmpty = append(xFloor, em.rate/f.rate), append(bigEmpty, bg.rate/em.rate)
		floorCPU, emptyCPU, bigCPU = append(floorCPU, f.cpu), append(emptyCPU, em.cpu), append(bigCPU, bg.cpu)
	}
	reportSpread(b, floorRate, "floor-cmds/s")
	reportSpread(b, emptyRate, "cmds/s")
	reportSpread(b, bigRate, "big-cmds/s")
	reportSpread(b, floorP99, "floor-p99-ms")
	reportSpread(b, emptyP99, "p99-ms")
	reportSpread(b, bigP99, "big-p99-ms")
	st := sq.Stats()
	b.ReportMetric(float64(rounds*total)/float64(floor.txs.Load()-floorTx0), "floor-cmds/tx")
	b.ReportMetric(float64(st.Commits-st0.Commits)/float64(st.Transactions-st0.Transactions), "commits/tx")
	reportSpread(b, floorCPU, "floor-cpu-µs/cmd")
	reportSpread(b, emptyCPU, "cpu-µs/cmd")
	reportSpread(b, bigCPU, "big-cpu-µs/cmd")
	reportSpread(b, xFloor, "x-floor")
	reportSpread(b, bigEmpty, "big/empty")
	b.ReportMetric(loadAvg(), "loadavg")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// postAs sends one command with token ("" sends none) and returns the status and body.
func postAs(c *http.Client, url, token string, body []byte) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
