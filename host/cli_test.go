package host

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandPush(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	var gotAuth, gotType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		switch r.URL.Path {
		case "/api/host/main/a2ui":
			b, _ := io.ReadAll(r.Body)
			res, err := h.PushA2UI(ctx, "main", b)
			if err != nil {
				http.Error(w, err.Error(), statusFor(err))
				return
			}
			w.Write(mustJSON(res))
		case "/api/host/main/a2ui/reset":
			h.ResetA2UI(ctx, "main")
			w.WriteHeader(204)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	good := filepath.Join(dir, "ok.jsonl")
	os.WriteFile(good, []byte(seedExample), 0o644)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(seedExample+`{"surfaceUpdate":{}}`+"\n"), 0o644)
	env := func(k string) string {
		return map[string]string{"CANVASD_URL": srv.URL, "CANVASD_TOKEN": "cvd_x"}[k]
	}
	var out, errOut bytes.Buffer
	ctx := context.Background()
	if err := Command(ctx, []string{"a2ui", "push", "--jsonl", good, "--session", "main"}, env, &out, &errOut); err != nil {
		t.Fatalf("push: %v %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), `"applied":2`) || gotAuth != "Bearer cvd_x" || gotType != "application/jsonl" {
		t.Fatalf("out %q auth %q type %q", out.String(), gotAuth, gotType)
	}
	if msgs, _ := h.A2UIMessages(ctx, "main"); len(msgs) != 2 {
		t.Fatalf("server state %s", msgs)
	}
	errOut.Reset()
	err := Command(ctx, []string{"a2ui", "push", "--jsonl", bad, "--session", "main"}, env, &out, &errOut)
	if err == nil || !strings.Contains(errOut.String(), "line 3: surfaceUpdate.surfaceId: is required") {
		t.Fatalf("bad file: %v %q", err, errOut.String())
	}
	if err := Command(ctx, []string{"a2ui", "reset", "--session", "main"}, env, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := h.A2UIMessages(ctx, "main"); len(msgs) != 0 {
		t.Fatalf("after reset %s", msgs)
	}
	for _, args := range [][]string{{}, {"a2ui"}, {"a2ui", "push", "--session", "main"}, {"a2ui", "push", "--jsonl", good, "--session", "../x"}, {"a2ui", "push", "--jsonl", good, "--session", "m", "extra"}} {
		var ue UsageError
		if err := Command(ctx, args, env, &out, &errOut); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	noServer := func(k string) string {
		return map[string]string{"CANVASD_URL": "http://127.0.0.1:1", "CANVASD_TOKEN": "x"}[k]
	}
	if err := Command(ctx, []string{"a2ui", "push", "--jsonl", good, "--session", "main"}, noServer, &out, &errOut); err == nil {
		t.Fatal("push to a closed port succeeded")
	}
}
