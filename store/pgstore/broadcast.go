package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

var _ store.Broadcaster = (*Store)(nil)

// Broadcast limits and timing (store.Broadcaster).
//
// A message travels in the NOTIFY payload itself when it fits
// (MaxInlineBroadcast bytes of payload at most, and the payload is UTF-8
// without NUL bytes). Anything else up to MaxBroadcastBytes is written to
// the UNLOGGED table canvasd_broadcasts and the NOTIFY carries its row id;
// listeners read the row. Rows are deleted once older than BroadcastTTL (by
// the next large Broadcast or listener (re)connection after that), so a
// listener that takes longer than BroadcastTTL to read a row misses it (and
// logs it). Larger payloads are refused with canvas.ErrTooLarge.
const (
	MaxInlineBroadcast = 7400
	MaxBroadcastBytes  = 32 << 20
	BroadcastTTL       = time.Minute
	maxBroadcastTopic  = 64
	broadcastPruneGap  = 10 * time.Second
)

// broadcastTable is created on first use (CREATE UNLOGGED TABLE IF NOT
// EXISTS, under the migration lock): it is scratch space, not part of the
// versioned schema, and losing it in a database crash loses nothing durable.
// Its created_at, and the age pruneBroadcasts compares it with, are the
// database's now(), not the store's clock: the rows come from every process
// on the database, and its clock is the one they all share, so a process
// whose clock runs ahead cannot prune another's broadcasts before they were
// read.
const broadcastTableDDL = `
CREATE UNLOGGED TABLE IF NOT EXISTS canvasd_broadcasts (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	topic      text NOT NULL,
	payload    bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS canvasd_broadcasts_created_at ON canvasd_broadcasts (created_at)`

// broadcastState is the Store's broadcast set-up, made once on first use.
type broadcastState struct {
	mu        sync.Mutex
	channel   string // "" until the table and channel are set up
	lastPrune time.Time
}

// Broadcast notification payloads: "<instance>:i:<topic>\n<payload>" (inline)
// or "<instance>:r:<row id>" (stored in canvasd_broadcasts).

// BroadcastChannel returns the NOTIFY channel broadcasts use:
// "canvasd_events:<schema>" (hashed past 63 bytes), so deployments in
// different schemas of one database never see each other's events. It sets
// the broadcast table up on first use.
func (s *Store) BroadcastChannel(ctx context.Context) (string, error) {
	s.bc.mu.Lock()
	defer s.bc.mu.Unlock()
	if s.bc.channel != "" {
		return s.bc.channel, nil
	}
	ctx, cancel := s.opCtxN(ctx, 3)
	defer cancel()
	var schema string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.lockSchema(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, broadcastTableDDL); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema)
	})
	if err != nil {
		return "", s.wrap(ctx, "set up broadcasts", err)
	}
	ch := "canvasd_events:" + schema
	if len(ch) > 63 {
		sum := sha256.Sum256([]byte(schema))
		ch = "canvasd_events:" + hex.EncodeToString(sum[:12])
	}
	s.bc.channel = ch
	return ch, nil
}

func validTopic(topic string) error {
	if topic == "" || len(topic) > maxBroadcastTopic || !utf8.ValidString(topic) || strings.ContainsAny(topic, "\x00\r\n") {
		return fmt.Errorf("pgstore: broadcast topic %q: want 1 to %d bytes of UTF-8 without NUL or line breaks: %w",
			topic, maxBroadcastTopic, canvas.ErrInvalid)
	}
	return nil
}

// Broadcast sends payload under topic to every other Store's
// ListenBroadcast on this schema (store.Broadcaster): one pg_notify for a
// small payload, an insert into canvasd_broadcasts plus a pg_notify naming
// the row (one statement, one round trip) for a larger one. It returns once
// the database has accepted the message; an unreachable database is an
// error wrapping canvas.ErrUnavailable, a payload over MaxBroadcastBytes one
// wrapping canvas.ErrTooLarge.
func (s *Store) Broadcast(ctx context.Context, topic string, payload []byte) error {
	if err := validTopic(topic); err != nil {
		return err
	}
	if len(payload) > MaxBroadcastBytes {
		return fmt.Errorf("pgstore: broadcast %q: %d bytes is more than the %d-byte limit: %w",
			topic, len(payload), MaxBroadcastBytes, canvas.ErrTooLarge)
	}
	ch, err := s.BroadcastChannel(ctx)
	if err != nil {
		return err
	}
	if len(payload) <= MaxInlineBroadcast && utf8.Valid(payload) && bytes.IndexByte(payload, 0) < 0 {
		octx, cancel := s.opCtx(ctx)
		defer cancel()
		_, err := s.pool.Exec(octx, `SELECT pg_notify($1, $2)`, ch, s.instance+":i:"+topic+"\n"+string(payload))
		return s.wrap(octx, "broadcast", err)
	}
	octx, cancel := s.opCtxN(ctx, 5)
	defer cancel()
	_, err = s.pool.Exec(octx, `WITH r AS (INSERT INTO canvasd_broadcasts (topic, payload) VALUES ($2, $3) RETURNING id)
		SELECT pg_notify($1, $4 || r.id::text) FROM r`, ch, topic, payload, s.instance+":r:")
	if err != nil {
		return s.wrap(octx, "broadcast", err)
	}
	s.pruneBroadcasts(ctx, false)
	return nil
}

// pruneBroadcasts deletes stored broadcasts older than BroadcastTTL, at most
// once per broadcastPruneGap unless force.
func (s *Store) pruneBroadcasts(ctx context.Context, force bool) {
	s.bc.mu.Lock()
	now := s.now()
	if !force && now.Sub(s.bc.lastPrune) < broadcastPruneGap {
		s.bc.mu.Unlock()
		return
	}
	s.bc.lastPrune = now
	s.bc.mu.Unlock()
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `DELETE FROM canvasd_broadcasts WHERE created_at < now() - make_interval(secs => $1)`,
		BroadcastTTL.Seconds()); err != nil {
		s.log.Warn("pgstore: pruning old broadcasts failed", "err", err)
	}
}

// ListenBroadcast calls deliver(topic, payload) for each message another
// Store broadcast on this schema, in the order PostgreSQL delivers them,
// through the store's one LISTEN connection (shared with Listen, see
// listener); the Store's own broadcasts are skipped. Each time LISTEN takes
// effect (when ListenBroadcast starts on a connection already listening,
// and after every reconnection) it calls deliver("", nil): messages sent
// meanwhile are lost. deliver is called from one goroutine at a time. A
// stored message whose row is gone (older than BroadcastTTL) is logged and
// skipped. It returns nil when ctx ends or the store is closed.
func (s *Store) ListenBroadcast(ctx context.Context, deliver func(topic string, payload []byte)) error {
	return s.listen.serve(ctx, &listenSub{deliver: deliver})
}

// decodeBroadcast parses a notification; ok is false for the store's own
// messages, malformed ones and stored ones that cannot be read.
func (s *Store) decodeBroadcast(ctx context.Context, p string) (topic string, payload []byte, ok bool) {
	if len(p) < instanceLen+3 || p[instanceLen] != ':' || p[instanceLen+2] != ':' || !isHex(p[:instanceLen]) {
		s.log.Debug("pgstore: ignoring a malformed broadcast", "len", len(p))
		return "", nil, false
	}
	if p[:instanceLen] == s.instance {
		return "", nil, false
	}
	body := p[instanceLen+3:]
	switch p[instanceLen+1] {
	case 'i':
		topic, rest, found := strings.Cut(body, "\n")
		if !found || topic == "" {
			return "", nil, false
		}
		return topic, []byte(rest), true
	case 'r':
		id, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return "", nil, false
		}
		qctx, cancel := s.opCtxN(ctx, 5)
		defer cancel()
		err = s.pool.QueryRow(qctx, `SELECT topic, payload FROM canvasd_broadcasts WHERE id = $1`, id).Scan(&topic, &payload)
		if err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				s.log.Warn("pgstore: a stored broadcast expired before it was read; skipped", "id", id, "ttl", BroadcastTTL)
			} else {
				s.log.Warn("pgstore: reading a stored broadcast failed; skipped", "id", id, "err", err)
			}
			return "", nil, false
		}
		return topic, payload, true
	}
	return "", nil, false
}
