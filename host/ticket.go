package host

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Page tickets let a browser load one session's files without the API token
// in the page's URL. A request with a token (viewer role) is redirected to
// /host/{session}/~{ticket}/{path}; relative URLs in the page then carry the
// ticket, and agent-written scripts, which can read location, never see the
// token. A ticket is self-verifying:
//
//	base64url(version 1 | expiry unix seconds, 8 bytes big-endian | SHA-256 of the token | session)
//	"." base64url(HMAC-SHA256(key, "canvasd page ticket\x00" | the same bytes))
//
// It grants GET of that session's files and its viewer, nothing else:
// the API's authenticator never accepts it. The token's hash lets the server
// check, on every request, that the token still exists and still has the
// viewer role on the session, so revoking a token ends its tickets at once.
// (The hash is not a secret: it is what the store keeps, and it cannot be
// turned back into the token.)

// TicketPrefix starts the first path segment after /host/{session}/ that
// carries a page ticket. The file API refuses top-level names starting with it.
const TicketPrefix = "~"

// DefaultTicketTTL is how long a page ticket is valid when Config.TicketTTL is zero.
const DefaultTicketTTL = 12 * time.Hour

const (
	ticketVersion   = 1
	ticketMACDomain = "canvasd page ticket\x00"
	ticketFixedLen  = 1 + 8 + sha256.Size // version, expiry, token hash
	maxTicketLen    = 512                 // characters of the path segment after "~"
)

// TicketKey derives a page-ticket HMAC key from a secret (the --host-secret
// setting, or the admin token). Processes given the same secret derive the
// same key and so accept each other's tickets.
func TicketKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("canvasd host page ticket key v1"))
	return m.Sum(nil)
}

// randomTicketKey is the candidate for the shared key kept in the store
// (Config.TicketKey empty): the first process to need a key stores its own.
func randomTicketKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return k
}

// Ticket is a verified page ticket.
type Ticket struct {
	Session   string
	Expires   time.Time
	TokenHash []byte // SHA-256 of the API token the ticket was minted for
}

// TicketError is a refused page ticket: 401 (malformed, forged or expired:
// reopen the page with a token) or 403 (a ticket of another session, or a
// token that no longer has the viewer role on it). It wraps
// canvas.ErrUnauthorized or canvas.ErrForbidden and implements the API's
// TypedProblem contract.
type TicketError struct {
	Status  int    // 401 or 403
	Slug    string // problem type: ticket-malformed, ticket-invalid, ticket-expired, ticket-session, ticket-revoked, ticket-forbidden
	Reason  string // what is wrong
	Session string // the session of the request URL
}

func (e *TicketError) Error() string {
	return fmt.Sprintf("page ticket: %s; reopen the page with a token (/host/%s/?access_token=<token>, viewer role on the session) to get a new ticket",
		e.Reason, e.Session)
}

// Unwrap returns canvas.ErrForbidden for 403, canvas.ErrUnauthorized otherwise.
func (e *TicketError) Unwrap() error {
	if e.Status == http.StatusForbidden {
		return canvas.ErrForbidden
	}
	return canvas.ErrUnauthorized
}

// ProblemStatus is 401 or 403.
func (e *TicketError) ProblemStatus() int { return e.Status }

// ProblemSlug names the problem type.
func (e *TicketError) ProblemSlug() string { return e.Slug }

// ProblemExtra carries "reopen", the URL to open with a token.
func (e *TicketError) ProblemExtra() map[string]any {
	return map[string]any{"reopen": "/host/" + e.Session + "/?access_token=<token>"}
}

func ticketErr(status int, slug, session, format string, args ...any) *TicketError {
	return &TicketError{Status: status, Slug: slug, Reason: fmt.Sprintf(format, args...), Session: session}
}

// TicketTTL returns how long the tickets this host mints are valid.
func (h *Host) TicketTTL() time.Duration { return h.cfg.TicketTTL }

// MintTicket returns a page ticket (without the "~" prefix) for session,
// bound to the API token whose SHA-256 is tokenHash, valid for
// Config.TicketTTL from now. The caller has checked the token's viewer role
// on the session.
func (h *Host) MintTicket(session string, tokenHash []byte) (string, error) {
	if err := ValidateSession(session); err != nil {
		return "", err
	}
	if len(tokenHash) != sha256.Size {
		return "", fmt.Errorf("host: mint ticket: token hash has %d bytes, want %d", len(tokenHash), sha256.Size)
	}
	payload := make([]byte, 0, ticketFixedLen+len(session))
	payload = append(payload, ticketVersion)
	payload = binary.BigEndian.AppendUint64(payload, uint64(h.cfg.Now().Add(h.cfg.TicketTTL).Unix()))
	payload = append(payload, tokenHash...)
	payload = append(payload, session...)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(h.ticketMAC(payload)), nil
}

func (h *Host) ticketMAC(payload []byte) []byte { return h.mac(ticketMACDomain, payload) }

// VerifyTicket checks a page ticket (without the "~" prefix) presented on a
// URL of session: well formed, its MAC (compared in constant time), not
// expired, and minted for this session. Errors are *TicketError.
func (h *Host) VerifyTicket(session, ticket string) (Ticket, error) {
	malformed := func(why string) (Ticket, error) {
		return Ticket{}, ticketErr(http.StatusUnauthorized, "ticket-malformed", session, "the ticket in the URL is malformed (%s)", why)
	}
	if len(ticket) > maxTicketLen {
		return malformed("too long")
	}
	p64, m64, ok := strings.Cut(ticket, ".")
	if !ok {
		return malformed("no signature")
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(p64)
	if err != nil {
		return malformed("bad base64url")
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(m64)
	if err != nil || len(mac) != sha256.Size {
		return malformed("bad signature encoding")
	}
	if len(payload) <= ticketFixedLen || payload[0] != ticketVersion {
		return malformed("unknown version or too short")
	}
	if !hmac.Equal(mac, h.ticketMAC(payload)) {
		return Ticket{}, ticketErr(http.StatusUnauthorized, "ticket-invalid", session,
			"the ticket's signature does not verify (altered, or minted by a server with another --host-secret)")
	}
	t := Ticket{
		Expires:   time.Unix(int64(binary.BigEndian.Uint64(payload[1:9])), 0).UTC(),
		TokenHash: payload[9:ticketFixedLen],
		Session:   string(payload[ticketFixedLen:]),
	}
	if !h.cfg.Now().Before(t.Expires) {
		return Ticket{}, ticketErr(http.StatusUnauthorized, "ticket-expired", session, "the ticket expired at %s", t.Expires.Format(time.RFC3339))
	}
	if t.Session != session {
		return Ticket{}, ticketErr(http.StatusForbidden, "ticket-session", session,
			"the ticket was issued for host session %q, not %q", t.Session, session)
	}
	return t, nil
}

// RevokedTicketError is the refusal of a ticket whose token no longer exists
// or has expired (401).
func RevokedTicketError(session string) error {
	return ticketErr(http.StatusUnauthorized, "ticket-revoked", session, "the token this page was opened with has been revoked or has expired")
}

// ForbiddenTicketError is the refusal of a ticket whose token no longer has
// the viewer role on the session (403).
func ForbiddenTicketError(session string) error {
	return ticketErr(http.StatusForbidden, "ticket-forbidden", session,
		"the token this page was opened with no longer has the viewer role on host session %q", session)
}

// SplitTicket splits the still-escaped path after /host/{session}/ into a
// ticket (without "~") and the escaped rest after it, when the first segment
// is a ticket segment. hasSlash reports whether a "/" follows the ticket.
func SplitTicket(escaped string) (ticket, rest string, hasSlash, ok bool) {
	seg, rest, hasSlash := strings.Cut(escaped, "/")
	if !strings.HasPrefix(seg, TicketPrefix) {
		return "", "", false, false
	}
	return strings.TrimPrefix(seg, TicketPrefix), rest, hasSlash, true
}

// Bridge capabilities. The viewer of a session (served under a page
// ticket) carries one in its HTML, never in a URL, and sends it as a bearer
// token; it opens exactly this: the session's stream (GET
// /sse/host/{session}), its messages, userActions and agent links (POST
// /api/host/{session}/messages, /actions, /agent-link) and the answers to
// invokes sent to the session (POST /api/invoke/{invoke_id}). It is minted
// from a verified ticket and has its form, under another MAC domain and
// after CapPrefix:
//
//	CapPrefix base64url(version 1 | expiry | SHA-256 of the token | session) "." base64url(HMAC)
//
// so the same checks hold: unforgeable, expiring with the ticket, and worth
// nothing once its token is revoked or loses its role on the session (the
// API checks the token behind it on every request, with the role each
// route needs). Pages in the viewer's frame run in an opaque origin and
// cannot read it; their bridge calls are made by the viewer.

// CapPrefix starts every bridge capability.
const CapPrefix = "cvdcap_"

const capMACDomain = "canvasd bridge capability\x00"

// Cap is a verified bridge capability.
type Cap struct {
	Session   string
	Expires   time.Time
	TokenHash []byte
}

// IsCap reports whether a bearer token is a bridge capability (by its
// prefix; VerifyCap checks it).
func IsCap(token string) bool { return strings.HasPrefix(token, CapPrefix) }

// MintCap returns the bridge capability of session for the token whose
// SHA-256 is tokenHash, expiring at expires (the ticket's expiry).
func (h *Host) MintCap(session string, tokenHash []byte, expires time.Time) (string, error) {
	if err := ValidateSession(session); err != nil {
		return "", err
	}
	if len(tokenHash) != sha256.Size {
		return "", fmt.Errorf("host: mint capability: token hash has %d bytes, want %d", len(tokenHash), sha256.Size)
	}
	payload := make([]byte, 0, ticketFixedLen+len(session))
	payload = append(payload, ticketVersion)
	payload = binary.BigEndian.AppendUint64(payload, uint64(expires.Unix()))
	payload = append(payload, tokenHash...)
	payload = append(payload, session...)
	return CapPrefix + base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(h.mac(capMACDomain, payload)), nil
}

// VerifyCap checks a bridge capability: well formed, its MAC (constant
// time), not expired. The caller checks the session it names against the
// route's and the token behind it. Errors wrap canvas.ErrUnauthorized.
func (h *Host) VerifyCap(c string) (Cap, error) {
	bad := func(why string) (Cap, error) {
		return Cap{}, fmt.Errorf("%w: the page's capability is %s; reload the page (or reopen /host/{session}/ with a token)", canvas.ErrUnauthorized, why)
	}
	raw, ok := strings.CutPrefix(c, CapPrefix)
	if !ok || len(raw) > maxTicketLen {
		return bad("malformed")
	}
	p64, m64, ok := strings.Cut(raw, ".")
	if !ok {
		return bad("malformed")
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(p64)
	if err != nil || len(payload) <= ticketFixedLen || payload[0] != ticketVersion {
		return bad("malformed")
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(m64)
	if err != nil || !hmac.Equal(mac, h.mac(capMACDomain, payload)) {
		return bad("not valid (altered, or minted by a server with another --host-secret)")
	}
	out := Cap{
		Expires:   time.Unix(int64(binary.BigEndian.Uint64(payload[1:9])), 0).UTC(),
		TokenHash: payload[9:ticketFixedLen],
		Session:   string(payload[ticketFixedLen:]),
	}
	if !h.cfg.Now().Before(out.Expires) {
		return bad("expired")
	}
	if ValidateSession(out.Session) != nil {
		return bad("malformed")
	}
	return out, nil
}

// mac is HMAC-SHA256 of domain | payload under the ticket key.
func (h *Host) mac(domain string, payload []byte) []byte {
	m := hmac.New(sha256.New, h.cfg.TicketKey)
	m.Write([]byte(domain))
	m.Write(payload)
	return m.Sum(nil)
}

// LinkKey returns the key of session's agent links: a canvasd://agent link
// in one of its pages that carries it (&key=...) starts a run without
// asking the person first. It is an HMAC of the session under the ticket
// key, so every process sharing the key agrees and it cannot be guessed.
func (h *Host) LinkKey(session string) string {
	return base64.RawURLEncoding.EncodeToString(h.mac(linkKeyDomain, []byte(session))[:18])
}

// CheckLinkKey reports, in constant time, whether key is session's link key.
func (h *Host) CheckLinkKey(session, key string) bool {
	return hmac.Equal([]byte(key), []byte(h.LinkKey(session)))
}

const linkKeyDomain = "canvasd agent link key\x00"
