package host

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// ticketServer serves /host/{session}/~{ticket}/{rest} as the API does once
// the ticket is verified.
func ticketServer(t *testing.T, h *Host) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, _ := strings.CutPrefix(r.URL.EscapedPath(), "/host/")
		session, sub, _ := strings.Cut(rest, "/")
		ticket, after, _, ok := SplitTicket(sub)
		if !ok {
			http.Error(w, "no ticket", 400)
			return
		}
		tk, err := h.VerifyTicket(session, ticket)
		if err == nil {
			err = h.ServeTicketPage(w, r, tk, ticket, after)
		}
		if err != nil {
			http.Error(w, err.Error(), statusFor(err))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

var (
	inFrame    = map[string]string{"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Mode": "navigate"}
	asDocument = map[string]string{"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"}
)

// TestTicketPagesShowInTheViewer: under a page ticket the viewer carries a
// capability of the ticket's token; an HTML page loaded at the top level is
// sent to the viewer, in a frame it is served with the runtime first; the
// session root without an index is the A2UI page; the session's sandboxed
// pages may read its files (CORS for Origin: null), other origins may not.
func TestTicketPagesShowInTheViewer(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	srv := ticketServer(t, h)
	hash := sha256.Sum256([]byte("cvd_token"))
	ticket, err := h.MintTicket("s1", hash[:])
	if err != nil {
		t.Fatal(err)
	}
	base := "/host/s1/~" + ticket + "/"

	resp, body := get(t, srv.URL+base+"__canvas__/", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(body, `content="`+base+`"`) {
		t.Fatalf("viewer: %d %q", resp.StatusCode, body)
	}
	cap := between(body, `name="canvasd-cap" content="`, `"`)
	c, err := h.VerifyCap(cap)
	if err != nil || c.Session != "s1" || string(c.TokenHash) != string(hash[:]) {
		t.Fatalf("the viewer's capability %q: %+v %v", cap, c, err)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-src http://"+strings.TrimPrefix(srv.URL, "http://")+"/host/s1/;") {
		t.Errorf("viewer CSP %q: frames must stay in the session", csp)
	}

	// Pages: to the viewer at the top level, with the runtime in a frame.
	resp, _ = get(t, srv.URL+base+"index.html?x=1", asDocument)
	if want := base + "__canvas__/?page=" + url.QueryEscape("index.html?x=1"); resp.StatusCode != 303 || resp.Header.Get("Location") != want {
		t.Fatalf("top-level page: %d %q, want %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	resp, _ = get(t, srv.URL+base, asDocument)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != base+"__canvas__/" {
		t.Fatalf("top-level root: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, body = get(t, srv.URL+base+"index.html", inFrame)
	if body != `<script src="/host/s1/__canvas__/page.js"></script><h1>s1 index</h1>` {
		t.Fatalf("page in a frame: %q", body)
	}
	_, body = get(t, srv.URL+base+"app.js", asDocument) // not a page: served as stored
	if body != "console.log(1)" {
		t.Fatalf("script at the top level: %q", body)
	}
	// The root of a session without an index is the A2UI page, with the runtime.
	ticket2, _ := h.MintTicket("empty", hash[:])
	resp, body = get(t, srv.URL+"/host/empty/~"+ticket2+"/", inFrame)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, `<!doctype html><script src="/host/empty/__canvas__/page.js"></script><meta name="canvasd-a2ui"`) ||
		resp.Header.Get("Content-Security-Policy") != PageCSP {
		t.Fatalf("A2UI page: %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Security-Policy"))
	}

	// CORS: the session's own (opaque-origin) pages read its files; others do not.
	resp, _ = get(t, srv.URL+base+"app.js", map[string]string{"Origin": "null"})
	if resp.Header.Get("Access-Control-Allow-Origin") != "null" {
		t.Errorf("Origin null: ACAO %q", resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp, _ = get(t, srv.URL+base+"app.js", map[string]string{"Origin": "https://evil.example"})
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin got ACAO %q", resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

// TestAgentLinksRewrittenInTheViewer: canvasd://agent in the session's
// HTML and scripts served in the viewer becomes the session's agent-link
// page under the ticket (where the runtime sees it); other files, and files
// read with a token, are served as stored.
func TestAgentLinksRewrittenInTheViewer(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	srv := ticketServer(t, h)
	for p, body := range map[string]string{
		"go.html": `<a href="canvasd://agent?message=hi">hi</a>`,
		"go.js":   `location.href = "canvasd://agent?message=" + m;`,
		"go.css":  `/* canvasd://agent */`,
	} {
		if _, err := h.PutFile(ctx, "s1", p, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	hash := sha256.Sum256([]byte("cvd_token"))
	ticket, _ := h.MintTicket("s1", hash[:])
	base := "/host/s1/~" + ticket + "/"
	link := base + "__canvas__/agent.html"
	for p, want := range map[string]string{
		"go.html": `<script src="/host/s1/__canvas__/page.js"></script><a href="` + link + `?message=hi">hi</a>`,
		"go.js":   `location.href = "` + link + `?message=" + m;`,
		"go.css":  `/* canvasd://agent */`,
	} {
		if _, body := get(t, srv.URL+base+p, inFrame); body != want {
			t.Errorf("%s in the viewer: %q, want %q", p, body, want)
		}
	}
	if _, body := get(t, pageServer(t, h).URL+"/host/s1/go.js", nil); body != `location.href = "canvasd://agent?message=" + m;` {
		t.Errorf("go.js read with a token: %q", body)
	}
	// The agent-link page itself, with the runtime, only under a ticket.
	if resp, body := get(t, srv.URL+link+"?message=hi", inFrame); resp.StatusCode != 200 ||
		body != `<!doctype html><script src="/host/s1/__canvas__/page.js"></script><p>passing the link on</p>` {
		t.Errorf("agent-link page: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, pageServer(t, h).URL+"/host/s1/__canvas__/agent.html", nil); resp.StatusCode != 404 {
		t.Errorf("agent-link page outside a viewer: %d", resp.StatusCode)
	}
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}

func TestInjectRuntime(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	tag := `<script src="/host/s/__canvas__/page.js"></script>`
	for in, want := range map[string]string{
		"<!doctype html><p>x":                     "<!doctype html>" + tag + "<p>x",
		"<!DOCTYPE HTML PUBLIC \"x\">\n<p>":       "<!DOCTYPE HTML PUBLIC \"x\">" + tag + "\n<p>",
		"\ufeff  <!-- hi -->\n<!doctype html><p>": "\ufeff  <!-- hi -->\n<!doctype html>" + tag + "<p>",
		"<p>no doctype":                           tag + "<p>no doctype",
		"\ufeff<p>bom only":                       "\ufeff" + tag + "<p>bom only",
		"":                                        tag,
		"<html><!doctype html>":                   tag + "<html><!doctype html>",
	} {
		if got := string(h.injectRuntime([]byte(in), "s")); got != want {
			t.Errorf("injectRuntime(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBridgeCapabilities(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return clock }
	h := openHost(t, Config{TicketKey: TicketKey("one"), Now: now})
	other := openHost(t, Config{TicketKey: TicketKey("two"), Now: now})
	hash := sha256.Sum256([]byte("cvd_x"))
	c, err := h.MintCap("sess", hash[:], clock.Add(time.Hour))
	if err != nil || !IsCap(c) {
		t.Fatalf("MintCap: %q %v", c, err)
	}
	got, err := h.VerifyCap(c)
	if err != nil || got.Session != "sess" || !got.Expires.Equal(clock.Add(time.Hour)) {
		t.Fatalf("VerifyCap: %+v %v", got, err)
	}
	// A ticket is not a capability and a capability is not a ticket.
	ticket, _ := h.MintTicket("sess", hash[:])
	if _, err := h.VerifyCap(CapPrefix + ticket); !errors.Is(err, canvas.ErrUnauthorized) {
		t.Errorf("a ticket passed as a capability: %v", err)
	}
	if _, err := h.VerifyTicket("sess", strings.TrimPrefix(c, CapPrefix)); err == nil {
		t.Error("a capability passed as a ticket")
	}
	payload, mac, _ := strings.Cut(strings.TrimPrefix(c, CapPrefix), ".")
	for name, bad := range map[string]string{
		"another key":  mustCap(t, other, hash[:], clock.Add(time.Hour)),
		"no prefix":    strings.TrimPrefix(c, CapPrefix),
		"mac altered":  CapPrefix + payload + "." + strings.Repeat("A", len(mac)),
		"payload cut":  CapPrefix + payload[:len(payload)-4] + "." + mac,
		"empty":        CapPrefix,
		"huge":         CapPrefix + strings.Repeat("A", 600) + "." + mac,
		"not base64":   CapPrefix + "!!." + mac,
		"no signature": CapPrefix + payload,
	} {
		if _, err := h.VerifyCap(bad); !errors.Is(err, canvas.ErrUnauthorized) {
			t.Errorf("%s: %v", name, err)
		}
	}
	clock = clock.Add(time.Hour)
	if _, err := h.VerifyCap(c); !errors.Is(err, canvas.ErrUnauthorized) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
}

func mustCap(t *testing.T, h *Host, hash []byte, exp time.Time) string {
	t.Helper()
	c, err := h.MintCap("sess", hash, exp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLinkKeys(t *testing.T) {
	h := openHost(t, Config{TicketKey: TicketKey("one")})
	same := openHost(t, Config{TicketKey: TicketKey("one")})
	other := openHost(t, Config{TicketKey: TicketKey("two")})
	k := h.LinkKey("s")
	if len(k) < 20 || !same.CheckLinkKey("s", k) || h.CheckLinkKey("t", k) || other.CheckLinkKey("s", k) || h.CheckLinkKey("s", "") || h.CheckLinkKey("s", k+"x") {
		t.Fatalf("link key %q checks wrongly", k)
	}
}

func TestValidateHostAction(t *testing.T) {
	for _, c := range []struct {
		action, payload, field string // field "": valid
	}{
		{"eval", `{"js":"1+1"}`, ""},
		{"eval", `{}`, "payload.js"},
		{"eval", `{"js":""}`, "payload.js"},
		{"eval", `{"js":1}`, "payload"},
		{"eval", `{"js":"x","selector":"a"}`, "payload.selector"},
		{"eval", `"1+1"`, "payload"},
		{"dom.query", `{"selector":"#a"}`, ""},
		{"dom.query", `{}`, "payload.selector"},
		{"dom.query", `{"selector":"` + strings.Repeat("a", MaxSelector+1) + `"}`, "payload.selector"},
		{"dom.all", `{"selector":"li","limit":5}`, ""},
		{"dom.all", `{"selector":"li","limit":0}`, "payload.limit"},
		{"dom.attr", `{"selector":"a","name":"href"}`, ""},
		{"dom.attr", `{"selector":"a"}`, "payload.name"},
		{"dom.click", `{"selector":"a"}`, ""},
		{"dom.click", `{"selector":"a","text":"x"}`, "payload.text"},
		{"dom.type", `{"selector":"input","text":""}`, ""},
		{"dom.type", `{"selector":"input"}`, "payload.text"},
		{"dom.type", `{"selector":"input","text":"x","clear":true}`, ""},
		{"dom.wait", `{"selector":"a","timeout_ms":500}`, ""},
		{"dom.wait", `{"selector":"a","timeout_ms":-1}`, "payload.timeout_ms"},
		{"dom.wait", `{"selector":"a","timeout_ms":999999999}`, "payload.timeout_ms"},
		{"snapshot", ``, ""},
		{"snapshot", `null`, ""},
		{"snapshot", `{"max_w":800,"max_h":600}`, ""},
		{"snapshot", `{"max_w":0}`, "payload.max_w"},
		{"snapshot", `{"max_h":100000}`, "payload.max_h"},
		{"snapshot", `{"js":"x"}`, "payload.js"},
		{"my.own", `{"anything":[1,2]}`, ""},
	} {
		err := ValidateHostAction(c.action, json.RawMessage(c.payload))
		var fe *canvas.FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s %s: %v", c.action, c.payload, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, canvas.ErrUnprocessable)):
			t.Errorf("%s %s: %v, want a 422 naming %s", c.action, c.payload, err, c.field)
		}
	}
}
