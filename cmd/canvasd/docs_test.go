package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConfigurationTablesMatchTheFlags: the configuration tables of the
// README and docs/operations.md list every setting with its flag, its
// environment variable and its default, and no flag that does not exist.
func TestConfigurationTablesMatchTheFlags(t *testing.T) {
	known := map[string]bool{}
	for _, s := range settings() {
		known[s.flag] = true
	}
	flagCell := regexp.MustCompile("^\\| `--([a-z-]+)`")
	for _, doc := range []string{"README.md", filepath.Join("docs", "operations.md")} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, line := range strings.Split(string(b), "\n") {
			if m := flagCell.FindStringSubmatch(line); m != nil {
				rows = append(rows, line)
				if !known[m[1]] {
					t.Errorf("%s lists --%s, which is not a flag of canvasd", doc, m[1])
				}
			}
		}
		for _, s := range settings() {
			var row string
			for _, r := range rows {
				if strings.Contains(r, "`--"+s.flag+"`") {
					row = r
					break
				}
			}
			switch {
			case row == "":
				t.Errorf("%s: the configuration table has no row for --%s", doc, s.flag)
			case !strings.Contains(row, "`"+s.env+"`"):
				t.Errorf("%s: the row of --%s does not name its variable %s: %s", doc, s.flag, s.env, row)
			case s.def == "" && !strings.Contains(row, "empty"):
				t.Errorf("%s: the row of --%s does not say its default is empty: %s", doc, s.flag, row)
			case s.def != "" && !strings.Contains(row, "`"+s.def+"`"):
				t.Errorf("%s: the row of --%s does not give its default `%s`: %s", doc, s.flag, s.def, row)
			}
		}
	}
}
