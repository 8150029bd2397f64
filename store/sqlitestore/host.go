package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// hostDirRange returns the bounds [lo, hi) of the paths under dir+"/" in
// byte order ('0' follows '/').
func hostDirRange(dir string) (lo, hi string) { return dir + "/", dir + "0" }

// hostDirQuery reports whether a file lies under ? ≤ path < ?.
const hostDirQuery = `SELECT EXISTS (SELECT 1 FROM host_files WHERE session = ? AND path >= ? AND path < ?)`

// PutHostFile implements store.HostStore.PutHostFile. Its checks and write
// run in one group-commit transaction on the single writer connection, so
// no other write interleaves.
func (s *Store) PutHostFile(ctx context.Context, f canvas.HostFile) (created bool, err error) {
	data := f.Data
	if data == nil {
		data = []byte{}
	}
	var parents []any
	for d := path.Dir(f.Path); d != "." && d != "/" && d != ""; d = path.Dir(d) {
		parents = append(parents, d)
	}
	err = s.write(ctx, func(w *writer) error {
		created = false
		if len(parents) > 0 {
			var blocker string
			err := w.conn.QueryRowContext(bg, `SELECT path FROM host_files WHERE session = ? AND path IN (?`+
				strings.Repeat(", ?", len(parents)-1)+`) LIMIT 1`, append([]any{f.Session}, parents...)...).Scan(&blocker)
			if err == nil {
				return fmt.Errorf("sqlitestore: host file %q: %q is a file, not a directory: %w", f.Path, blocker, canvas.ErrConflict)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return mapErr("put host file", err)
			}
		}
		lo, hi := hostDirRange(f.Path)
		var isDir, existed bool
		if err := w.conn.QueryRowContext(bg, hostDirQuery, f.Session, lo, hi).Scan(&isDir); err != nil {
			return mapErr("put host file", err)
		}
		if isDir {
			return fmt.Errorf("sqlitestore: host file %q is a directory: %w", f.Path, canvas.ErrConflict)
		}
		if err := w.conn.QueryRowContext(bg, `SELECT EXISTS (SELECT 1 FROM host_files WHERE session = ? AND path = ?)`,
			f.Session, f.Path).Scan(&existed); err != nil {
			return mapErr("put host file", err)
		}
		if _, err := w.conn.ExecContext(bg, `INSERT INTO host_sessions (session) VALUES (?) ON CONFLICT DO NOTHING`, f.Session); err != nil {
			return mapErr("put host file", err)
		}
		if _, err := w.conn.ExecContext(bg, `INSERT INTO host_files (session, path, data, size, modified) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (session, path) DO UPDATE SET data = excluded.data, size = excluded.size, modified = excluded.modified`,
			f.Session, f.Path, data, len(data), f.Modified.UnixMicro()); err != nil {
			return mapErr("put host file", err)
		}
		created = !existed
		return nil
	})
	return created, err
}

// GetHostFile implements store.HostStore.GetHostFile.
func (s *Store) GetHostFile(ctx context.Context, session, p string) (canvas.HostFile, error) {
	f := canvas.HostFile{Session: session, Path: p}
	var modified int64
	err := s.rdb.QueryRowContext(ctx, `SELECT data, size, modified FROM host_files WHERE session = ? AND path = ?`, session, p).
		Scan(&f.Data, &f.Size, &modified)
	if errors.Is(err, sql.ErrNoRows) {
		return canvas.HostFile{}, fmt.Errorf("host file %q of session %q: %w", p, session, canvas.ErrNotFound)
	}
	if err != nil {
		return canvas.HostFile{}, mapErr("get host file", err)
	}
	if f.Data == nil {
		f.Data = []byte{}
	}
	f.Modified = fromMicros(modified)
	return f, nil
}

// HostDirExists implements store.HostStore.HostDirExists.
func (s *Store) HostDirExists(ctx context.Context, session, dir string) (bool, error) {
	var ok bool
	var err error
	if dir == "" {
		err = s.rdb.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM host_files WHERE session = ?)`, session).Scan(&ok)
	} else {
		lo, hi := hostDirRange(dir)
		err = s.rdb.QueryRowContext(ctx, hostDirQuery, session, lo, hi).Scan(&ok)
	}
	if err != nil {
		return false, mapErr("host directory exists", err)
	}
	return ok, nil
}

// DeleteHostFile implements store.HostStore.DeleteHostFile.
func (s *Store) DeleteHostFile(ctx context.Context, session, p string) error {
	return s.write(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(bg, `DELETE FROM host_files WHERE session = ? AND path = ?`, session, p)
		if err != nil {
			return mapErr("delete host file", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("host file %q of session %q: %w", p, session, canvas.ErrNotFound)
		}
		return nil
	})
}

// ListHostFiles implements store.HostStore.ListHostFiles.
func (s *Store) ListHostFiles(ctx context.Context, session string, limit int) ([]canvas.HostFile, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT path, size, modified FROM host_files WHERE session = ? ORDER BY path LIMIT ?`,
		session, limit)
	if err != nil {
		return nil, mapErr("list host files", err)
	}
	defer rows.Close()
	out := []canvas.HostFile{}
	for rows.Next() {
		f := canvas.HostFile{Session: session}
		var modified int64
		if err := rows.Scan(&f.Path, &f.Size, &modified); err != nil {
			return nil, mapErr("list host files", err)
		}
		f.Modified = fromMicros(modified)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("list host files", err)
	}
	return out, nil
}

// LoadHostState implements store.HostStore.LoadHostState.
func (s *Store) LoadHostState(ctx context.Context, session string) (version int64, data []byte, err error) {
	err = s.rdb.QueryRowContext(ctx, `SELECT state_version, state FROM host_sessions WHERE session = ?`, session).Scan(&version, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, mapErr("load host state", err)
	}
	return version, data, nil
}

// SaveHostState implements store.HostStore.SaveHostState.
func (s *Store) SaveHostState(ctx context.Context, session string, expected int64, data []byte) error {
	return s.write(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(bg, `INSERT INTO host_sessions (session) VALUES (?) ON CONFLICT DO NOTHING`, session); err != nil {
			return mapErr("save host state", err)
		}
		res, err := w.conn.ExecContext(bg, `UPDATE host_sessions SET state = ?, state_version = state_version + 1
			WHERE session = ? AND state_version = ?`, data, session, expected)
		if err != nil {
			return mapErr("save host state", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("sqlitestore: host state of session %q is no longer at version %d: %w", session, expected, canvas.ErrHeadMismatch)
		}
		return nil
	})
}

// SharedSecret implements store.HostStore.SharedSecret.
func (s *Store) SharedSecret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if len(candidate) == 0 {
		return nil, fmt.Errorf("sqlitestore: shared secret %q: empty candidate: %w", name, canvas.ErrInvalid)
	}
	var v []byte
	err := s.write(ctx, func(w *writer) error {
		if _, err := w.conn.ExecContext(bg, `INSERT INTO shared_secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
			name, candidate, s.now().UnixMicro()); err != nil {
			return mapErr("shared secret", err)
		}
		if err := w.conn.QueryRowContext(bg, `SELECT value FROM shared_secrets WHERE name = ?`, name).Scan(&v); err != nil {
			return mapErr("shared secret", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}
