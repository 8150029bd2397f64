package host

import (
	"bytes"
	"context"
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

const cliUsage = `usage:
  canvasd host a2ui push --jsonl FILE --session S [--server URL] [--token T] [--timeout 30s]
  canvasd host a2ui reset --session S [--server URL] [--token T] [--timeout 30s]
FILE may be - for standard input. --server defaults to $CANVASD_URL, else http://$CANVASD_ADDR
(default 127.0.0.1:8080); --token defaults to $CANVASD_TOKEN (an editor token).`

// Command implements `canvasd host ...` as a client of a running server:
// "a2ui push" posts a JSONL file to POST /api/host/{session}/a2ui (validated
// whole by the server; on a 422 every bad line is printed) and "a2ui reset"
// calls POST /api/host/{session}/a2ui/reset. It prints the server's JSON
// answer to stdout. Its signature is cmd/canvasd's subcommand signature.
func Command(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "a2ui" || (args[1] != "push" && args[1] != "reset") {
		return UsageError{cliUsage}
	}
	verb := args[1]
	fs := flag.NewFlagSet("canvasd host a2ui "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the returned error carries the message and cliUsage
	file := fs.String("jsonl", "", "JSONL file of A2UI v0.8 messages (- for stdin)")
	session := fs.String("session", "", "host session name")
	server := fs.String("server", defaultServer(getenv), "canvasd base URL")
	token := fs.String("token", getenv("CANVASD_TOKEN"), "bearer token with the editor role")
	timeout := fs.Duration("timeout", 30*time.Second, "request timeout")
	if err := fs.Parse(args[2:]); err != nil {
		return UsageError{err.Error() + "\n" + cliUsage}
	}
	if fs.NArg() > 0 {
		return UsageError{fmt.Sprintf("unexpected arguments %q\n%s", fs.Args(), cliUsage)}
	}
	if err := ValidateSession(*session); err != nil {
		return UsageError{fmt.Sprintf("--session: %v", err)}
	}
	if *token == "" {
		return UsageError{"--token (or $CANVASD_TOKEN) is required"}
	}
	var body []byte
	path := "/api/host/" + *session + "/a2ui"
	if verb == "push" {
		var err error
		switch *file {
		case "":
			return UsageError{"--jsonl FILE is required"}
		case "-":
			body, err = io.ReadAll(os.Stdin)
		default:
			body, err = os.ReadFile(*file)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", *file, err)
		}
		if _, perr := ParseA2UI(body, 0); perr != nil {
			printLineErrors(stderr, perr)
			return fmt.Errorf("%s is not valid A2UI v0.8 JSONL; nothing was sent", *file)
		}
	} else {
		path += "/reset"
	}
	u, err := url.Parse(strings.TrimRight(*server, "/") + path)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return UsageError{fmt.Sprintf("--server %q is not an http(s) URL", *server)}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	if body != nil {
		req.Header.Set("Content-Type", "application/jsonl")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
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
	if len(out) == 0 {
		out = []byte(`{"ok":true}`)
	}
	fmt.Fprintln(stdout, strings.TrimSpace(string(out)))
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
