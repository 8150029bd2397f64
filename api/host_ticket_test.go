package api

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// testClock is an injectable clock for ticket expiry.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// navigate is what a browser sends when it opens a page.
var navigate = map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document",
	"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}

var ticketLocation = regexp.MustCompile(`^/host/([^/]+)/~([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)/([^?#]*)(\?[^#]*)?(#.*)?$`)

// openTicket opens /host/{session}/{path} with a token as a browser does and
// returns the ticket and the Location of the 303.
func (e *hostTestEnv) openTicket(target string, hdr map[string]string) (ticket, loc string) {
	e.t.Helper()
	status, h, body := e.raw("GET", target, hdr)
	loc = h.Get("Location")
	m := ticketLocation.FindStringSubmatch(loc)
	if status != http.StatusSeeOther || m == nil {
		e.t.Fatalf("GET %s: %d Location %q, want 303 to a ticket URL: %s", target, status, loc, body)
	}
	if strings.Contains(m[4], "access_token") {
		e.t.Fatalf("GET %s: the redirect keeps the token in the query: %q", target, loc)
	}
	if h.Get("Cache-Control") != "no-store" {
		e.t.Errorf("GET %s: redirect Cache-Control %q", target, h.Get("Cache-Control"))
	}
	return m[2], loc
}

// get sends a GET without following redirects and checks the answer against
// openapi.yaml.
func (e *hostTestEnv) get(target string, hdr map[string]string) (int, http.Header, string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+target, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := *e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	checkResponse(e.t, e.spec, req, resp, body)
	return resp.StatusCode, resp.Header, string(body)
}

// wantTicketProblem checks a refused ticket: status, problem type, a detail
// saying to reopen the page with a token.
func wantTicketProblem(t *testing.T, what string, status int, hdr http.Header, body string, code int, slug string) {
	t.Helper()
	var p map[string]any
	_ = json.Unmarshal([]byte(body), &p)
	if status != code || !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") ||
		p["type"] != problemBase+slug || !strings.Contains(p["detail"].(string), "reopen the page with a token") || p["reopen"] == nil {
		t.Errorf("%s: %d %s, want %d %s problem saying to reopen with a token", what, status, body, code, slug)
	}
}

func TestHostPageTickets(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	e := newHostTestEnv(t, host.Config{Now: clock.Now, TicketKey: host.TicketKey("shared secret")})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	viewer, viewerID := e.token(canvas.RoleViewer, canvas.ActorHuman, "site")
	outsider, _ := e.token(canvas.RoleViewer, canvas.ActorHuman, "other")
	index := `<!doctype html><link rel="stylesheet" href="style.css"><script src="app.js"></script><h1>site</h1>`
	e.must(201, "PUT", "/api/host/site/files/index.html", editor, index)
	e.must(201, "PUT", "/api/host/site/files/style.css", editor, "body { background: rgb(1, 2, 3) }")
	e.must(201, "PUT", "/api/host/site/files/app.js", editor, "document.title = 'ran'")
	e.must(201, "PUT", "/api/host/site/files/sub/page.html", editor, "<p>sub page</p>")
	e.must(201, "PUT", "/api/host/other/files/secret.txt", editor, "other session's secret")
	if r := e.do("PUT", "/api/host/site/files/~reserved.txt", editor, "x"); r.Status != 400 {
		t.Fatalf("PUT of a top-level ~ name: %d %s", r.Status, r.Body)
	}

	// A browser opening the page with ?access_token= is sent to the ticket URL,
	// the rest of the query kept; the ticket URL serves the page and its
	// relative assets without any token.
	// A page goes to the session's viewer, which shows it in its frame.
	ticket, loc := e.openTicket("/host/site/?b=2&access_token="+viewer+"&a=%20x", navigate)
	if want := "/host/site/~" + ticket + "/__canvas__/?page=" + url.QueryEscape("?b=2&a=%20x"); loc != want {
		t.Fatalf("Location %q, want %q", loc, want)
	}
	if len(ticket) > 200 {
		t.Errorf("ticket is %d characters", len(ticket))
	}
	base := "/host/site/~" + ticket + "/"
	status, hdr, body := e.get(loc, nil)
	if status != 200 || !strings.Contains(body, `content="site"`) || !strings.Contains(body, `name="canvasd-cap" content="`+host.CapPrefix) ||
		!strings.Contains(body, `name="canvasd-base" content="`+base+`"`) ||
		!strings.Contains(hdr.Get("Content-Security-Policy"), "frame-src http://") || !strings.Contains(hdr.Get("Content-Security-Policy"), "/host/site/;") ||
		hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("viewer: %d %q %v", status, body, hdr)
	}
	// In the viewer's frame the page is served with the runtime first; as a
	// top-level document it is sent to the viewer.
	frame := map[string]string{"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Mode": "navigate"}
	status, hdr, body = e.get(base+"?b=2", frame)
	if status != 200 || body != `<!doctype html><script src="/host/site/__canvas__/page.js"></script>`+index[len("<!doctype html>"):] ||
		!strings.HasPrefix(hdr.Get("Content-Security-Policy"), "sandbox allow-scripts") {
		t.Fatalf("ticket page in a frame: %d %q %v", status, body, hdr)
	}
	status, hdr, _ = e.get(base+"sub/page.html?x=1", navigate)
	if want := base + "__canvas__/?page=" + url.QueryEscape("sub/page.html?x=1"); status != 303 || hdr.Get("Location") != want {
		t.Fatalf("ticket page at the top level: %d %q, want 303 to %q", status, hdr.Get("Location"), want)
	}
	for _, c := range []struct{ path, body, ctype string }{
		{"style.css", "body { background: rgb(1, 2, 3) }", "text/css"},
		{"app.js", "document.title = 'ran'", "javascript"},
		{"sub/page.html", "<p>sub page</p>", "text/html"},
		{"index.html", index[len("<!doctype html>"):], "text/html"},
		{"__canvas__/page.js", "canvasd", "javascript"},
	} {
		status, hdr, body := e.get(base+c.path, nil)
		if status != 200 || !strings.Contains(body, c.body) || !strings.Contains(hdr.Get("Content-Type"), c.ctype) {
			t.Errorf("%s under the ticket: %d %q %q", c.path, status, hdr.Get("Content-Type"), body)
		}
	}
	// A bearer header works as the query does; a deep path keeps its path.
	_, loc = e.openTicket("/host/site/sub/page.html", map[string]string{"Authorization": "Bearer " + viewer, "Accept": "text/html"})
	if !strings.HasSuffix(loc, "/__canvas__/?page=sub%2Fpage.html") {
		t.Errorf("deep path redirect %q", loc)
	}
	// The ticket segment without its slash gets it, so relative URLs resolve under it.
	if status, hdr, _ := e.get("/host/site/~"+ticket, nil); status != 301 || hdr.Get("Location") != base {
		t.Errorf("ticket without slash: %d %q", status, hdr.Get("Location"))
	}
	// API clients (no navigation headers) still get the file itself.
	if status, _, body := e.get("/host/site/style.css?access_token="+viewer, map[string]string{"Accept": "*/*"}); status != 200 || !strings.Contains(body, "rgb(1, 2, 3)") {
		t.Errorf("API client with a token: %d %q", status, body)
	}
	// Wrong scope, no token, bad path: refused before any ticket is minted.
	if status, hdr, _ := e.raw("GET", "/host/site/?access_token="+outsider, navigate); status != 403 || hdr.Get("Location") != "" {
		t.Errorf("outsider: %d %q", status, hdr.Get("Location"))
	}
	if status, _, _ := e.raw("GET", "/host/site/", navigate); status != 401 {
		t.Errorf("no token: %d", status)
	}
	if status, _, _ := e.raw("GET", "/host/site/..%2f..%2fetc?access_token="+viewer, navigate); status != 400 {
		t.Errorf("hostile path with a token: %d", status)
	}

	// No token in any URL after the redirect: not in a fragment either (the
	// old shell got #access_token=...). A session without index.html shows
	// the A2UI page in the viewer's frame.
	all, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	fresh, loc := e.openTicket("/host/fresh/?access_token="+all, navigate)
	if want := "/host/fresh/~" + fresh + "/__canvas__/"; loc != want {
		t.Fatalf("viewer redirect %q, want %q", loc, want)
	}
	if status, hdr, body := e.get(loc, nil); status != 200 || !strings.Contains(body, `content="fresh"`) ||
		!strings.Contains(hdr.Get("Content-Security-Policy"), "script-src 'self'") || strings.Contains(body, all) {
		t.Errorf("viewer under the ticket: %d %q", status, body)
	}
	if status, _, body := e.get("/host/fresh/~"+fresh+"/", frame); status != 200 || !strings.Contains(body, `name="canvasd-a2ui"`) ||
		!strings.Contains(body, `/host/fresh/__canvas__/page.js`) {
		t.Errorf("the A2UI page in the frame: %d %q", status, body)
	}
	if _, loc := e.openTicket("/host/site/__canvas__/?access_token="+viewer, navigate); strings.Contains(loc, "#") || !strings.HasSuffix(loc, "/__canvas__/") {
		t.Errorf("explicit viewer redirect %q", loc)
	}
	if _, loc := e.openTicket("/host/site/style.css?access_token="+viewer, navigate); !strings.HasSuffix(loc, "/style.css") {
		t.Errorf("a file that is not a page: %q", loc)
	}

	// The ticket opens this session's files only: not another session, not /api, not /sse.
	status, hdr, body = e.get("/host/other/~"+ticket+"/secret.txt", nil)
	wantTicketProblem(t, "ticket on another session", status, hdr, body, 403, "ticket-session")
	for _, c := range []struct {
		target string
		hdr    map[string]string
	}{
		{"/api/host/site/files?access_token=" + ticket, nil},
		{"/api/host/site/files?access_token=~" + ticket, nil},
		{"/api/host/site/files", map[string]string{"Authorization": "Bearer " + ticket}},
		{"/sse/host/site?access_token=" + ticket, nil},
		{"/sse/host/site?access_token=" + url.QueryEscape("~"+ticket), nil},
		{"/api/canvases?access_token=" + ticket, nil},
	} {
		if status, _, body := e.get(c.target, c.hdr); status != 401 {
			t.Errorf("%s with the ticket: %d %s", c.target, status, body)
		}
	}
	if status, _, _ := e.raw("PUT", base+"x.txt", map[string]string{"Content-Length": "0"}); status != 405 {
		t.Errorf("PUT through the ticket path: %d", status)
	}
	if status, _, _ := e.raw("DELETE", base+"index.html", nil); status != 405 {
		t.Errorf("DELETE through the ticket path: %d", status)
	}

	// Tampered, forged, malformed tickets.
	payload, mac, _ := strings.Cut(ticket, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	otherSession := base64.RawURLEncoding.EncodeToString(append(append([]byte{}, raw[:len(raw)-len("site")]...), "othr"...))
	later := append([]byte{}, raw...)
	later[1]++ // expiry years later
	forger := newHost(t, e.st, host.Config{TicketKey: host.TicketKey("another secret"), Now: clock.Now})
	forged, err := forger.MintTicket("site", HashToken(viewer))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, ticket, slug string }{
		{"payload bit", flip(payload, 12) + "." + mac, "ticket-invalid"},
		{"mac bit", payload + "." + flip(mac, 5), "ticket-invalid"},
		{"session swapped", otherSession + "." + mac, "ticket-invalid"},
		{"expiry extended", base64.RawURLEncoding.EncodeToString(later) + "." + mac, "ticket-invalid"},
		{"another key", forged, "ticket-invalid"},
		{"empty", "", "ticket-malformed"},
		{"no signature", payload, "ticket-malformed"},
		{"not base64", "!!!." + mac, "ticket-malformed"},
		{"short mac", payload + "." + mac[:20], "ticket-malformed"},
		{"short payload", "AQ." + mac, "ticket-malformed"},
		{"huge", strings.Repeat("A", 600) + "." + mac, "ticket-malformed"},
	} {
		status, hdr, body := e.get("/host/site/~"+c.ticket+"/index.html", nil)
		wantTicketProblem(t, c.name, status, hdr, body, 401, c.slug)
		if !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: no WWW-Authenticate", c.name)
		}
	}
	// A process with the same secret accepts the ticket (several processes, one --host-secret).
	peer := newHost(t, e.st, host.Config{TicketKey: host.TicketKey("shared secret"), Now: clock.Now})
	fromPeer, err := peer.MintTicket("site", HashToken(viewer))
	if err != nil {
		t.Fatal(err)
	}
	if status, _, _ := e.get("/host/site/~"+fromPeer+"/style.css", nil); status != 200 {
		t.Errorf("ticket of a peer with the same secret: %d", status)
	}
	// A ticket whose token lacks the viewer role on the session (minted
	// directly; the redirect never mints one).
	stray, err := e.host.MintTicket("site", HashToken(outsider))
	if err != nil {
		t.Fatal(err)
	}
	status, hdr, body = e.get("/host/site/~"+stray+"/index.html", nil)
	wantTicketProblem(t, "ticket of a token without the role", status, hdr, body, 403, "ticket-forbidden")

	// Expiry: valid up to 12 h after minting, refused after.
	clock.advance(host.DefaultTicketTTL - time.Second)
	if status, _, _ := e.get(base+"app.js", nil); status != 200 {
		t.Errorf("ticket 1 s before expiry: %d", status)
	}
	clock.advance(time.Second)
	status, hdr, body = e.get(base+"app.js", nil)
	wantTicketProblem(t, "expired ticket", status, hdr, body, 401, "ticket-expired")
	// Reopening with the token mints a fresh one.
	ticket, _ = e.openTicket("/host/site/?access_token="+viewer, navigate)
	base = "/host/site/~" + ticket + "/"
	if status, _, _ := e.get(base+"app.js", nil); status != 200 {
		t.Fatalf("fresh ticket: %d", status)
	}

	// Traversal through the ticket path is refused like everywhere else.
	for _, p := range []string{"../../etc/passwd", "..%2f..%2fetc%2fpasswd", "%2e%2e/%2e%2e/etc/passwd", "%2e%2e/other/secret.txt",
		"../other/secret.txt", "sub/../../other/secret.txt", "%252e%252e%252f", "..%5c..%5cetc", "sub%2f..%2f..%2fother%2fsecret.txt",
		".a2ui-state.json", "__canvas__/%2e%2e/index.html", "sub//page.html", "%00", "~" + ticket + "/../../other/secret.txt"} {
		status, hdr, body := e.raw("GET", base+p, nil)
		if status != 400 && status != 404 || strings.Contains(body, "other session's secret") {
			t.Errorf("%s: %d %q", p, status, body)
		}
		if !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s: not a problem document: %q", p, hdr.Get("Content-Type"))
		}
	}
	if status, _, body := e.raw("GET", "/host/site/~"+ticket+"/..", nil); status == 200 {
		t.Errorf("/.. after the ticket: %d %q", status, body)
	}

	// Revoking the token ends its tickets at once.
	e.must(204, "DELETE", "/api/tokens/"+viewerID, testAdmin, nil)
	status, hdr, body = e.get(base+"index.html", nil)
	wantTicketProblem(t, "ticket of a revoked token", status, hdr, body, 401, "ticket-revoked")
	// The configured admin token (not in the store) mints working tickets too.
	admin, _ := e.openTicket("/host/site/?access_token="+testAdmin, navigate)
	if status, _, _ := e.get("/host/site/~"+admin+"/style.css", nil); status != 200 {
		t.Errorf("admin ticket: %d", status)
	}
}

func TestIsNavigationAndQueryFilter(t *testing.T) {
	for _, c := range []struct {
		hdr  map[string]string
		want bool
	}{
		{map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, true},
		{map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, true},
		{map[string]string{"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "object"}, true},
		{map[string]string{"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image", "Accept": "text/html"}, false},
		{map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, false},
		{map[string]string{"Accept": "text/html,*/*"}, true},
		{map[string]string{"Accept": "*/*"}, false},
		{nil, false},
	} {
		r, _ := http.NewRequest("GET", "/host/s/", nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if got := isNavigation(r); got != c.want {
			t.Errorf("isNavigation(%v) = %v", c.hdr, got)
		}
	}
	for in, want := range map[string]string{
		"": "", "access_token=x": "", "a=1&access_token=x&b=2": "a=1&b=2", "access%5Ftoken=x&c": "c",
		"a=1&&access_token=&access_token=y": "a=1", "x=access_token": "x=access_token",
	} {
		if got := withoutAccessToken(in); got != want {
			t.Errorf("withoutAccessToken(%q) = %q, want %q", in, got, want)
		}
	}
}
