package convert

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// TestDotWorkerFailures: a graph Graphviz refuses is a 422 on the chart and
// leaves the next layout whole; a layout past dotTimeout is killed and is a
// 422 saying so; no free slot within dotTimeout is a 503.
func TestDotWorkerFailures(t *testing.T) {
	const good = "digraph G { a -> b; b -> c; }"
	is422 := func(err error, says string) {
		t.Helper()
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || !errors.Is(err, canvas.ErrUnprocessable) || !strings.Contains(fe.Reason, says) {
			t.Errorf("runDot = %v, want a 422 saying %q", err, says)
		}
	}
	_, err := runDot("digraph G { a -> ; }")
	is422(err, "could not be laid out by Graphviz")
	if out, err := runDot(good); err != nil || len(out.Objects) != 3 {
		t.Fatalf("the layout after a failed one: %+v, %v", out, err)
	}

	saved := dotTimeout
	t.Cleanup(func() { dotTimeout = saved })
	dotTimeout = 50 * time.Millisecond
	g, err := parseMermaid(chart(100, MaxMermaidEdges, true))
	if err != nil {
		t.Fatal(err)
	}
	_, err = layoutMermaid(g) // about 0.6 s of a core
	is422(err, "took Graphviz more than 50ms to lay out")

	for range cap(dotSlots) {
		dotSlots <- struct{}{}
	}
	_, err = runDot(good)
	for range cap(dotSlots) {
		<-dotSlots
	}
	if !errors.Is(err, canvas.ErrUnavailable) || !strings.Contains(err.Error(), "retry later") {
		t.Errorf("runDot with every slot busy = %v, want a 503", err)
	}
}

// TestDotWorkerIdleExits: a worker kept for the next layout exits once it
// has been idle for dotIdle.
func TestDotWorkerIdleExits(t *testing.T) {
	saved := dotIdle
	t.Cleanup(func() { dotIdle = saved })
	dotIdle = 20 * time.Millisecond
	if _, err := runDot("digraph G { a -> b; }"); err != nil {
		t.Fatal(err)
	}
	dotPool.Lock()
	if len(dotPool.idle) == 0 {
		dotPool.Unlock()
		t.Fatal("no worker kept after a layout")
	}
	w := dotPool.idle[len(dotPool.idle)-1]
	dotPool.Unlock()
	select {
	case <-w.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("the idle worker is still running 10 s after its %v idle", dotIdle)
	}
	dotPool.Lock()
	defer dotPool.Unlock()
	if slices.Contains(dotPool.idle, w) {
		t.Error("the worker that exited is still kept for the next layout")
	}
}
