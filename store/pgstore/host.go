package pgstore

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
)

// lockSession creates the session's row when missing and locks it for tx.
// Every writer of a session takes the lock, so the file/directory checks of
// PutHostFile hold across processes.
func lockSession(ctx context.Context, tx pgx.Tx, session string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO host_sessions (session) VALUES ($1) ON CONFLICT DO NOTHING`, session); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `SELECT 1 FROM host_sessions WHERE session = $1 FOR UPDATE`, session)
	return err
}

// hostDirRange returns the bounds [lo, hi) of the paths under dir+"/" in
// byte order ('0' follows '/').
func hostDirRange(dir string) (lo, hi string) { return dir + "/", dir + "0" }

// hostDirQuery reports whether a file lies under $2 ≤ path < $3.
const hostDirQuery = `SELECT EXISTS (SELECT 1 FROM host_files WHERE session = $1 AND path >= $2 AND path < $3)`

// parentDirs returns the parent directories of p ("a/b/c" → "a", "a/b").
func parentDirs(p string) []string {
	var out []string
	for d := path.Dir(p); d != "." && d != "/" && d != ""; d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}

// PutHostFile implements store.HostStore.PutHostFile in one transaction
// that holds the session's row lock.
func (s *Store) PutHostFile(ctx context.Context, f canvas.HostFile) (created bool, err error) {
	ctx, cancel := s.opCtxN(ctx, 8)
	defer cancel()
	data := f.Data
	if data == nil {
		data = []byte{}
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockSession(ctx, tx, f.Session); err != nil {
			return err
		}
		var blocker string
		err := tx.QueryRow(ctx, `SELECT path FROM host_files WHERE session = $1 AND path = ANY($2) LIMIT 1`,
			f.Session, parentDirs(f.Path)).Scan(&blocker)
		if err == nil {
			return fmt.Errorf("pgstore: host file %q: %q is a file, not a directory: %w", f.Path, blocker, canvas.ErrConflict)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		lo, hi := hostDirRange(f.Path)
		var isDir bool
		if err := tx.QueryRow(ctx, hostDirQuery, f.Session, lo, hi).Scan(&isDir); err != nil {
			return err
		}
		if isDir {
			return fmt.Errorf("pgstore: host file %q is a directory: %w", f.Path, canvas.ErrConflict)
		}
		var existed bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM host_files WHERE session = $1 AND path = $2)`,
			f.Session, f.Path).Scan(&existed); err != nil {
			return err
		}
		created = !existed
		_, err = tx.Exec(ctx, `INSERT INTO host_files (session, path, data, size, modified) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (session, path) DO UPDATE SET data = excluded.data, size = excluded.size, modified = excluded.modified`,
			f.Session, f.Path, data, int64(len(data)), f.Modified)
		return err
	})
	if errors.Is(err, canvas.ErrConflict) {
		return false, err
	}
	return created, s.wrap(ctx, "put host file", err)
}

// GetHostFile implements store.HostStore.GetHostFile.
func (s *Store) GetHostFile(ctx context.Context, session, p string) (canvas.HostFile, error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	f := canvas.HostFile{Session: session, Path: p}
	err := s.pool.QueryRow(ctx, `SELECT data, size, modified FROM host_files WHERE session = $1 AND path = $2`, session, p).
		Scan(&f.Data, &f.Size, &f.Modified)
	if errors.Is(err, pgx.ErrNoRows) {
		return canvas.HostFile{}, fmt.Errorf("host file %q of session %q: %w", p, session, canvas.ErrNotFound)
	}
	if err != nil {
		return canvas.HostFile{}, s.wrap(ctx, "get host file", err)
	}
	f.Modified = f.Modified.UTC()
	return f, nil
}

// HostDirExists implements store.HostStore.HostDirExists.
func (s *Store) HostDirExists(ctx context.Context, session, dir string) (bool, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	var ok bool
	var err error
	if dir == "" {
		err = s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM host_files WHERE session = $1)`, session).Scan(&ok)
	} else {
		lo, hi := hostDirRange(dir)
		err = s.pool.QueryRow(ctx, hostDirQuery, session, lo, hi).Scan(&ok)
	}
	return ok, s.wrap(ctx, "host directory exists", err)
}

// DeleteHostFile implements store.HostStore.DeleteHostFile.
func (s *Store) DeleteHostFile(ctx context.Context, session, p string) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM host_files WHERE session = $1 AND path = $2`, session, p)
	if err != nil {
		return s.wrap(ctx, "delete host file", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("host file %q of session %q: %w", p, session, canvas.ErrNotFound)
	}
	return nil
}

// ListHostFiles implements store.HostStore.ListHostFiles.
func (s *Store) ListHostFiles(ctx context.Context, session string, limit int) ([]canvas.HostFile, error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	rows, _ := s.pool.Query(ctx, `SELECT path, size, modified FROM host_files WHERE session = $1 ORDER BY path LIMIT $2`,
		session, limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (canvas.HostFile, error) {
		f := canvas.HostFile{Session: session}
		err := row.Scan(&f.Path, &f.Size, &f.Modified)
		f.Modified = f.Modified.UTC()
		return f, err
	})
	if err != nil {
		return nil, s.wrap(ctx, "list host files", err)
	}
	if out == nil {
		out = []canvas.HostFile{}
	}
	return out, nil
}

// LoadHostState implements store.HostStore.LoadHostState.
func (s *Store) LoadHostState(ctx context.Context, session string) (version int64, data []byte, err error) {
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	err = s.pool.QueryRow(ctx, `SELECT state_version, state FROM host_sessions WHERE session = $1`, session).Scan(&version, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, s.wrap(ctx, "load host state", err)
	}
	return version, data, nil
}

// SaveHostState implements store.HostStore.SaveHostState: one conditional
// UPDATE under the session's row lock.
func (s *Store) SaveHostState(ctx context.Context, session string, expected int64, data []byte) error {
	ctx, cancel := s.opCtxN(ctx, 8)
	defer cancel()
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockSession(ctx, tx, session); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE host_sessions SET state = $3, state_version = state_version + 1
			WHERE session = $1 AND state_version = $2`, session, expected, data)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return s.wrap(ctx, "save host state", err)
	}
	if n == 0 {
		return fmt.Errorf("pgstore: host state of session %q is no longer at version %d: %w", session, expected, canvas.ErrHeadMismatch)
	}
	return nil
}

// SharedSecret implements store.HostStore.SharedSecret.
func (s *Store) SharedSecret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if len(candidate) == 0 {
		return nil, fmt.Errorf("pgstore: shared secret %q: empty candidate: %w", name, canvas.ErrInvalid)
	}
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	var v []byte
	err := s.pool.QueryRow(ctx, `WITH ins AS (
			INSERT INTO shared_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING value
		)
		SELECT value FROM ins UNION ALL SELECT value FROM shared_secrets WHERE name = $1 LIMIT 1`,
		name, candidate, s.now()).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another process inserted it after this statement's snapshot was
		// taken: read it with a new one.
		err = s.pool.QueryRow(ctx, `SELECT value FROM shared_secrets WHERE name = $1`, name).Scan(&v)
	}
	if err != nil {
		return nil, s.wrap(ctx, "shared secret", err)
	}
	return v, nil
}
