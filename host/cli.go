package host

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// UsageError is a command-line mistake (the caller exits with status 2).
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

const cliUsage = `usage: canvasd host <command> --session S [flags]
  files list                                   the session's files
  files put --path P --file F                  write a file (F may be - for standard input)
  files delete --path P                        delete a file
  show [--path P]                              show the session's pages (P: open that page)
  hide                                         hide them
  navigate --path P                            open page P ("/" for the session root)
  eval --js CODE                               evaluate JavaScript in the shown page, print its JSON value
  dom query|all|attr|click|type|wait --selector SEL [--name N] [--text T] [--clear] [--limit N] [--wait-ms MS]
                                               the DOM helpers in the shown page
  snapshot [--out FILE] [--max-w N] [--max-h N] a PNG of the shown page (to FILE, default snapshot.png)
  invoke --action A [--payload JSON]           an action the page handles itself (canvasd.onInvoke)
  link-key                                     the key that lets the session's agent links run unasked
  a2ui push --jsonl FILE                       push A2UI v0.8 messages (FILE may be -)
  a2ui reset                                   delete every A2UI surface
Every command takes --session S, --server URL (default $CANVASD_URL, else http://$CANVASD_ADDR,
default 127.0.0.1:8080), --token T (default $CANVASD_TOKEN; an editor token) and --timeout 30s.
The answer is printed as JSON on standard output.`

// cliCmd is one parsed command line.
type cliCmd struct {
	verb                       string // e.g. "files put", "dom click"
	session, server, token     string
	path, file, js, jsonl, out string
	selector, name, text       string
	action, payload            string
	clear                      bool
	limit, waitMS, maxW, maxH  int
	timeout                    time.Duration
}

// verbs of `canvasd host`, with their words.
var cliVerbs = []string{"files list", "files put", "files delete", "show", "hide", "navigate", "eval",
	"dom query", "dom all", "dom attr", "dom click", "dom type", "dom wait", "snapshot", "invoke", "link-key", "a2ui push", "a2ui reset"}

// Command implements `canvasd host ...` as a client of a running server:
// every host operation of the HTTP API (a session's files, show, hide and
// navigate, eval and the DOM helpers in the shown page, a snapshot written
// as a PNG file, a page's own action, the agent-link key, A2UI push and
// reset). It prints the server's JSON answer to stdout; a refused request
// is an error carrying the problem's detail (an A2UI push prints every bad
// line to stderr first). Its signature is cmd/canvasd's subcommand
// signature.
//
// It stays over 100 lines because it is the table of the verbs (cliVerbs),
// one short case each mapping the parsed arguments to one request; the
// table is meant to be read, and checked against cliVerbs, in one place.
func Command(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseCLI(args, getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	base := "/api/host/" + c.session
	switch c.verb {
	case "files list":
		return c.request(ctx, stdout, stderr, "GET", base+"/files", "", nil)
	case "files put":
		body, err := readInput(c.file)
		if err != nil {
			return err
		}
		return c.request(ctx, stdout, stderr, "PUT", base+"/files/"+escapePath(c.path), "application/octet-stream", body)
	case "files delete":
		return c.request(ctx, stdout, stderr, "DELETE", base+"/files/"+escapePath(c.path), "", nil)
	case "show", "hide", "navigate":
		p := Presentation{Action: c.verb, Path: c.path}
		if err := p.Validate(); err != nil {
			return UsageError{fmt.Sprintf("%v\n%s", err, cliUsage)}
		}
		return c.request(ctx, stdout, stderr, "POST", base+"/present", "application/json", mustJSON(p))
	case "link-key":
		return c.request(ctx, stdout, stderr, "GET", base+"/link-key", "", nil)
	case "a2ui push":
		body, err := readInput(c.jsonl)
		if err != nil {
			return err
		}
		if _, perr := ParseA2UI(body, 0); perr != nil {
			printLineErrors(stderr, perr)
			return fmt.Errorf("%s is not valid A2UI v0.8 JSONL; nothing was sent", c.jsonl)
		}
		return c.request(ctx, stdout, stderr, "POST", base+"/a2ui", "application/jsonl", body)
	case "a2ui reset":
		return c.request(ctx, stdout, stderr, "POST", base+"/a2ui/reset", "", nil)
	}
	// The invokes: a host action, or the page's own.
	action, payload := c.action, map[string]any{}
	switch c.verb {
	case "eval":
		action, payload["js"] = ActionEval, c.js
	case "snapshot":
		action = ActionSnapshot
		if c.maxW > 0 {
			payload["max_w"] = c.maxW
		}
		if c.maxH > 0 {
			payload["max_h"] = c.maxH
		}
	case "invoke":
	default: // dom ...
		action = "dom." + strings.TrimPrefix(c.verb, "dom ")
		payload["selector"] = c.selector
		switch action {
		case ActionAttr:
			payload["name"] = c.name
		case ActionType:
			payload["text"] = c.text
			if c.clear {
				payload["clear"] = true
			}
		case ActionAll:
			if c.limit > 0 {
				payload["limit"] = c.limit
			}
		case ActionWait:
			payload["timeout_ms"] = c.waitMS
		}
	}
	raw := mustJSON(payload)
	if c.verb == "invoke" {
		raw = nil
		if c.payload != "" {
			if !json.Valid([]byte(c.payload)) {
				return UsageError{"--payload is not JSON"}
			}
			raw = json.RawMessage(c.payload)
		}
	}
	if err := ValidateHostAction(action, raw); err != nil {
		return UsageError{fmt.Sprintf("%v\n%s", err, cliUsage)}
	}
	req := map[string]any{"host_session": c.session, "action": action, "timeout_ms": max(1000, c.timeout.Milliseconds()-500)}
	if raw != nil {
		req["payload"] = raw
	}
	var answer bytes.Buffer
	if err := c.request(ctx, &answer, stderr, "POST", "/api/invoke", "application/json", mustJSON(req)); err != nil {
		return err
	}
	var a Answer
	if err := json.Unmarshal(answer.Bytes(), &a); err != nil {
		return fmt.Errorf("unreadable answer %q", answer.String())
	}
	if !a.OK {
		return fmt.Errorf("the page answered an error: %s", a.Error)
	}
	if action == ActionSnapshot {
		return writeSnapshot(a.Result, c.out, stdout)
	}
	fmt.Fprintln(stdout, strings.TrimSpace(string(a.Result)))
	return nil
}

// parseCLI parses `canvasd host` arguments.
func parseCLI(args []string, getenv func(string) string) (cliCmd, error) {
	var c cliCmd
	n := 0
	for _, v := range cliVerbs {
		words := strings.Fields(v)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == v {
			c.verb, n = v, len(words)
			break
		}
	}
	if c.verb == "" {
		return c, UsageError{cliUsage}
	}
	fs := flag.NewFlagSet("canvasd host "+c.verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the returned error carries the message and cliUsage
	fs.StringVar(&c.session, "session", "", "host session name")
	fs.StringVar(&c.server, "server", defaultServer(getenv), "canvasd base URL")
	fs.StringVar(&c.token, "token", getenv("CANVASD_TOKEN"), "bearer token with the editor role")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "request timeout")
	fs.StringVar(&c.path, "path", "", "a path in the session")
	fs.StringVar(&c.file, "file", "", "the file to write (- for stdin)")
	fs.StringVar(&c.jsonl, "jsonl", "", "JSONL file of A2UI v0.8 messages (- for stdin)")
	fs.StringVar(&c.js, "js", "", "JavaScript to evaluate")
	fs.StringVar(&c.selector, "selector", "", "CSS selector")
	fs.StringVar(&c.name, "name", "", "attribute name")
	fs.StringVar(&c.text, "text", "", "text to type")
	fs.BoolVar(&c.clear, "clear", false, "empty the field before typing")
	fs.IntVar(&c.limit, "limit", 0, "dom all: elements described")
	fs.IntVar(&c.waitMS, "wait-ms", 5000, "dom wait: how long to wait")
	fs.StringVar(&c.out, "out", "snapshot.png", "snapshot: the PNG file to write (- for stdout)")
	fs.IntVar(&c.maxW, "max-w", 0, "snapshot: scale down to this width")
	fs.IntVar(&c.maxH, "max-h", 0, "snapshot: scale down to this height")
	fs.StringVar(&c.action, "action", "", "invoke: the page's action")
	fs.StringVar(&c.payload, "payload", "", "invoke: its payload (JSON)")
	if err := fs.Parse(args[n:]); err != nil {
		return c, UsageError{err.Error() + "\n" + cliUsage}
	}
	if fs.NArg() > 0 {
		return c, UsageError{fmt.Sprintf("unexpected arguments %q\n%s", fs.Args(), cliUsage)}
	}
	if err := ValidateSession(c.session); err != nil {
		return c, UsageError{fmt.Sprintf("--session: %v", err)}
	}
	if c.token == "" {
		return c, UsageError{"--token (or $CANVASD_TOKEN) is required"}
	}
	need := map[string][]string{"files put": {"path", "file"}, "files delete": {"path"}, "navigate": {"path"}, "eval": {"js"},
		"invoke": {"action"}, "a2ui push": {"jsonl"}}
	if strings.HasPrefix(c.verb, "dom ") {
		need[c.verb] = []string{"selector"}
	}
	for _, f := range need[c.verb] {
		if fs.Lookup(f).Value.String() == "" {
			return c, UsageError{fmt.Sprintf("%s needs --%s\n%s", c.verb, f, cliUsage)}
		}
	}
	if u, err := url.Parse(c.server); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return c, UsageError{fmt.Sprintf("--server %q is not an http(s) URL", c.server)}
	}
	return c, nil
}

// request sends one request and prints its JSON answer (or {"ok":true}
// for an empty one); a refused request is an error with the problem's
// detail, an A2UI push's bad lines printed to stderr first.
func (c cliCmd) request(ctx context.Context, stdout, stderr io.Writer, method, path, ctype string, body []byte) error {
	u := strings.TrimRight(c.server, "/") + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, redacted(u), err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode >= 300 {
		var prob struct {
			Detail string      `json:"detail"`
			Errors []LineError `json:"errors"`
		}
		_ = json.Unmarshal(out, &prob)
		if len(prob.Errors) > 0 {
			printLineErrors(stderr, &ValidationError{Lines: prob.Errors})
		}
		if prob.Detail == "" {
			prob.Detail = strings.TrimSpace(string(out))
		}
		return fmt.Errorf("server answered %d: %s", resp.StatusCode, prob.Detail)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		out = []byte(`{"ok":true}`)
	}
	fmt.Fprintln(stdout, strings.TrimSpace(string(out)))
	return nil
}

func redacted(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return u
}

// escapePath escapes each segment of a session path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func readInput(name string) ([]byte, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// writeSnapshot writes a snapshot answer's PNG to out (- : stdout) and,
// for a file, prints {out, width, height, bytes}.
func writeSnapshot(result json.RawMessage, out string, stdout io.Writer) error {
	var snap struct {
		Image struct {
			DataURL string `json:"dataUrl"`
		} `json:"image"`
		Width  int `json:"width"`
		Height int `json:"height"`
	}
	if err := json.Unmarshal(result, &snap); err != nil {
		return fmt.Errorf("unreadable snapshot: %v", err)
	}
	b64, ok := strings.CutPrefix(snap.Image.DataURL, "data:image/png;base64,")
	if !ok {
		return errors.New("the snapshot is not a PNG data URL")
	}
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("the snapshot's base64: %v", err)
	}
	if out == "-" {
		_, err := stdout.Write(png)
		return err
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(mustJSON(map[string]any{"out": out, "width": snap.Width, "height": snap.Height, "bytes": len(png)})))
	return nil
}

func printLineErrors(w io.Writer, err error) {
	var ve *ValidationError
	if errors.As(err, &ve) {
		for _, l := range ve.Lines {
			if l.Field != "" {
				fmt.Fprintf(w, "line %d: %s: %s\n", l.Line, l.Field, l.Reason)
			} else {
				fmt.Fprintf(w, "line %d: %s\n", l.Line, l.Reason)
			}
		}
	}
}

func defaultServer(getenv func(string) string) string {
	if u := getenv("CANVASD_URL"); u != "" {
		return u
	}
	if a := getenv("CANVASD_ADDR"); a != "" {
		return "http://" + a
	}
	return "http://127.0.0.1:8080"
}
