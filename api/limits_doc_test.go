package api

import (
	"fmt"
	"os"
	"strings"
	"testing"

	canvasd "github.com/canvasd/canvasd"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/convert"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/render"
	"github.com/canvasd/canvasd/store/pgstore"
)

// TestDocumentedLimits: the limits and timeouts docs/api.md (its Limits
// table), openapi.yaml and the README state are the ones in the code: a
// changed constant fails here until the documents say the new value.
func TestDocumentedLimits(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	apiMD := read("../docs/api.md")
	i := strings.Index(apiMD, "## Limits")
	if i < 0 {
		t.Fatal("docs/api.md has no Limits section")
	}
	const apiMDLimits, spec, readme = "docs/api.md#limits", "openapi.yaml", "README.md"
	docs := map[string]string{apiMDLimits: apiMD[i:], spec: string(canvasd.Spec), readme: read("../README.md")}
	mib := func(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
	secs := func(d interface{ Seconds() float64 }) string { return fmt.Sprintf("%g s", d.Seconds()) }
	if maxBatch != 1000 {
		t.Fatalf("maxBatch is %d: update this test and the documents", maxBatch)
	}
	for _, c := range []struct {
		what, text string
		in         []string
	}{
		{"JSON depth", fmt.Sprintf("%d levels", canvas.MaxJSONDepth), []string{apiMDLimits, spec, readme}},
		{"batch size", "1,000", []string{apiMDLimits}},
		{"id length", fmt.Sprintf("1 to %d characters", canvas.MaxIDLen), []string{apiMDLimits, spec}},
		{"idempotency key length", fmt.Sprintf("%d characters", canvas.MaxIdempotencyKeyLen), []string{apiMDLimits, spec}},
		{"token lifetime", fmt.Sprint(canvas.MaxTokenLifetime), []string{spec}},
		{"host file size", mib(host.DefaultMaxFileBytes), []string{apiMDLimits, spec, readme}},
		{"A2UI push", mib(host.DefaultMaxA2UIBytes), []string{apiMDLimits, spec}},
		{"invoke body", mib(maxInvokeBody), []string{apiMDLimits, spec, readme}},
		{"SSE write timeout", secs(sseWriteTimeout), []string{apiMDLimits, spec, readme}},
		{"PostgreSQL operation timeout", secs(pgstore.DefaultOpTimeout), []string{apiMDLimits, spec, readme}},
		{"message prompt", fmt.Sprintf("%d KiB", host.MaxPromptBytes>>10), []string{apiMDLimits}},
		{"revert revisions", fmt.Sprintf("%s revisions", thousands(reducer.MaxRevertRevs)), []string{apiMDLimits, spec}},
		{"revert span", fmt.Sprintf("%s commits", thousands(reducer.MaxRevertSpan)), []string{apiMDLimits, spec}},
		{"import body", mib(maxImportBody), []string{apiMDLimits, spec}},
		{"import objects", fmt.Sprintf("%s nodes and edges", thousands(convert.MaxObjects)), []string{apiMDLimits, spec}},
		{"picture side", fmt.Sprintf("%s pixels a side", thousands(render.MaxSide)), []string{apiMDLimits, spec}},
		{"picture pixels", thousands(render.MaxPixels), []string{apiMDLimits, spec}},
	} {
		for _, name := range c.in {
			if !strings.Contains(docs[name], c.text) {
				t.Errorf("%s: %s does not say %q", c.what, name, c.text)
			}
		}
	}
}

// thousands writes n with commas between groups of three digits, as the
// documents do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
