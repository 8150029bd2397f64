// Package faultproxy is a TCP proxy for tests that put a fault between
// canvasd and its PostgreSQL database: Cut closes every forwarded
// connection and refuses new ones (a crashed database or a dropped
// network); Stall keeps connections open but forwards nothing (a black
// hole); Deaf forwards what the client sends but drops the server's answers
// (a partition after the request went out: the server commits, the client
// never hears); Restore forwards again. The tests of pgstore (one store)
// and cmd/canvasd (a canvasd process cut off from the database) use it.
package faultproxy

import (
	"net"
	"sync"
	"time"
)

// Proxy forwards the TCP connections it accepts on Addr to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	// Held is signalled (buffer of one) when the proxy holds back or drops
	// data: a test waits on it to know a request is on the wire.
	Held chan struct{}

	mu      sync.Mutex
	mode    string // "open", "cut", "stall", "deaf"
	resumed chan struct{}
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards to target
// (host:port). Close stops it.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, mode: "open", resumed: make(chan struct{}), conns: map[net.Conn]struct{}{},
		Held: make(chan struct{}, 1)}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every forwarded connection and refuses new ones.
func (p *Proxy) Cut() { p.setMode("cut") }

// Stall forwards nothing in either direction, holding connections open.
func (p *Proxy) Stall() { p.setMode("stall") }

// Deaf forwards to the target but drops what it answers.
func (p *Proxy) Deaf() { p.setMode("deaf") }

// Restore forwards again (connections cut stay closed).
func (p *Proxy) Restore() { p.setMode("open") }

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.ln.Close()
	p.setMode("cut")
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		if mode == "cut" {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.forget(c)
	if !p.gate() {
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.mode == "cut" {
		p.mu.Unlock()
		up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.forget(up)
	done := make(chan struct{}, 2)
	go func() { p.pipe(up, c, false); done <- struct{}{} }()
	go func() { p.pipe(c, up, true); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// gate blocks while the proxy stalls; false means the proxy was cut.
func (p *Proxy) gate() bool {
	for {
		p.mu.Lock()
		mode, resumed := p.mode, p.resumed
		p.mu.Unlock()
		switch mode {
		case "open", "deaf":
			return true
		case "cut":
			return false
		}
		<-resumed
	}
}

// signalHeld tells a test waiting on Held that data is being held back.
func (p *Proxy) signalHeld() {
	select {
	case p.Held <- struct{}{}:
	default:
	}
}

func (p *Proxy) pipe(dst, src net.Conn, toClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode := p.mode
			p.mu.Unlock()
			if mode == "stall" {
				p.signalHeld()
			}
			if !p.gate() {
				return
			}
			if toClient && mode == "deaf" {
				p.signalHeld()
				continue // the answer is lost
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) setMode(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == "stall" {
		close(p.resumed)
		p.resumed = make(chan struct{})
	}
	p.mode = mode
	if mode == "cut" {
		for c := range p.conns {
			c.Close()
		}
	}
}
