package convert

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-graphviz"

	"github.com/canvasd/canvasd/canvas"
)

// Graphviz lays out charts in worker processes of the executable that
// imports this package (the server, or a test binary), started with
// dotWorkerEnv set: their init (below) serves layouts on stdin and stdout
// instead of running the program. go-graphviz runs Graphviz as one
// WebAssembly module instance per process, which two layouts at once
// corrupt, which a failed layout can leave broken for every later one
// (each then failed with the previous graph's error), and which cannot be
// stopped once it runs. So a worker lays out one chart at a time, at most
// one worker a core runs, and a worker whose layout failed or ran past
// dotTimeout is killed; the next layout starts a fresh one (about 30 ms once
// wazero's compilation cache in the temporary directory holds Graphviz's
// compiled module). An idle worker exits after dotIdle.
//
// The protocol: a request is a 4-byte big-endian length and the DOT
// graph; the answer a status byte (0: dot's JSON follows, 1: an error
// message), a 4-byte length and that many bytes. A worker exits after an
// error, or when its stdin closes.
const dotWorkerEnv = "CANVASD_GRAPHVIZ_WORKER"

// dotTimeout bounds a layout, and the wait for a free worker before it;
// an idle worker exits after dotIdle.
var dotTimeout, dotIdle = 10 * time.Second, time.Minute

// maxDotOutput bounds a layout's answer (dot's JSON of the largest chart
// within the limits is a few MB).
const maxDotOutput = 64 << 20

// dotSlots bounds the layouts running at once, one per core.
var dotSlots = make(chan struct{}, max(1, runtime.NumCPU()))

func init() {
	if os.Getenv(dotWorkerEnv) != "1" {
		return
	}
	answers := os.Stdout
	os.Stdout = os.Stderr // nothing else may write into the answers
	if err := serveDot(os.Stdin, answers); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// serveDot is the worker's loop: it lays out each DOT graph read from in
// and answers on out, until in ends (nil) or a layout fails (its error,
// after answering it).
func serveDot(in io.Reader, out io.Writer) error {
	r, w := bufio.NewReader(in), bufio.NewWriter(out)
	for {
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		src := make([]byte, n)
		if _, err := io.ReadFull(r, src); err != nil {
			return err
		}
		js, err := layoutDot(src)
		status := byte(0)
		if err != nil {
			status, js = 1, []byte(err.Error())
		}
		_ = w.WriteByte(status)
		_ = binary.Write(w, binary.BigEndian, uint32(len(js)))
		_, _ = w.Write(js)
		if ferr := w.Flush(); ferr != nil {
			return ferr
		}
		if err != nil {
			return err
		}
	}
}

// layoutDot runs dot on src in this process and returns its JSON.
func layoutDot(src []byte) ([]byte, error) {
	ctx := context.Background()
	gv, err := graphviz.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting Graphviz: %w", err)
	}
	defer gv.Close()
	graph, err := graphviz.ParseBytes(src)
	if err != nil {
		return nil, fmt.Errorf("Graphviz read the layout graph: %w", err)
	}
	defer graph.Close()
	var b bytes.Buffer
	if err := gv.Render(ctx, graph, graphviz.Format("json"), &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// dotWorker is a running worker process.
type dotWorker struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Reader
	idle     *time.Timer // while in the pool: stops the worker at dotIdle
	stopOnce sync.Once
	exited   chan struct{} // closed once stop has seen the process exit
}

// dotPool holds the idle workers.
var dotPool struct {
	sync.Mutex
	idle []*dotWorker
}

// runDot lays out a DOT graph in a worker and returns dot's JSON. A layout
// that fails or runs past dotTimeout is a 422 on the chart; no free worker
// within dotTimeout is a 503.
func runDot(src string) (*dotOut, error) {
	wait := time.NewTimer(dotTimeout)
	defer wait.Stop()
	select {
	case dotSlots <- struct{}{}:
	case <-wait.C:
		return nil, fmt.Errorf("convert: every Graphviz worker stayed busy for %v; retry later: %w", dotTimeout, canvas.ErrUnavailable)
	}
	defer func() { <-dotSlots }()
	w, err := takeWorker()
	if err != nil {
		return nil, err
	}
	js, err := w.layout(src)
	if err != nil {
		w.stop()
		return nil, err
	}
	putWorker(w)
	var out dotOut
	if err := json.Unmarshal(js, &out); err != nil {
		return nil, fmt.Errorf("convert: reading Graphviz's layout: %w", err)
	}
	return &out, nil
}

// takeWorker returns an idle worker, or starts one.
func takeWorker() (*dotWorker, error) {
	dotPool.Lock()
	if n := len(dotPool.idle); n > 0 {
		w := dotPool.idle[n-1]
		dotPool.idle = dotPool.idle[:n-1]
		dotPool.Unlock()
		w.idle.Stop() // (if it fired, it finds w gone from the pool and leaves it)
		return w, nil
	}
	dotPool.Unlock()
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("convert: finding this executable to run Graphviz in: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), dotWorkerEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("convert: starting a Graphviz worker: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("convert: starting a Graphviz worker: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("convert: starting a Graphviz worker: %w", err)
	}
	return &dotWorker{cmd: cmd, in: in, out: bufio.NewReader(out), exited: make(chan struct{})}, nil
}

// putWorker keeps w for the next layout, for dotIdle.
func putWorker(w *dotWorker) {
	dotPool.Lock()
	defer dotPool.Unlock()
	if len(dotPool.idle) >= cap(dotSlots) {
		w.stop()
		return
	}
	w.idle = time.AfterFunc(dotIdle, func() {
		dotPool.Lock()
		i := slices.Index(dotPool.idle, w)
		if i >= 0 {
			dotPool.idle = slices.Delete(dotPool.idle, i, i+1)
		}
		dotPool.Unlock()
		if i >= 0 {
			w.stop()
		}
	})
	dotPool.idle = append(dotPool.idle, w)
}

// stop ends the worker and waits for its exit, once; nothing may be
// reading its answer then.
func (w *dotWorker) stop() {
	w.stopOnce.Do(func() {
		_ = w.in.Close()
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
		close(w.exited)
	})
}

// layout sends src to the worker and reads its answer, by dotTimeout (past
// it the worker is killed). After an error the caller must stop w.
func (w *dotWorker) layout(src string) ([]byte, error) {
	type answer struct {
		js  []byte
		err error
	}
	done := make(chan answer, 1)
	go func() {
		js, err := w.exchange(src)
		done <- answer{js, err}
	}()
	t := time.NewTimer(dotTimeout)
	defer t.Stop()
	select {
	case a := <-done:
		return a.js, a.err
	case <-t.C:
		_ = w.cmd.Process.Kill() // which ends the exchange (the caller then stops w)
		<-done
		return nil, fileError("", "took Graphviz more than %v to lay out; split it into smaller charts", dotTimeout)
	}
}

// exchange writes one request and reads its answer.
func (w *dotWorker) exchange(src string) ([]byte, error) {
	req := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(src)), uint32(len(src)))
	if _, err := w.in.Write(append(req, src...)); err != nil {
		return nil, fmt.Errorf("convert: sending a chart to the Graphviz worker: %w", err)
	}
	var head [5]byte
	if _, err := io.ReadFull(w.out, head[:]); err != nil {
		return nil, fmt.Errorf("convert: the Graphviz worker ended without an answer: %w", err)
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxDotOutput {
		return nil, fileError("", "has a layout larger than %d MB", maxDotOutput>>20)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(w.out, body); err != nil {
		return nil, fmt.Errorf("convert: reading the Graphviz worker's answer: %w", err)
	}
	if head[0] != 0 {
		why, _, _ := strings.Cut(string(body), "\n")
		return nil, fileError("", "could not be laid out by Graphviz: %s", why)
	}
	return body, nil
}
