package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
	_ "github.com/canvasd/canvasd/store/sqlitestore" // sqlite: URLs
)

// TestOpenByURL: store.Open picks the backend by the URL's scheme, and an
// unknown scheme is refused without echoing the URL's password.
func TestOpenByURL(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "o.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if caps := st.Capabilities(); caps.Agents == nil || caps.Notifier != nil || caps.Broadcaster != nil || caps.OpTimeout != 0 {
		t.Errorf("the embedded store's capabilities: %+v", caps)
	}
	for _, u := range []string{"mysql://root:hunter2@db/x", "sqlite:", "/var/lib/canvasd.db", ""} {
		_, err := store.Open(ctx, u, store.OpenOptions{})
		if !errors.Is(err, canvas.ErrInvalid) {
			t.Errorf("Open(%q): %v, want an error wrapping canvas.ErrInvalid", u, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): the error shows the password: %v", u, err)
		}
	}
}
