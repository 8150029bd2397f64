package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// The store.HostStore part of the suite.

func putHostFile(t *testing.T, h *harness, session, p, data string) bool {
	t.Helper()
	created, err := h.s.PutHostFile(ctxT(t), canvas.HostFile{Session: session, Path: p, Data: []byte(data), Modified: t0})
	if err != nil {
		t.Fatalf("PutHostFile(%s, %q): %v", session, p, err)
	}
	return created
}

func hostPaths(t *testing.T, h *harness, session string, limit int) []string {
	t.Helper()
	fs, err := h.s.ListHostFiles(ctxT(t), session, limit)
	if err != nil {
		t.Fatalf("ListHostFiles(%s): %v", session, err)
	}
	if fs == nil {
		t.Fatalf("ListHostFiles(%s) = nil, want an empty slice", session)
	}
	out := []string{}
	for _, f := range fs {
		if f.Data != nil {
			t.Errorf("ListHostFiles(%s): %q carries its data", session, f.Path)
		}
		out = append(out, f.Path)
	}
	return out
}

func isHostDir(t *testing.T, h *harness, session, dir string) bool {
	t.Helper()
	ok, err := h.s.HostDirExists(ctxT(t), session, dir)
	if err != nil {
		t.Fatalf("HostDirExists(%s, %q): %v", session, dir, err)
	}
	return ok
}

// testHostFiles checks a store's canvas host files: listing, reading and
// writing them, byte for byte; the tree of implicit directories and its
// conflicts; separate sessions; deleting; racing puts.
//
// It stays over 100 lines because it is one scenario on one session, each
// step relying on the files the steps before it left; split, every part
// would have to set up (and document) the state the previous one built.
func testHostFiles(t *testing.T, h *harness) {
	ctx := ctxT(t)
	if got := hostPaths(t, h, "s", 100); len(got) != 0 {
		t.Fatalf("a fresh store lists %q", got)
	}
	if isHostDir(t, h, "s", "") {
		t.Fatal("a fresh store has session s")
	}
	if !putHostFile(t, h, "s", "index.html", "<h1>v1</h1>") {
		t.Fatal("the first put of index.html is not created")
	}
	later := t0.Add(time.Hour)
	created, err := h.s.PutHostFile(ctx, canvas.HostFile{Session: "s", Path: "index.html", Data: []byte("<h1>v2</h1>"), Modified: later})
	if err != nil || created {
		t.Fatalf("replacing index.html: created %v, %v", created, err)
	}
	f, err := h.s.GetHostFile(ctx, "s", "index.html")
	if err != nil || string(f.Data) != "<h1>v2</h1>" || f.Size != 11 || !sameTime(f.Modified, later) || f.Session != "s" || f.Path != "index.html" {
		t.Fatalf("GetHostFile after replace = %+v, %v", f, err)
	}
	// Bytes come back exactly: NUL, invalid UTF-8, empty.
	raw := []byte{0, 0xff, 0xfe, '\n', 0, 'x'}
	if _, err := h.s.PutHostFile(ctx, canvas.HostFile{Session: "s", Path: "bin/raw.dat", Data: raw, Modified: t0}); err != nil {
		t.Fatalf("PutHostFile(binary): %v", err)
	}
	if f, err := h.s.GetHostFile(ctx, "s", "bin/raw.dat"); err != nil || !bytes.Equal(f.Data, raw) || f.Size != int64(len(raw)) {
		t.Fatalf("binary file = %+v, %v", f, err)
	}
	putHostFile(t, h, "s", "bin/empty", "")
	if f, err := h.s.GetHostFile(ctx, "s", "bin/empty"); err != nil || len(f.Data) != 0 || f.Size != 0 {
		t.Fatalf("empty file = %+v, %v", f, err)
	}

	// The tree: directories are implicit, a path is a file or a directory.
	putHostFile(t, h, "s", "a/b/c.txt", "c")
	for dir, want := range map[string]bool{"": true, "a": true, "a/b": true, "a/b/c.txt": false, "a/b/c": false, "a/": false, "b": false} {
		if got := isHostDir(t, h, "s", dir); got != want {
			t.Errorf("HostDirExists(s, %q) = %v, want %v", dir, got, want)
		}
	}
	for _, p := range []string{"a", "a/b", "a/b/c.txt/d", "a/b/c.txt/d/e", "index.html/x"} {
		_, err := h.s.PutHostFile(ctx, canvas.HostFile{Session: "s", Path: p, Data: []byte("x"), Modified: t0})
		wantErr(t, fmt.Sprintf("PutHostFile(%q) against the tree", p), err, canvas.ErrConflict)
	}
	for _, p := range []string{"a", "a/b", "a/b/c.txt/d"} {
		_, err := h.s.GetHostFile(ctx, "s", p)
		wantErr(t, fmt.Sprintf("GetHostFile(%q)", p), err, canvas.ErrNotFound)
	}
	// Names that share a prefix with a directory are neither in it nor in
	// its way, and listings are in byte order (not a locale's).
	for _, p := range []string{"a_b", "a-b", "a.b", "a0", "ab", "Z.txt", "Index.html", "é.txt", "a%b", "a b"} {
		putHostFile(t, h, "s", p, p)
	}
	if isHostDir(t, h, "s", "a_") || isHostDir(t, h, "s", "a_b") || isHostDir(t, h, "s", "a%") {
		t.Error("a prefix of a file name counts as a directory")
	}
	want := []string{"Index.html", "Z.txt", "a b", "a%b", "a-b", "a.b", "a/b/c.txt", "a0", "a_b", "ab", "bin/empty", "bin/raw.dat", "index.html", "é.txt"}
	if got := hostPaths(t, h, "s", 100); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListHostFiles = %q\nwant %q", got, want)
	}
	if got := hostPaths(t, h, "s", 3); !reflect.DeepEqual(got, want[:3]) {
		t.Fatalf("ListHostFiles limit 3 = %q, want %q", got, want[:3])
	}
	if f, _ := h.s.GetHostFile(ctx, "s", "Index.html"); string(f.Data) != "Index.html" {
		t.Fatalf("paths are not case-sensitive: Index.html holds %q", f.Data)
	}

	// Sessions are separate, also those whose names share a prefix.
	putHostFile(t, h, "s1", "index.html", "s1")
	if got := hostPaths(t, h, "s1", 100); !reflect.DeepEqual(got, []string{"index.html"}) {
		t.Fatalf("session s1 lists %q", got)
	}
	if f, _ := h.s.GetHostFile(ctx, "s", "index.html"); string(f.Data) != "<h1>v2</h1>" {
		t.Fatalf("a put to s1 changed s: %q", f.Data)
	}
	if isHostDir(t, h, "s2", "") || isHostDir(t, h, "s1", "a") {
		t.Error("a session sees another's files")
	}

	// Delete: files only; the last file of a directory takes it along.
	wantErr(t, "DeleteHostFile of a directory", h.s.DeleteHostFile(ctx, "s", "a/b"), canvas.ErrNotFound)
	wantErr(t, "DeleteHostFile in another session", h.s.DeleteHostFile(ctx, "s1", "a/b/c.txt"), canvas.ErrNotFound)
	if err := h.s.DeleteHostFile(ctx, "s", "a/b/c.txt"); err != nil {
		t.Fatalf("DeleteHostFile: %v", err)
	}
	wantErr(t, "DeleteHostFile twice", h.s.DeleteHostFile(ctx, "s", "a/b/c.txt"), canvas.ErrNotFound)
	_, err = h.s.GetHostFile(ctx, "s", "a/b/c.txt")
	wantErr(t, "GetHostFile after delete", err, canvas.ErrNotFound)
	if isHostDir(t, h, "s", "a") {
		t.Error("directory a outlived its last file")
	}
	if !putHostFile(t, h, "s", "a", "now a file") {
		t.Error("a path whose directory went away cannot become a file")
	}

	// Racing puts of a file and a file inside it: exactly one wins.
	for i := 0; i < 20; i++ {
		dir := fmt.Sprintf("race%d", i)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, p := range []string{dir, dir + "/inner.txt"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[j] = h.s.PutHostFile(ctx, canvas.HostFile{Session: "s", Path: p, Data: []byte("x"), Modified: t0})
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !errors.Is(err, canvas.ErrConflict) {
				t.Fatalf("race %d: %v", i, err)
			}
		}
		if ok != 1 {
			t.Fatalf("race %d: %d of a file and a file inside it were stored (errors %v)", i, ok, errs)
		}
	}

	h.reopen(t)
	if f, err := h.s.GetHostFile(ctxT(t), "s", "bin/raw.dat"); err != nil || !bytes.Equal(f.Data, raw) {
		t.Fatalf("binary file after reopen = %+v, %v", f, err)
	}
}

func testHostState(t *testing.T, h *harness) {
	ctx := ctxT(t)
	if v, data, err := h.s.LoadHostState(ctx, "s"); err != nil || v != 0 || data != nil {
		t.Fatalf("LoadHostState of a fresh session = %d, %q, %v", v, data, err)
	}
	if err := h.s.SaveHostState(ctx, "s", 0, []byte(`{"v":1}`)); err != nil {
		t.Fatalf("SaveHostState(0): %v", err)
	}
	wantErr(t, "SaveHostState from a stale version", h.s.SaveHostState(ctx, "s", 0, []byte(`{"v":"stale"}`)), canvas.ErrHeadMismatch)
	wantErr(t, "SaveHostState from a future version", h.s.SaveHostState(ctx, "s", 5, []byte(`{"v":"future"}`)), canvas.ErrHeadMismatch)
	if v, data, err := h.s.LoadHostState(ctx, "s"); err != nil || v != 1 || string(data) != `{"v":1}` {
		t.Fatalf("LoadHostState = %d, %q, %v; want 1 and the first save", v, data, err)
	}
	// State and files are independent; sessions are separate.
	if isHostDir(t, h, "s", "") {
		t.Error("a session with state only has files")
	}
	putHostFile(t, h, "s", "index.html", "x")
	if v, _, _ := h.s.LoadHostState(ctx, "s"); v != 1 {
		t.Errorf("a file write moved the state version to %d", v)
	}
	if v, _, _ := h.s.LoadHostState(ctx, "s1"); v != 0 {
		t.Errorf("session s1 has state version %d", v)
	}
	// Of concurrent saves from one version, exactly one wins.
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.s.SaveHostState(ctx, "s", 1, []byte(fmt.Sprintf(`{"writer":%d}`, i)))
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both saved from version 1", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, canvas.ErrHeadMismatch):
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no concurrent save succeeded")
	}
	h.reopen(t)
	if v, data, err := h.s.LoadHostState(ctxT(t), "s"); err != nil || v != 2 || string(data) != fmt.Sprintf(`{"writer":%d}`, winner) {
		t.Fatalf("LoadHostState after reopen = %d, %q, %v; want 2 and writer %d's", v, data, err, winner)
	}
}

func testSharedSecret(t *testing.T, h *harness) {
	ctx := ctxT(t)
	_, err := h.s.SharedSecret(ctx, "k", nil)
	wantErr(t, "SharedSecret with an empty candidate", err, canvas.ErrInvalid)
	const n = 6
	got := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := h.s.SharedSecret(ctx, "k", []byte{byte(i + 1), 0, 0xff})
			if err != nil {
				t.Errorf("SharedSecret %d: %v", i, err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	for i := range got {
		if len(got[i]) != 3 || !bytes.Equal(got[i], got[0]) {
			t.Fatalf("concurrent first calls got different secrets: %v", got)
		}
	}
	if v, err := h.s.SharedSecret(ctx, "other", []byte("second")); err != nil || string(v) != "second" {
		t.Fatalf("SharedSecret(other) = %q, %v", v, err)
	}
	h.reopen(t)
	if v, err := h.s.SharedSecret(ctxT(t), "k", []byte("late")); err != nil || !bytes.Equal(v, got[0]) {
		t.Fatalf("SharedSecret after reopen = %v, %v; want %v", v, err, got[0])
	}
}
