package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestTokenCreateExpiresIn: `canvasd token create --expires-in` mints a
// token that expires; a bad duration is a usage error, one over ten years a
// refusal.
func TestTokenCreateExpiresIn(t *testing.T) {
	e := env(map[string]string{"CANVASD_DATA_DIR": t.TempDir()})
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"token", "create", "--role", "viewer", "--expires-in", "2h"}, e, &out, &errb); code != 0 {
		t.Fatalf("token create --expires-in 2h: %d %s", code, errb.String())
	}
	var grant struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(out.Bytes(), &grant); err != nil || time.Until(grant.ExpiresAt) < 119*time.Minute || time.Until(grant.ExpiresAt) > 2*time.Hour {
		t.Fatalf("expires_at of a 2h token: %v (%v): %s", grant.ExpiresAt, err, out.String())
	}
	for args, want := range map[string]int{"1.5s": 2, "-1h": 2, "87601h": 2} { // over the longest lifetime: a usage error too
		if code := run(context.Background(), []string{"token", "create", "--role", "viewer", "--expires-in", args}, e, &out, &errb); code != want {
			t.Errorf("--expires-in %s: exit %d, want %d", args, code, want)
		}
	}
}
