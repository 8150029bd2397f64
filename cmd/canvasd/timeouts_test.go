package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestConnectionTimeouts: a client cannot hold a connection (and its
// goroutine) by not sending. A body that stops after one byte is cut within
// --read-timeout, with or without a token; so is a connection that sends
// nothing, and an idle keep-alive connection is closed after --idle-timeout.
// An SSE stream outlives both.
func TestConnectionTimeouts(t *testing.T) {
	var help strings.Builder
	run(context.Background(), []string{"help"}, env(nil), &help, io.Discard)
	for _, want := range []string{"-read-timeout", "CANVASD_READ_TIMEOUT", "-idle-timeout", "CANVASD_IDLE_TIMEOUT"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("canvasd help does not mention %s", want)
		}
	}
	const admin = "cvd_timeouts_admin"
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", addr, "--data-dir", t.TempDir(), "--admin-token", admin,
			"--read-timeout", "1s", "--idle-timeout", "1s", "--heartbeat", "300ms"}, env(nil), io.Discard, io.Discard)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitReady(t, "http://"+addr)
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/canvases", strings.NewReader(`{"canvas_id":"c1"}`))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create canvas: %v %v", resp, err)
	}
	resp.Body.Close()

	// held sends head, then waits for the server to answer and close; it
	// returns the status line and how long the server held the connection.
	held := func(t *testing.T, head string) (string, time.Duration) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("the server still held the connection after 15 s (%v); read %q", err, b)
		}
		status, _, _ := strings.Cut(string(b), "\r\n")
		return status, time.Since(start)
	}
	const slack = 4 * time.Second // the machine is shared; the point is "cut", not "cut at 1.000 s"
	stalled := "POST /canvas_commands/c1/command HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
	for _, c := range []struct{ name, head, status string }{
		{"stalled body without a token", stalled + "\r\n{", "HTTP/1.1 401"},
		{"stalled body with a token", stalled + "Authorization: Bearer " + admin + "\r\n\r\n{", "HTTP/1.1 408"},
		{"nothing sent", "", ""},
		{"half a header", "GET /healthz HTTP/1.1\r\nHost: te", ""},
		{"idle keep-alive", "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n", "HTTP/1.1 200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, d := held(t, c.head)
			if d > time.Second+slack || !strings.HasPrefix(status, c.status) {
				t.Fatalf("status %q after %v; want %q within 1 s (+ slack)", status, d, c.status)
			}
		})
	}

	for _, path := range []string{"/sse/canvas/c1", "/sse/host/c1"} {
		t.Run("stream "+path+" outlives the timeouts", func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
			req.Header.Set("Authorization", "Bearer "+admin)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("stream: %v %v", resp, err)
			}
			ended := make(chan error, 1)
			go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
			select {
			case err := <-ended:
				t.Fatalf("the stream ended within three read and idle timeouts: %v", err)
			case <-time.After(3 * time.Second):
			}
			resp.Body.Close()
			<-ended
		})
	}
}
