// Command ssefloor is the fan-out floor of canvasd's `make bench`
// (BenchmarkSSEDelivery builds and starts it beside canvasd): a bare Go SSE
// broadcaster that does the least such a server can do. Each GET /sse is a
// net/http handler that sends caught_up and then writes and flushes every
// event it is handed; POST /publish?rev=N hands every subscriber a
// canvas_commit event with id "N-000000" padded to -size bytes (the size
// of canvasd's event in the same benchmark), dropping it for a subscriber
// whose queue is full.
package main

import (
	"bytes"
	"flag"
	"log"
	"net/http"
	"strconv"
	"sync"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	size := flag.Int("size", 512, "bytes of each event frame")
	flag.Parse()
	b := &broadcaster{subs: map[chan []byte]struct{}{}, size: *size}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", b.stream)
	mux.HandleFunc("POST /publish", b.publish)
	mux.HandleFunc("GET /readyz", func(http.ResponseWriter, *http.Request) {})
	log.Fatal(http.ListenAndServe(*addr, mux))
}

type broadcaster struct {
	mu   sync.RWMutex
	subs map[chan []byte]struct{}
	size int
}

func (b *broadcaster) stream(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	ch := make(chan []byte, 256)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	if _, err := w.Write([]byte("event: caught_up\ndata: {}\n\n")); err != nil || rc.Flush() != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case f := <-ch:
			if _, err := w.Write(f); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

func (b *broadcaster) publish(w http.ResponseWriter, r *http.Request) {
	f := b.frame(r.URL.Query().Get("rev"))
	b.mu.RLock()
	for ch := range b.subs {
		select {
		case ch <- f:
		default:
		}
	}
	b.mu.RUnlock()
}

// frame renders one canvas_commit event of b.size bytes.
func (b *broadcaster) frame(rev string) []byte {
	if _, err := strconv.ParseInt(rev, 10, 64); err != nil {
		rev = "0"
	}
	f := []byte("id: " + rev + "-000000\nevent: canvas_commit\ndata: {\"pad\":\"")
	const tail = "\"}\n\n"
	if n := b.size - len(f) - len(tail); n > 0 {
		f = append(f, bytes.Repeat([]byte("x"), n)...)
	}
	return append(f, tail...)
}
