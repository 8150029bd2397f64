package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
)

// CreateCanvas stores a new canvas with head 0 (c.HeadRev is ignored). An
// existing id is canvas.ErrAlreadyExists; an empty id canvas.ErrInvalid. A
// zero CreatedAt is stored as the store's clock's now (WithNow).
func (s *Store) CreateCanvas(ctx context.Context, c canvas.Canvas) error {
	if c.ID == "" {
		return fmt.Errorf("pgstore: create canvas: %w", canvas.Invalid("canvas_id", "must not be empty"))
	}
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	_, err := s.pool.Exec(ctx,
		`INSERT INTO canvases (id, title, head_rev, created_at, created_by)
		 VALUES ($1, $2, 0, $3, $4)`,
		c.ID, c.Title, s.orNow(c.CreatedAt), c.CreatedBy)
	if _, ok := uniqueViolation(err); ok {
		return fmt.Errorf("canvas %q: %w", c.ID, canvas.ErrAlreadyExists)
	}
	return s.wrap(ctx, "create canvas", err)
}

// GetCanvas returns the canvas with its stored head revision, or canvas.ErrNotFound.
func (s *Store) GetCanvas(ctx context.Context, id string) (canvas.Canvas, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	rows, _ := s.pool.Query(ctx,
		`SELECT id, title, head_rev, created_at, created_by FROM canvases WHERE id = $1`, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanCanvas)
	if errors.Is(err, pgx.ErrNoRows) {
		return canvas.Canvas{}, fmt.Errorf("canvas %q: %w", id, canvas.ErrNotFound)
	}
	if err != nil {
		return canvas.Canvas{}, s.wrap(ctx, "get canvas", err)
	}
	return c, nil
}

// ListCanvases returns every canvas ordered by creation time, then id.
func (s *Store) ListCanvases(ctx context.Context) ([]canvas.Canvas, error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	rows, _ := s.pool.Query(ctx,
		`SELECT id, title, head_rev, created_at, created_by FROM canvases ORDER BY created_at, id`)
	out, err := pgx.CollectRows(rows, scanCanvas)
	if err != nil {
		return nil, s.wrap(ctx, "list canvases", err)
	}
	if out == nil {
		out = []canvas.Canvas{}
	}
	return out, nil
}

// DeleteCanvas removes a canvas with its log, snapshots, idempotency records,
// snapshot markers and agent sessions (ON DELETE CASCADE) and its agent
// sessions' todos, in one statement, or returns canvas.ErrNotFound.
func (s *Store) DeleteCanvas(ctx context.Context, id string) error {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	var n int64
	err := s.pool.QueryRow(ctx, `
		WITH todos AS (
			DELETE FROM canvas_agent_todos
			WHERE session_id IN (SELECT id FROM canvas_agent_sessions WHERE canvas_id = $1)
		), c AS (
			DELETE FROM canvases WHERE id = $1 RETURNING 1
		)
		SELECT count(*) FROM c`, id).Scan(&n)
	if err != nil {
		return s.wrap(ctx, "delete canvas", err)
	}
	if n == 0 {
		return fmt.Errorf("canvas %q: %w", id, canvas.ErrNotFound)
	}
	return nil
}

func scanCanvas(row pgx.CollectableRow) (canvas.Canvas, error) {
	var c canvas.Canvas
	err := row.Scan(&c.ID, &c.Title, &c.HeadRev, &c.CreatedAt, &c.CreatedBy)
	c.CreatedAt = c.CreatedAt.UTC()
	return c, err
}

// canvasExists distinguishes "missing canvas" from "empty result".
func (s *Store) canvasExists(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM canvases WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}
