// Command canvasd is the canvas server: `canvasd serve` (the default),
// `canvasd migrate`, `canvasd token create`, and the other subcommands
// listed by `canvasd help` (docs/operations.md describes them).
package main

import (
	"errors"

	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/canvasd/canvasd/host"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

const usage = `canvasd: a command-sourced canvas server for agents and people.

Usage:
  canvasd [serve] [flags]        run the server (default)
  canvasd migrate [flags]        apply database migrations and exit
  canvasd token create --role editor [--canvas ID]... [--actor-type agent] [--actor-id ID] [--name N] [--expires-in 24h]
  canvasd agent --server URL --token T [--database-url URL | --data-dir DIR]
                                 a standalone agent worker for servers run with --agent workers; it reads
                                 their queue from their store, so give it the same --database-url (or --data-dir)
  canvasd host a2ui push --jsonl FILE --session S   push A2UI messages to a host session (CANVASD_URL, CANVASD_TOKEN)
  canvasd host a2ui reset --session S               clear a host session's A2UI surfaces (CANVASD_URL, CANVASD_TOKEN)
  canvasd export --canvas ID [--format png|svg|jsoncanvas|excalidraw] [--out FILE] [--at-rev N] [--ids a,b] [--bounds x,y,w,h] [--scale S]
                                 the canvas drawn by the server or written as a file (CANVASD_URL, CANVASD_TOKEN)
  canvasd import --canvas ID [--format jsoncanvas|excalidraw|mermaid] [--mode merge|replace] FILE
                                 a file read into the canvas as one commit (CANVASD_URL, CANVASD_TOKEN)
  canvasd help

Flags (each also read from the environment variable shown):
`

// run is the testable entry point: it parses args and environment, runs the
// subcommand until ctx ends, and returns the process exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	sub := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		sub, args = args[0], args[1:]
	}
	var err error
	switch sub {
	case "serve":
		err = runServe(ctx, args, getenv, stdout, stderr)
	case "migrate":
		err = runMigrate(ctx, args, getenv, stdout, stderr)
	case "token":
		err = runToken(ctx, args, getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		printFlags(stdout, newFlagSet("canvasd", &Config{}, stdout))
		return 0
	default:
		if extra, ok := extraCommands()[sub]; ok {
			err = extra(ctx, args, getenv, stdout, stderr)
			break
		}
		fmt.Fprintf(stderr, "canvasd: unknown command %q; run `canvasd help`\n", sub)
		return 2
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return 0 // stopped (a signal) while still starting: not a failure
	}
	if err != nil {
		var hostUsage host.UsageError
		if _, ok := err.(usageError); ok || errors.As(err, &hostUsage) {
			fmt.Fprintf(stderr, "canvasd %s: %s\n", sub, dashDash(err.Error()))
			return 2
		}
		fmt.Fprintf(stderr, "canvasd %s: %v\n", sub, err)
		return 1
	}
	return 0
}

// usageError is a command-line mistake (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// subcommand is the signature of every subcommand.
type subcommand func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// extraCommands are the subcommands beyond serve, migrate and token.
func extraCommands() map[string]subcommand {
	return map[string]subcommand{"host": host.Command, "agent": runAgent, "export": runExport, "import": runImport}
}
