package api

import (
	"net"
	"net/http"
	"syscall"
	"time"
)

// sseOut writes one SSE response. Where the connection can be hijacked
// (HTTP/1.x) it takes the connection over and writes to it directly, so an
// idle stream holds no net/http buffers and no background reader: that is
// most of what an idle subscriber costs. The body then ends when the
// connection closes (Connection: close), which every SSE client expects. A
// one-byte read notices at once when the client goes away (gone).
// Elsewhere (HTTP/2, recorders) it streams through the ResponseWriter, and
// the request context says when the client is gone.
type sseOut struct {
	conn    net.Conn      // hijacked connection, or nil
	pending net.Buffers   // frames for conn, written with one writev; frames are shared and never modified
	gone    chan struct{} // closed when the hijacked connection's client hangs up
	// writeTimeout bounds one flush (Config.SSEWriteTimeout).
	writeTimeout time.Duration

	w  http.ResponseWriter
	rc *http.ResponseController
}

// sseHeaders are the stream's response headers.
const sseHeaders = "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"

// sseWriteTimeout bounds one flush to a subscriber that stopped reading
// (the default of Config.SSEWriteTimeout).
const sseWriteTimeout = 10 * time.Second

// openSSE starts the stream's response on w; writeTimeout bounds each flush.
func openSSE(w http.ResponseWriter, writeTimeout time.Duration) *sseOut {
	rc := http.NewResponseController(w)
	conn, rw, err := rc.Hijack()
	if err != nil {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		return &sseOut{w: w, rc: rc}
	}
	_ = rw // a GET stream has no body to read; the server's buffers are dropped
	_ = conn.SetDeadline(time.Time{})
	o := &sseOut{conn: conn, gone: make(chan struct{}), writeTimeout: writeTimeout}
	go func() {
		// An SSE client never sends more on this connection: any read
		// result means it hung up (or closed is closing the connection).
		var b [1]byte
		_, _ = conn.Read(b[:])
		close(o.gone)
	}()
	o.pending = append(o.pending, []byte("HTTP/1.1 200 OK\r\n"+sseHeaders+"Connection: close\r\n\r\n"))
	return o
}

// write queues b, which must not be modified afterwards; flush sends it.
// For a hijacked connection write never fails: errors surface at flush.
func (o *sseOut) write(b []byte) bool {
	if o.conn != nil {
		o.pending = append(o.pending, b)
		return true
	}
	_, err := o.w.Write(b)
	return err == nil
}

// flush sends what was written and reports whether the client is still there.
func (o *sseOut) flush() bool {
	if o.conn == nil {
		return o.rc.Flush() == nil
	}
	if len(o.pending) == 0 {
		return true
	}
	// The deadline bounds this write only: the fan-out's direct writes
	// (hub/fanout.go) would fail once a deadline left behind had passed.
	_ = o.conn.SetWriteDeadline(time.Now().Add(o.writeTimeout))
	bufs := o.pending // WriteTo consumes its receiver
	_, err := bufs.WriteTo(o.conn)
	_ = o.conn.SetWriteDeadline(time.Time{})
	if cap(o.pending) > 16 {
		o.pending = nil // after a replay burst, idle streams keep no big slice
	} else {
		clear(o.pending)
		o.pending = o.pending[:0]
	}
	return err == nil
}

// rawConn returns the hijacked connection for non-blocking writes
// (hub/fanout.go), or nil where there is none or it is not a plain socket (TLS).
func (o *sseOut) rawConn() syscall.RawConn {
	sc, ok := o.conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// done is closed when the client is gone (for a hijacked connection; nil otherwise,
// where the request context does the same).
func (o *sseOut) done() <-chan struct{} { return o.gone }

func (o *sseOut) close() {
	if o.conn != nil {
		o.flush()
		_ = o.conn.Close()
	}
}
