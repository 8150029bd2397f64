package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/canvasd/canvasd/canvas"
)

// Before sessions lived in the store, each process kept them in
// <data-dir>/host/<session>/, surfaces in the hidden file legacyStateFile.
const (
	legacyDir       = "host"
	legacyStateFile = ".a2ui-state.json"
	importedSuffix  = ".imported"
)

// ImportReport says what ImportLegacyDir did.
type ImportReport struct {
	Sessions int      // sessions with something imported
	Files    int      // files imported
	States   int      // A2UI states imported
	Skipped  []string // "session/path: why" for what was left behind
	MovedTo  string   // where the directory was renamed to; "" when there was none
}

// ImportLegacyDir imports the host sessions an earlier canvasd kept in
// DataDir/host/ into the store, then renames that directory to
// DataDir/host.imported (so the import happens once, and files deleted
// later do not come back). It imports each regular file whose path the file
// API accepts, up to MaxFileBytes, unless the store already has a file at
// that path, and a session's surfaces when the store has none for it.
// Symlinks, hidden files and other names the server never served are
// skipped and listed in the report. Without DataDir/host it does nothing.
func (h *Host) ImportLegacyDir(ctx context.Context) (ImportReport, error) {
	var rep ImportReport
	dir := filepath.Join(h.cfg.DataDir, legacyDir)
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("host: open %s: %w", dir, err)
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return rep, fmt.Errorf("host: read %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() || ValidateSession(e.Name()) != nil {
			rep.Skipped = append(rep.Skipped, e.Name()+": not a session directory")
			continue
		}
		n, err := h.importSession(ctx, root, e.Name(), &rep)
		if err != nil {
			return rep, err
		}
		if n > 0 {
			rep.Sessions++
		}
	}
	rep.MovedTo = dir + importedSuffix
	if _, err := os.Lstat(rep.MovedTo); err == nil {
		rep.MovedTo = fmt.Sprintf("%s%s-%d", dir, importedSuffix, h.cfg.Now().Unix())
	}
	if err := os.Rename(dir, rep.MovedTo); err != nil {
		return rep, fmt.Errorf("host: imported %s, but renaming it failed (it would be imported again): %w", dir, err)
	}
	return rep, nil
}

// importSession imports one session directory and returns how many files
// and states it stored.
func (h *Host) importSession(ctx context.Context, root *os.Root, session string, rep *ImportReport) (int, error) {
	sroot, err := root.OpenRoot(session)
	if err != nil {
		return 0, fmt.Errorf("host: open session directory %q: %w", session, err)
	}
	defer sroot.Close()
	n := 0
	skip := func(p, why string) { rep.Skipped = append(rep.Skipped, session+"/"+p+": "+why) }
	err = fs.WalkDir(sroot.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			skip(p, err.Error())
			return nil
		case p == ".":
			return nil
		case p == legacyStateFile:
			ok, err := h.importState(ctx, sroot, session, skip)
			if ok {
				rep.States++
				n++
			}
			return err
		case d.IsDir():
			if _, _, err := CleanPath(p + "/"); err != nil {
				skip(p+"/", "not a name the server serves")
				return fs.SkipDir
			}
			return nil
		case !d.Type().IsRegular():
			skip(p, "not a regular file (symlinks are not followed)")
			return nil
		}
		clean, err := writablePath(p)
		if err != nil {
			skip(p, "not a name the file API accepts")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			skip(p, err.Error())
			return nil
		}
		if info.Size() > h.cfg.MaxFileBytes {
			skip(p, fmt.Sprintf("larger than the %d-byte file limit", h.cfg.MaxFileBytes))
			return nil
		}
		if _, err := h.store.GetHostFile(ctx, session, clean); err == nil {
			skip(p, "the store already has a file there")
			return nil
		} else if !errors.Is(err, canvas.ErrNotFound) {
			return err
		}
		data, err := sroot.ReadFile(p)
		if err != nil {
			skip(p, err.Error())
			return nil
		}
		_, err = h.store.PutHostFile(ctx, canvas.HostFile{Session: session, Path: clean, Data: data, Modified: info.ModTime().UTC()})
		if errors.Is(err, canvas.ErrConflict) {
			skip(p, "a file and a directory of that name")
			return nil
		}
		if err != nil {
			return err
		}
		rep.Files++
		n++
		return nil
	})
	return n, err
}

// importState stores the session's legacy surfaces when the store has none.
func (h *Host) importState(ctx context.Context, sroot *os.Root, session string, skip func(p, why string)) (bool, error) {
	b, err := sroot.ReadFile(legacyStateFile)
	if err != nil {
		skip(legacyStateFile, err.Error())
		return false, nil
	}
	if int64(len(b)) > h.cfg.MaxStateBytes || !json.Valid(b) {
		skip(legacyStateFile, "not JSON, or over the state limit")
		return false, nil
	}
	v, _, err := h.store.LoadHostState(ctx, session)
	if err != nil {
		return false, err
	}
	if v != 0 {
		skip(legacyStateFile, "the store already has surfaces for the session")
		return false, nil
	}
	err = h.store.SaveHostState(ctx, session, 0, b)
	if errors.Is(err, canvas.ErrHeadMismatch) {
		skip(legacyStateFile, "the store already has surfaces for the session")
		return false, nil
	}
	return err == nil, err
}
