package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/canvasd/canvasd/api"
	"github.com/canvasd/canvasd/canvas"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runToken implements `canvasd token create`: it stores a new token directly
// in the configured store and prints it as JSON (the POST /api/tokens answer).
func runToken(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return usageError{"usage: canvasd token create --role viewer|editor|admin [--canvas ID]... [--actor-type agent|human|service] [--actor-id ID] [--name N] [--expires-in DURATION]"}
	}
	var c Config
	fs := newFlagSet("canvasd token create", &c, stderr)
	var req canvas.TokenRequest
	var canvases stringList
	var role, actorType string
	fs.StringVar(&role, "role", "", "viewer, editor or admin (required)")
	fs.StringVar(&actorType, "actor-type", "human", "agent, human or service")
	fs.StringVar(&req.ActorID, "actor-id", "", "actor id (default: minted; an agent's must be agent-{uuid})")
	fs.StringVar(&req.Name, "name", "", "a label for the token")
	fs.Var(&canvases, "canvas", "limit the token to this canvas (repeatable)")
	expiresIn := fs.Duration("expires-in", 0, "the token expires after this long, e.g. 24h (default: never)")
	// Defaults and environment first, then these flags.
	base, _, err := loadConfig("canvasd token create", nil, getenv, stderr)
	if err != nil {
		return err
	}
	c = base
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if role == "" {
		return usageError{"canvasd token create needs --role: viewer, editor or admin"}
	}
	req.Role, req.ActorType, req.Canvases = canvas.Role(role), canvas.ActorType(actorType), canvases
	if *expiresIn < 0 || *expiresIn%time.Second != 0 {
		return usageError{"--expires-in must be a positive whole number of seconds, like 90s or 24h"}
	}
	req.ExpiresIn = int64(*expiresIn / time.Second)
	rec, resp, err := api.NewTokenRecord(req, time.Now())
	if err != nil {
		return usageError{err.Error()} // what the flags asked for cannot be a token
	}
	st, err := openStore(ctx, c, newLogger(c, stderr))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CreateToken(ctx, rec); err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(resp)
}
