package host

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

func newTicketHost(t testing.TB, key []byte, now *time.Time) *Host {
	t.Helper()
	return openHost(t, Config{TicketKey: key, Now: func() time.Time { return *now }})
}

func TestTicketRoundTripAndRefusals(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := newTicketHost(t, TicketKey("k"), &now)
	hash := sha256.Sum256([]byte("cvd_token"))
	tk, err := h.MintTicket("demo", hash[:])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Trim(tk, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") != "" {
		t.Fatalf("ticket %q has characters that need escaping in a path", tk)
	}
	got, err := h.VerifyTicket("demo", tk)
	if err != nil || got.Session != "demo" || !bytes.Equal(got.TokenHash, hash[:]) || !got.Expires.Equal(now.Add(DefaultTicketTTL)) {
		t.Fatalf("verify: %+v %v", got, err)
	}
	var te *TicketError
	if _, err := h.VerifyTicket("other", tk); !errors.As(err, &te) || te.Status != http.StatusForbidden || !errors.Is(err, canvas.ErrForbidden) {
		t.Fatalf("other session: %v", err)
	}
	// Another key (a random per-process one by default) does not verify it.
	if _, err := newTicketHost(t, nil, &now).VerifyTicket("demo", tk); !errors.As(err, &te) || te.Slug != "ticket-invalid" || !errors.Is(err, canvas.ErrUnauthorized) {
		t.Fatalf("random key: %v", err)
	}
	if _, err := newTicketHost(t, TicketKey("k"), &now).VerifyTicket("demo", tk); err != nil {
		t.Fatalf("same secret, another host: %v", err)
	}
	now = now.Add(DefaultTicketTTL)
	if _, err := h.VerifyTicket("demo", tk); !errors.As(err, &te) || te.Slug != "ticket-expired" {
		t.Fatalf("at expiry: %v", err)
	}
	if _, err := h.VerifyTicket("demo", paddingBitsFlipped(tk)); !errors.As(err, &te) || te.Slug != "ticket-malformed" {
		t.Fatalf("non-canonical base64: %v", err)
	}
	if _, err := h.MintTicket("../x", hash[:]); err == nil {
		t.Fatal("minted a ticket for a bad session name")
	}
	if _, err := h.MintTicket("demo", hash[:5]); err == nil {
		t.Fatal("minted a ticket for a short hash")
	}
}

// FuzzVerifyTicket: no input panics, and only a minted ticket verifies.
func FuzzVerifyTicket(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	h := newTicketHost(f, TicketKey("k"), &now)
	hash := sha256.Sum256([]byte("x"))
	good, _ := h.MintTicket("s", hash[:])
	for _, s := range []string{"", ".", "a.b", good, good[:len(good)-1], strings.Replace(good, ".", "", 1), "AQ.AQ", good + ".", paddingBitsFlipped(good)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := h.VerifyTicket("s", s); err == nil && s != good {
			// Strict base64url decoding makes the encoding canonical (no
			// non-zero padding bits): anything else verifying is a forgery.
			t.Fatalf("%q verified", s)
		}
	})
}

// paddingBitsFlipped changes the unused low bit of the ticket's last
// base64url character: the same bytes to a lenient decoder.
func paddingBitsFlipped(tk string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, tk[len(tk)-1])
	return tk[:len(tk)-1] + string(alphabet[i^1])
}
