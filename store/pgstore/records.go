package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// SaveStateSnapshot stores the materialized state of a canvas at snap.Rev,
// replacing a snapshot already stored at that rev. A missing canvas is
// canvas.ErrNotFound.
func (s *Store) SaveStateSnapshot(ctx context.Context, canvasID string, snap store.StateSnapshot) error {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	data := snap.Data
	if data == nil {
		data = []byte{}
	}
	tag, err := s.pool.Exec(ctx,
		`INSERT INTO state_snapshots (canvas_id, rev, schema, data)
		 SELECT $1, $2, $3, $4
		 WHERE $5 = '' OR EXISTS (SELECT 1 FROM commits WHERE canvas_id = $1 AND rev = $2 AND event_id = $5)
		 ON CONFLICT (canvas_id, rev) DO UPDATE SET schema = excluded.schema, data = excluded.data, created_at = $6`,
		canvasID, snap.Rev, snap.Schema, data, snap.EventID, s.now())
	if fkViolation(err) {
		return fmt.Errorf("canvas %q: %w", canvasID, canvas.ErrNotFound)
	}
	if err == nil && tag.RowsAffected() == 0 {
		return fmt.Errorf("canvas %q has no commit %s at rev %d (deleted and created again?): %w", canvasID, snap.EventID, snap.Rev, canvas.ErrNotFound)
	}
	return s.wrap(ctx, "save snapshot", err)
}

// LoadStateSnapshot returns the stored snapshot with the greatest Rev ≤
// atOrBefore, or canvas.ErrNotFound when there is none.
func (s *Store) LoadStateSnapshot(ctx context.Context, canvasID string, atOrBefore int64) (store.StateSnapshot, error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	var snap store.StateSnapshot
	err := s.pool.QueryRow(ctx,
		`SELECT rev, schema, data FROM state_snapshots
		 WHERE canvas_id = $1 AND rev <= $2 ORDER BY rev DESC LIMIT 1`,
		canvasID, atOrBefore).Scan(&snap.Rev, &snap.Schema, &snap.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.StateSnapshot{}, fmt.Errorf("state snapshot of canvas %q at or before rev %d: %w", canvasID, atOrBefore, canvas.ErrNotFound)
	}
	if err != nil {
		return store.StateSnapshot{}, s.wrap(ctx, "load snapshot", err)
	}
	return snap, nil
}

// GetIdempotency returns the record stored for (canvasID, key), or canvas.ErrNotFound.
func (s *Store) GetIdempotency(ctx context.Context, canvasID, key string) (store.IdempotencyRecord, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	r := store.IdempotencyRecord{CanvasID: canvasID, Key: key}
	var fp []byte
	err := s.pool.QueryRow(ctx,
		`SELECT fingerprint, outcome, result, rev, created_at FROM idempotency WHERE canvas_id = $1 AND key = $2`,
		canvasID, key).Scan(&fp, &r.Outcome, &r.Result, &r.Rev, &r.CreatedAt)
	r.Fingerprint = string(fp)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.IdempotencyRecord{}, fmt.Errorf("idempotency key %q of canvas %q: %w", key, canvasID, canvas.ErrNotFound)
	}
	if err != nil {
		return store.IdempotencyRecord{}, s.wrap(ctx, "get idempotency", err)
	}
	r.CreatedAt = r.CreatedAt.UTC()
	return r, nil
}

// PruneIdempotency deletes records created before cutoff and says how many.
func (s *Store) PruneIdempotency(ctx context.Context, cutoff time.Time) (int64, error) {
	ctx, cancel := s.opCtxN(ctx, 8)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency WHERE created_at < $1`, cutoff)
	if err != nil {
		return 0, s.wrap(ctx, "prune idempotency", err)
	}
	return tag.RowsAffected(), nil
}

// CreateNamedSnapshot stores a snapshot marker. An existing (canvas, id) is
// canvas.ErrAlreadyExists; a missing canvas canvas.ErrNotFound. A zero
// CreatedAt is stored as the store's clock's now (WithNow).
func (s *Store) CreateNamedSnapshot(ctx context.Context, ns store.NamedSnapshot) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	_, err := s.pool.Exec(ctx,
		`INSERT INTO named_snapshots (canvas_id, id, label, description, rev, created_by, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		ns.CanvasID, ns.ID, ns.Label, ns.Description, ns.Rev, ns.CreatedBy, s.orNow(ns.CreatedAt))
	if _, ok := uniqueViolation(err); ok {
		return fmt.Errorf("snapshot %q of canvas %q: %w", ns.ID, ns.CanvasID, canvas.ErrAlreadyExists)
	}
	if fkViolation(err) {
		return fmt.Errorf("canvas %q: %w", ns.CanvasID, canvas.ErrNotFound)
	}
	return s.wrap(ctx, "create named snapshot", err)
}

const namedSnapshotCols = `canvas_id, id, label, description, rev, created_by, created_at`

func scanNamedSnapshot(row pgx.CollectableRow) (store.NamedSnapshot, error) {
	var ns store.NamedSnapshot
	err := row.Scan(&ns.CanvasID, &ns.ID, &ns.Label, &ns.Description, &ns.Rev, &ns.CreatedBy, &ns.CreatedAt)
	ns.CreatedAt = ns.CreatedAt.UTC()
	return ns, err
}

// GetNamedSnapshot returns one marker, or canvas.ErrNotFound.
func (s *Store) GetNamedSnapshot(ctx context.Context, canvasID, id string) (store.NamedSnapshot, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	rows, _ := s.pool.Query(ctx,
		`SELECT `+namedSnapshotCols+` FROM named_snapshots WHERE canvas_id = $1 AND id = $2`, canvasID, id)
	ns, err := pgx.CollectExactlyOneRow(rows, scanNamedSnapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.NamedSnapshot{}, fmt.Errorf("snapshot %q of canvas %q: %w", id, canvasID, canvas.ErrNotFound)
	}
	if err != nil {
		return store.NamedSnapshot{}, s.wrap(ctx, "get named snapshot", err)
	}
	return ns, nil
}

// ListNamedSnapshots returns a canvas's markers, oldest first (creation time,
// then id); a missing canvas is canvas.ErrNotFound.
func (s *Store) ListNamedSnapshots(ctx context.Context, canvasID string) ([]store.NamedSnapshot, error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	rows, _ := s.pool.Query(ctx,
		`SELECT `+namedSnapshotCols+` FROM named_snapshots WHERE canvas_id = $1 ORDER BY created_at, id`, canvasID)
	out, err := pgx.CollectRows(rows, scanNamedSnapshot)
	if err != nil {
		return nil, s.wrap(ctx, "list named snapshots", err)
	}
	if len(out) == 0 {
		ok, err := s.canvasExists(ctx, canvasID)
		if err != nil {
			return nil, s.wrap(ctx, "list named snapshots", err)
		}
		if !ok {
			return nil, fmt.Errorf("canvas %q: %w", canvasID, canvas.ErrNotFound)
		}
		out = []store.NamedSnapshot{}
	}
	return out, nil
}

// CreateToken stores a token by its hash. An existing actor id (or hash) is
// canvas.ErrAlreadyExists. A zero CreatedAt is stored as the store's clock's
// now (WithNow), a zero
// ExpiresAt as NULL (never).
func (s *Store) CreateToken(ctx context.Context, t store.TokenRecord) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	cs := t.Canvases
	if cs == nil {
		cs = []string{}
	}
	_, err := s.pool.Exec(ctx,
		`INSERT INTO tokens (hash, actor_id, actor_type, role, canvases, name, created_at, expires_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		t.Hash, t.ActorID, string(t.ActorType), string(t.Role), cs, t.Name, s.orNow(t.CreatedAt), nullTime(t.ExpiresAt))
	if _, ok := uniqueViolation(err); ok {
		return fmt.Errorf("token of actor %q: %w", t.ActorID, canvas.ErrAlreadyExists)
	}
	return s.wrap(ctx, "create token", err)
}

// TokenByHash returns the token with that SHA-256 hash, or canvas.ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.TokenRecord, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	rows, _ := s.pool.Query(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = $1`, hash)
	t, err := pgx.CollectExactlyOneRow(rows, scanToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.TokenRecord{}, fmt.Errorf("token: %w", canvas.ErrNotFound)
	}
	if err != nil {
		return store.TokenRecord{}, s.wrap(ctx, "token by hash", err)
	}
	return t, nil
}

// TokenByActor returns the token of an actor, or canvas.ErrNotFound.
func (s *Store) TokenByActor(ctx context.Context, actorID string) (store.TokenRecord, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	rows, _ := s.pool.Query(ctx, `SELECT `+tokenCols+` FROM tokens WHERE actor_id = $1`, actorID)
	t, err := pgx.CollectExactlyOneRow(rows, scanToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.TokenRecord{}, fmt.Errorf("token of actor %q: %w", actorID, canvas.ErrNotFound)
	}
	if err != nil {
		return store.TokenRecord{}, s.wrap(ctx, "token by actor", err)
	}
	return t, nil
}

// ListTokens returns every token ordered by creation time, then actor id.
func (s *Store) ListTokens(ctx context.Context) ([]store.TokenRecord, error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	rows, _ := s.pool.Query(ctx, `SELECT `+tokenCols+` FROM tokens ORDER BY created_at, actor_id`)
	out, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return nil, s.wrap(ctx, "list tokens", err)
	}
	return out, nil
}

const tokenCols = `hash, actor_id, actor_type, role, canvases, name, created_at, expires_at`

func scanToken(row pgx.CollectableRow) (store.TokenRecord, error) {
	var t store.TokenRecord
	var actorType, role string
	var expires *time.Time
	err := row.Scan(&t.Hash, &t.ActorID, &actorType, &role, &t.Canvases, &t.Name, &t.CreatedAt, &expires)
	t.ActorType, t.Role, t.CreatedAt = canvas.ActorType(actorType), canvas.Role(role), t.CreatedAt.UTC()
	if expires != nil {
		t.ExpiresAt = expires.UTC()
	}
	if len(t.Canvases) == 0 {
		t.Canvases = nil
	}
	return t, err
}

// RevokeToken deletes the token of an actor, or returns canvas.ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, actorID string) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM tokens WHERE actor_id = $1`, actorID)
	if err != nil {
		return s.wrap(ctx, "revoke token", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("token of actor %q: %w", actorID, canvas.ErrNotFound)
	}
	return nil
}

// RenewToken moves the expiry of an actor's token, or returns canvas.ErrNotFound.
func (s *Store) RenewToken(ctx context.Context, actorID string, expiresAt time.Time) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `UPDATE tokens SET expires_at = $2 WHERE actor_id = $1`, actorID, expiresAt)
	if err != nil {
		return s.wrap(ctx, "renew token", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("token of actor %q: %w", actorID, canvas.ErrNotFound)
	}
	return nil
}

// PruneTokens deletes the tokens that expired at or before now.
func (s *Store) PruneTokens(ctx context.Context, now time.Time) (int64, error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM tokens WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, s.wrap(ctx, "prune tokens", err)
	}
	return tag.RowsAffected(), nil
}

// nullTime maps the zero time to SQL NULL (so a column default applies).
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
