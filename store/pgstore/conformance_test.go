package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/storetest"
)

// TestConformance runs the shared store suite against PostgreSQL, each
// subtest in a fresh schema dropped at cleanup.
func TestConformance(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	storetest.Run(t, func(t *testing.T) (store.Store, storetest.Reopen) {
		schema := newSchema(t, url)
		open := func(t *testing.T) store.Store {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, url, WithSchema(schema), WithLogger(quietLogger()))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}
		return open(t), open
	})
}
