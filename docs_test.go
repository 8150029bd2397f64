package canvasd

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestOperationsDocumentsEveryMetricAndVariable: every Prometheus metric the
// server registers (a `Name: "canvas_..."` in its Go source) and every
// environment variable it reads (CANVASD_*, CANVAS_AGENT_*, CANVAS_STEWARD_*
// and the model providers' variables, outside tests) is named in
// docs/operations.md.
func TestOperationsDocumentsEveryMetricAndVariable(t *testing.T) {
	ops, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	metric := regexp.MustCompile(`Name:\s*"(canvas_[a-z_]+)"`)
	variable := regexp.MustCompile(`"((?:CANVASD|CANVAS_AGENT|CANVAS_STEWARD|OPENAI|ANTHROPIC|GOOGLE|GEMINI)_[A-Z_]+)"`)
	seen := map[string]bool{}
	var metrics, variables int
	for _, f := range repoFiles(t) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || strings.Contains("/"+f, "/testdata/") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{metric, variable} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				name := m[1]
				if seen[name] {
					continue
				}
				seen[name] = true
				if re == metric {
					metrics++
				} else {
					variables++
				}
				if !strings.Contains(string(ops), "`"+name) {
					t.Errorf("%s (%s) is not documented in docs/operations.md", name, f)
				}
			}
		}
	}
	if metrics < 10 || variables < 20 {
		t.Fatalf("found only %d metrics and %d variables in the source: the patterns no longer match it", metrics, variables)
	}
}
