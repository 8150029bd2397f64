package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHelpAndUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"help"}, env(nil), &out, &errb); code != 0 || !strings.Contains(out.String(), "--database-url") {
		t.Fatalf("help: code %d, output %q", code, out.String())
	}
	// Each flag is listed as "--name value" (a back-quoted word in a usage
	// would replace "value" there), spelled as the documents spell it, and
	// followed by its usage with its variable and default.
	lines := strings.Split(out.String(), "\n")
	listed := map[string]string{}
	for i, line := range lines {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || f[1] != "value" || !strings.HasPrefix(f[0], "--") || strings.HasPrefix(f[0], "---") || i+1 == len(lines) {
			t.Errorf("help lists a flag as %q, want \"--name value\" and a usage line", line)
			continue
		}
		listed[f[0][2:]] = lines[i+1]
	}
	for _, s := range settings() {
		want := fmt.Sprintf("(env %s, default %q)", s.env, s.def)
		if u, ok := listed[s.flag]; !ok || !strings.HasPrefix(u, "    \t"+s.help) || !strings.HasSuffix(u, want) {
			t.Errorf("help: --%s is listed with %q, want its help and %s", s.flag, u, want)
		}
	}
	if len(listed) != len(settings()) {
		t.Errorf("help lists %d flags, want the %d settings", len(listed), len(settings()))
	}
	// A usage error lists the flags the same way, and names the flag with --.
	for _, c := range []struct {
		args       []string
		msg, usage string
	}{
		{[]string{"serve", "--bogus"}, "canvasd serve: flag provided but not defined: --bogus\n", "Usage of canvasd serve:\n  --addr value\n"},
		{[]string{"serve", "-heartbeat", "-3s"}, `canvasd serve: invalid value "-3s" for flag --heartbeat: heartbeat must be a positive duration`, "  --heartbeat value\n"},
		{[]string{"migrate", "--heartbeat"}, "canvasd migrate: flag needs an argument: --heartbeat\n", "Usage of canvasd migrate:\n"},
		{[]string{"token", "create", "--role"}, "canvasd token: flag needs an argument: --role\n",
			"  --actor-type string\n    \tagent, human or service (default \"human\")\n  --addr value\n"},
		{[]string{"host", "a2ui", "push", "--bogus"}, "canvasd host: flag provided but not defined: --bogus\nusage: canvasd host <command>", ""},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), c.args, env(nil), io.Discard, &stderr)
		e := stderr.String()
		if code != 2 || !strings.Contains(e, c.msg) || !strings.Contains(e, c.usage) {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q and %q", c.args, code, e, c.msg, c.usage)
		}
		if strings.Count(e, "flag provided") > 1 || strings.Count(e, "flag needs") > 1 || strings.Count(e, "invalid value") > 1 {
			t.Errorf("%v: the error is printed twice: %q", c.args, e)
		}
		for _, line := range strings.Split(e, "\n") {
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
				t.Errorf("%v: a flag is listed with one dash: %q", c.args, line)
			}
		}
	}
	if code := run(context.Background(), []string{"bogus"}, env(nil), &out, &errb); code != 2 {
		t.Fatalf("unknown command: code %d", code)
	}
	if code := run(context.Background(), []string{"serve", "--database-url", "mysql://x"}, env(nil), &out, &errb); code != 2 {
		t.Fatalf("bad database url: code %d", code)
	}
	if code := run(context.Background(), nil, env(map[string]string{"CANVASD_MAX_COMMAND_BYTES": "-1"}), &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "CANVASD_MAX_COMMAND_BYTES") {
		t.Fatalf("bad env: code %d, %q", code, errb.String())
	}
}

func TestTokenCreateAndGeneratedAdmin(t *testing.T) {
	dir := t.TempDir()
	e := env(map[string]string{"CANVASD_DATA_DIR": dir})
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"token", "create", "--role", "editor", "--actor-type", "agent", "--canvas", "c1"}, e, &out, &errb); code != 0 {
		t.Fatalf("token create: %d %s", code, errb.String())
	}
	var tok map[string]any
	if err := json.Unmarshal(out.Bytes(), &tok); err != nil || !strings.HasPrefix(tok["actor_id"].(string), "agent-") || tok["role"] != "editor" {
		t.Fatalf("token output %s (%v)", out.String(), err)
	}
	// What the flags ask for that cannot be a token is a usage error (exit 2), like a bad flag.
	for _, args := range [][]string{{"--role", "boss"}, {}, {"--role", "editor", "--actor-type", "agent", "--actor-id", "bot-1"}} {
		errb.Reset()
		if code := run(context.Background(), append([]string{"token", "create"}, args...), e, &out, &errb); code != 2 || errb.Len() == 0 {
			t.Fatalf("token create %q: code %d, stderr %q", args, code, errb.String())
		}
	}

	// The first serve prints a generated admin token; the second does not.
	for i, want := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		listening := &logSignal{want: "canvasd listening", seen: make(chan struct{})}
		done := make(chan int)
		go func() { done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, e, &out, listening) }()
		select {
		case <-listening.seen:
		case code := <-done:
			t.Fatalf("serve %d exited %d before listening: %s", i, code, listening.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("serve %d not listening within 30 s", i)
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("serve %d exited %d: %s", i, code, listening.String())
		}
		if got := strings.Contains(out.String(), "Generated admin token"); got != want {
			t.Fatalf("start %d: printed admin token %v, want %v: %q", i, got, want, out.String())
		}
	}
}

// TestCrashKeepsAcknowledgedCommits kills canvasd with SIGKILL while commands
// are in flight, restarts it on the same data dir, and checks that every
// acknowledged revision is there and the log replays to the served state.
func TestCrashKeepsAcknowledgedCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "canvasd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	const admin = "cvd_crash_admin"
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", dir, "--admin-token", admin, "--snapshot-every", "37")
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitReady(t, "http://"+addr)
		return cmd
	}
	call := func(method, path string, body any) (int, map[string]any, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m, nil
	}
	proc := start()
	if code, m, err := call("POST", "/api/canvases", map[string]any{"canvas_id": "crash"}); err != nil || code != 201 {
		t.Fatalf("create canvas: %d %v %v", code, m, err)
	}

	var acked sync.Map // rev → node id
	var n atomic.Int64
	enough := make(chan struct{}) // closed at the 300th acknowledged command
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				code, m, err := call("POST", "/canvas_commands/crash/command", map[string]any{"type": "create_node", "base_rev": 0,
					"args": map[string]any{"id": id, "name": id}})
				if err != nil {
					return // the server died
				}
				if code == 200 {
					acked.Store(int64(m["current_rev"].(float64)), id)
					if n.Add(1) == 300 {
						close(enough)
					}
				}
			}
		}(w)
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d commands acknowledged in 60 s, want 300 before the kill", n.Load())
	}
	_ = proc.Process.Signal(syscall.SIGKILL)
	_, _ = proc.Process.Wait()
	close(stop)
	wg.Wait()

	proc = start()
	defer func() { _ = proc.Process.Kill(); _, _ = proc.Process.Wait() }()
	code, snap, err := call("GET", "/canvas_commands/snapshot/crash", nil)
	if err != nil || code != 200 {
		t.Fatalf("snapshot after restart: %d %v", code, err)
	}
	nodes := map[string]float64{}
	for _, v := range snap["state"].(map[string]any)["nodes"].([]any) {
		nd := v.(map[string]any)
		nodes[nd["id"].(string)] = nd["created_rev"].(float64)
	}
	missing := 0
	acked.Range(func(k, v any) bool {
		if rev, ok := nodes[v.(string)]; !ok || int64(rev) != k.(int64) {
			missing++
		}
		return true
	})
	if missing > 0 {
		t.Fatalf("%d acknowledged commits lost after kill -9 (of %d)", missing, n.Load())
	}
	head := int64(snap["head_rev"].(float64))
	if int64(len(nodes)) != head {
		t.Fatalf("head_rev %d but %d nodes: the log has gaps or extra commits", head, len(nodes))
	}
	// The log replays to the same state (time travel at head-1 then +1 would
	// use the stored snapshots; compare a full replay from the events).
	var log []canvas.Commit
	for after := int64(0); ; {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/canvas_commands/crash/events?after_rev=%d&limit=1000", addr, after), nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct{ Commits []canvas.Commit }
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Commits) == 0 {
			break
		}
		for _, c := range page.Commits {
			if c.Rev != after+1 {
				t.Fatalf("log gap: rev %d after %d", c.Rev, after)
			}
			after = c.Rev
		}
		log = append(log, page.Commits...)
	}
	if int64(len(log)) != head {
		t.Fatalf("log holds %d commits, head is %d", len(log), head)
	}
	// Replaying the log from scratch gives the state the restarted server
	// loaded from its stored snapshot and the tail.
	replayed, err := reducer.Replay(log)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(replayed.Scene())
	got, _ := json.Marshal(snap["state"])
	var a, b any
	_ = json.Unmarshal(want, &a)
	_ = json.Unmarshal(got, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("replayed log differs from the served state")
	}
	t.Logf("%d acknowledged before kill -9, %d in the log after restart", n.Load(), head)
}

// logSignal is a log writer that keeps the log and closes seen when a line
// contains want.
type logSignal struct {
	lockedBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (l *logSignal) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(l.want)) {
		l.once.Do(func() { close(l.seen) })
	}
	return l.lockedBuffer.Write(p)
}

// freeAddr returns a 127.0.0.1 address for a canvasd process to listen on,
// also across its restarts. The port was free a moment ago and lies below
// the kernel's ephemeral range, so no outgoing connection (of this test, of
// a database pool, of a test package running alongside) can take it in the
// meantime, as one from net.Listen(":0") could; no port is handed out twice
// in a test binary.
func freeAddr(t *testing.T) string {
	t.Helper()
	low := 32768 // Linux's default first ephemeral port
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	addrsMu.Lock()
	defer addrsMu.Unlock()
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		if addrsGiven[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken
		}
		ln.Close()
		addrsGiven[port] = true
		return addr
	}
	t.Fatalf("no free port found below %d", low)
	return ""
}

var (
	addrsMu    sync.Mutex
	addrsGiven = map[int]bool{}
)

func waitReady(t *testing.T, base string) {
	for pl := newPoller(30*time.Second, 50*time.Millisecond); !pl.expired(); pl.wait() {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	t.Fatalf("%s not ready in 30s", base)
}
