package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLimitSettings: --max-streams-per-token and --max-auth-failures default
// to 64 and 20, take 0 (no limit) from a flag or their variable, and refuse
// a negative number or a word.
func TestLimitSettings(t *testing.T) {
	c, _, err := loadConfig("serve", nil, env(nil), io.Discard)
	if err != nil || c.MaxStreams != 64 || c.MaxAuthFailures != 20 {
		t.Fatalf("defaults: %d streams, %d failures, %v; want 64, 20", c.MaxStreams, c.MaxAuthFailures, err)
	}
	c, _, err = loadConfig("serve", []string{"--max-streams-per-token", "0"},
		env(map[string]string{"CANVASD_MAX_STREAMS_PER_TOKEN": "3", "CANVASD_MAX_AUTH_FAILURES": "0"}), io.Discard)
	if err != nil || c.MaxStreams != 0 || c.MaxAuthFailures != 0 {
		t.Fatalf("flag 0 over variable 3, variable 0: %d streams, %d failures, %v; want 0, 0", c.MaxStreams, c.MaxAuthFailures, err)
	}
	for _, bad := range [][]string{{"--max-streams-per-token", "-1"}, {"--max-auth-failures", "many"}} {
		if _, _, err := loadConfig("serve", bad, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "0 (no limit) or a positive integer") {
			t.Errorf("%v: %v, want a usage error saying what is allowed", bad, err)
		}
	}
}

// TestServeCapsStreams: canvasd serve passes --max-streams-per-token to the
// API: a token's stream beyond it is a 429.
func TestServeCapsStreams(t *testing.T) {
	const admin = "cvd_limits_admin"
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", addr, "--data-dir", t.TempDir(), "--admin-token", admin, "--agent", "off",
			"--max-streams-per-token", "1"}, env(nil), io.Discard, io.Discard)
	}()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + addr
	waitReady(t, base)
	req, _ := http.NewRequest("POST", base+"/api/canvases", strings.NewReader(`{"canvas_id":"c1"}`))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create canvas: %v %v", resp, err)
	}
	resp.Body.Close()
	open := func() *http.Response {
		t.Helper()
		resp, err := http.Get(base + "/sse/canvas/c1?access_token=" + admin)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if first := open(); first.StatusCode != 200 {
		t.Fatalf("first stream: %d", first.StatusCode)
	}
	second := open()
	body, _ := io.ReadAll(second.Body)
	if second.StatusCode != 429 || !strings.Contains(string(body), "too-many-streams") {
		t.Fatalf("second stream: %d %s, want 429 too-many-streams", second.StatusCode, body)
	}
}
