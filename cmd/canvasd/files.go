package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/canvasd/canvasd/client"
)

const exportUsage = `usage: canvasd export --canvas ID [--format png|svg|jsoncanvas|excalidraw] [--out FILE]
                      [--at-rev N] [--ids a,b] [--bounds x,y,w,h] [--scale S] [--transparent]
  writes the canvas drawn by the server (png, svg) or as a file (jsoncanvas, excalidraw);
  --out - (or no --out) writes to stdout. Server and token: --server, --token (CANVASD_URL, CANVASD_TOKEN).`

const importUsage = `usage: canvasd import --canvas ID [--format jsoncanvas|excalidraw|mermaid] [--mode merge|replace]
                      [--base-rev N] [--idempotency-key K] FILE
  reads FILE (- for stdin) into the canvas as one commit and prints the answer (current_rev,
  created_ids). The format defaults from the file's name: .canvas, .excalidraw, .mmd/.mermaid.`

// fileFlags are the flags export and import share.
type fileFlags struct {
	server, token, canvas string
	timeout               time.Duration
}

func (f *fileFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&f.server, "server", serverURL(getenv), "canvasd base URL (CANVASD_URL)")
	fs.StringVar(&f.token, "token", getenv("CANVASD_TOKEN"), "bearer token (CANVASD_TOKEN)")
	fs.StringVar(&f.canvas, "canvas", "", "canvas id")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "request timeout")
}

func (f *fileFlags) client(usage string) (*client.Client, error) {
	if f.canvas == "" {
		return nil, usageError{"--canvas is required\n" + usage}
	}
	if f.token == "" {
		return nil, usageError{"--token (or $CANVASD_TOKEN) is required\n" + usage}
	}
	c, err := client.New(f.server, f.token, client.WithUserAgent("canvasd-cli"))
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return c, nil
}

// serverURL is the default server: CANVASD_URL, else CANVASD_ADDR, else the local default.
func serverURL(getenv func(string) string) string {
	if u := getenv("CANVASD_URL"); u != "" {
		return u
	}
	if a := getenv("CANVASD_ADDR"); a != "" {
		return "http://" + a
	}
	return "http://127.0.0.1:8080"
}

// runExport is `canvasd export`.
func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("canvasd export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var ff fileFlags
	ff.register(fs, getenv)
	format := fs.String("format", "png", "png, svg, jsoncanvas or excalidraw")
	out := fs.String("out", "-", "file to write (- for stdout)")
	atRev := fs.Int64("at-rev", -1, "the canvas as it was at this revision")
	ids := fs.String("ids", "", "comma-separated node and edge ids to export")
	bounds := fs.String("bounds", "", "x,y,w,h: the page region to draw")
	scale := fs.Float64("scale", 0, "pixels per page unit of a PNG")
	transparent := fs.Bool("transparent", false, "a transparent background")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error() + "\n" + exportUsage}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected arguments %q\n%s", fs.Args(), exportUsage)}
	}
	c, err := ff.client(exportUsage)
	if err != nil {
		return err
	}
	o := client.ExportOptions{Format: *format, Scale: *scale, Transparent: *transparent}
	if *atRev >= 0 {
		o.AtRev = atRev
	}
	if *ids != "" {
		o.IDs = strings.Split(*ids, ",")
	}
	if *bounds != "" {
		parts := strings.Split(*bounds, ",")
		if len(parts) != 4 {
			return usageError{"--bounds must be x,y,w,h"}
		}
		var b [4]float64
		for i, p := range parts {
			if b[i], err = strconv.ParseFloat(strings.TrimSpace(p), 64); err != nil {
				return usageError{"--bounds must be x,y,w,h (numbers)"}
			}
		}
		o.Bounds = &b
	}
	ctx, cancel := context.WithTimeout(ctx, ff.timeout)
	defer cancel()
	x, err := c.Export(ctx, ff.canvas, o)
	if err != nil {
		return err
	}
	if *out == "-" {
		_, err = stdout.Write(x.Data)
		return err
	}
	if err := os.WriteFile(*out, x.Data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%d bytes, %s, revision %d)\n", *out, len(x.Data), x.ContentType, x.Rev)
	return nil
}

// formatOfFile guesses an import format from a file name.
func formatOfFile(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".canvas":
		return "jsoncanvas"
	case ".excalidraw":
		return "excalidraw"
	case ".mmd", ".mermaid":
		return "mermaid"
	}
	return ""
}

// runImport is `canvasd import`.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("canvasd import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var ff fileFlags
	ff.register(fs, getenv)
	format := fs.String("format", "", "jsoncanvas, excalidraw or mermaid (default: from the file's name)")
	mode := fs.String("mode", "merge", "merge or replace")
	baseRev := fs.Int64("base-rev", -1, "the revision the import was planned against (default: the head)")
	key := fs.String("idempotency-key", "", "a key that makes a retry safe")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error() + "\n" + importUsage}
	}
	if fs.NArg() != 1 {
		return usageError{"one FILE is required\n" + importUsage}
	}
	name := fs.Arg(0)
	if *format == "" {
		if *format = formatOfFile(name); *format == "" {
			return usageError{fmt.Sprintf("cannot tell the format of %q from its name: pass --format\n%s", name, importUsage)}
		}
	}
	c, err := ff.client(importUsage)
	if err != nil {
		return err
	}
	var file []byte
	if name == "-" {
		file, err = io.ReadAll(os.Stdin)
	} else {
		file, err = os.ReadFile(name)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	o := client.ImportOptions{Format: *format, Mode: *mode, IdempotencyKey: *key}
	if *baseRev >= 0 {
		o.BaseRev = baseRev
	}
	ctx, cancel := context.WithTimeout(ctx, ff.timeout)
	defer cancel()
	res, err := c.Import(ctx, ff.canvas, file, o)
	if err != nil {
		var pe *client.ProblemError
		if errors.As(err, &pe) && pe.Extra["field"] != nil {
			return fmt.Errorf("%s: %s", name, pe.Detail)
		}
		return err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
