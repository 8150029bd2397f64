package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// TestStoreTimeoutSetting: --store-timeout (CANVASD_STORE_TIMEOUT) defaults
// to 2 s, the flag wins over the variable, and a value that is not a
// positive duration stops the start with a usage error naming the setting.
func TestStoreTimeoutSetting(t *testing.T) {
	load := func(vars map[string]string, args ...string) (Config, error) {
		c, _, err := loadConfig("canvasd serve", args, env(vars), io.Discard)
		return c, err
	}
	if c, err := load(nil); err != nil || c.StoreTimeout != 2*time.Second {
		t.Fatalf("default: %v, %v; want 2s", c.StoreTimeout, err)
	}
	if c, err := load(map[string]string{"CANVASD_STORE_TIMEOUT": "750ms"}); err != nil || c.StoreTimeout != 750*time.Millisecond {
		t.Fatalf("from the environment: %v, %v; want 750ms", c.StoreTimeout, err)
	}
	if c, err := load(map[string]string{"CANVASD_STORE_TIMEOUT": "750ms"}, "--store-timeout", "5s"); err != nil || c.StoreTimeout != 5*time.Second {
		t.Fatalf("flag over the environment: %v, %v; want 5s", c.StoreTimeout, err)
	}
	for _, bad := range []string{"0s", "-1s", "soon", "2"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"serve", "--data-dir", t.TempDir(), "--store-timeout", bad}, env(nil), io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "store-timeout") || !strings.Contains(stderr.String(), "positive duration") {
			t.Errorf("--store-timeout %s: exit %d, %q; want 2 and an error naming the flag", bad, code, stderr.String())
		}
		stderr.Reset()
		code = run(context.Background(), []string{"serve", "--data-dir", t.TempDir()}, env(map[string]string{"CANVASD_STORE_TIMEOUT": bad}), io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "CANVASD_STORE_TIMEOUT") {
			t.Errorf("CANVASD_STORE_TIMEOUT=%s: exit %d, %q; want 2 and an error naming the variable", bad, code, stderr.String())
		}
	}
}

// TestStoreTimeoutReachesPostgres: the PostgreSQL store canvasd opens has
// --store-timeout as its operation timeout, which the engine takes as its
// write timeout (store.OpTimeouter).
func TestStoreTimeoutReachesPostgres(t *testing.T) {
	u := pgSchemaURL(t)
	for _, want := range []time.Duration{1500 * time.Millisecond, 7 * time.Second} {
		c, _, err := loadConfig("canvasd serve", []string{"--database-url", u, "--store-timeout", want.String()}, env(nil), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		st, err := openStore(context.Background(), c, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Capabilities().OpTimeout; got != want {
			t.Errorf("--store-timeout %v: the store's operation timeout is %v", want, got)
		} else if err := st.Ping(context.Background()); err != nil {
			t.Errorf("ping: %v", err)
		}
		st.Close()
	}
}

// TestStoreTimeoutBoundsConnecting: opening the store against a server that
// accepts connections but never answers fails within --store-timeout (plus
// slack), not the 2 s default.
func TestStoreTimeoutBoundsConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the test ends
		}
	}()
	c, _, err := loadConfig("canvasd migrate", []string{"--database-url", "postgres://u@" + ln.Addr().String() + "/db?sslmode=disable",
		"--store-timeout", "200ms"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := openStore(context.Background(), c, slog.New(slog.DiscardHandler))
	if err == nil {
		st.Close()
		t.Fatal("opened a store on a server that never answers")
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("opening failed after %v (%v); want about the 200ms --store-timeout", d, err)
	}
}
