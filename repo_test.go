package canvasd

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoFiles lists the repository's files: the tracked ones in a git
// checkout, otherwise every file below the root but .git and node_modules.
func repoFiles(t *testing.T) []string {
	t.Helper()
	if out, err := exec.Command("git", "ls-files", "-z").Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			if _, err := os.Stat(f); err == nil { // deleted but not yet committed
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// outside matches references to documents that are not in the repository:
// the design notes it was first written from. The repository stands alone:
// README.md, docs/ and openapi.yaml say everything, in their own words.
var outside = regexp.MustCompile(`\.\./shared|shared/(API|DESIGN|seeds)|\bAPI\.md|\bDESIGN\.md|\b[0-9]{3}_[0-9a-f]{16}\b|\b[Ss]eeds? 00[0-9]\b`)

// mayReferOutside reports whether b may hold a match of outside: it looks
// for what each of outside's alternatives cannot match without (a literal,
// or three digits, "_" and a hex digit), so that the regexp, slow under the
// race detector (a minute for the repository), reads only the few files
// that may match.
func mayReferOutside(b []byte) bool {
	for _, lit := range []string{"../" + "shared", "shared/", "API" + ".md", "DESIGN" + ".md", "eed 00", "eeds 00"} {
		if bytes.Contains(b, []byte(lit)) {
			return true
		}
	}
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	for i := bytes.IndexByte(b, '_'); i >= 0; {
		if i >= 3 && isDigit(b[i-1]) && isDigit(b[i-2]) && isDigit(b[i-3]) && i+1 < len(b) && (isDigit(b[i+1]) || 'a' <= b[i+1] && b[i+1] <= 'f') {
			return true
		}
		next := bytes.IndexByte(b[i+1:], '_')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

func TestNoReferencesOutsideTheRepo(t *testing.T) {
	// The filter lets through every kind of reference outside matches.
	for _, ref := range []string{"../" + "shared/x", "see shared/" + "DESIGN", "API" + ".md", "in DESIGN" + ".md", "x 123_" + "0123456789abcdef y", "Seed " + "003", "seeds " + "001"} {
		if !outside.MatchString(ref) || !mayReferOutside([]byte(ref)) {
			t.Fatalf("%q: outside matches %v, mayReferOutside %v; want both", ref, outside.MatchString(ref), mayReferOutside([]byte(ref)))
		}
	}
	for _, f := range repoFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 || !mayReferOutside(b) {
			continue // binary, or nothing outside could match
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<24)
		for n := 1; sc.Scan(); n++ {
			if m := outside.FindString(sc.Text()); m != "" {
				t.Errorf("%s:%d refers to %q, which is not in the repository; point to docs/ or openapi.yaml instead", f, n, m)
			}
		}
	}
}

// layers says which of the module's packages each package may import
// (docs/architecture.md explains why). Test files may import more.
var layers = map[string][]string{
	"":                         {},
	"canvas":                   {},
	"reducer":                  {"canvas"},
	"store":                    {"canvas", "reducer"},
	"store/storetest":          {"canvas", "store"},
	"store/sqlitestore":        {"canvas", "migrations", "store"},
	"store/pgstore":            {"canvas", "migrations", "store"},
	"store/pgstore/faultproxy": {},
	"migrations":               {},
	"client":                   {"canvas"},
	"agent":                    {"canvas", "client"},
	"agent/providertest":       {},
	"internal/testwait":        {},
	"internal/testchrome":      {},
	"host":                     {"canvas"},
	"render":                   {"canvas"},
	"convert":                  {"canvas", "render"},
	"web":                      {},
	"hub":                      {"canvas", "store"},
	"api":                      {"agent", "canvas", "convert", "host", "hub", "reducer", "render", "store", "web"},
	"cmd/canvasd":              nil, // everything
}

const module = "github.com/canvasd/canvasd"

func TestPackageLayering(t *testing.T) {
	dirs := map[string]bool{}
	for _, f := range repoFiles(t) {
		// testdata holds programs the tests build, outside the module's packages.
		if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") && !strings.Contains("/"+f, "/testdata/") {
			dirs[path.Dir(f)] = true
		}
	}
	for dir := range dirs {
		pkg := strings.TrimPrefix(dir, ".")
		allowed, known := layers[pkg]
		if !known {
			t.Errorf("package %q is not in the layering table of repo_test.go: add it there and to docs/architecture.md", dir)
			continue
		}
		if pkg == "cmd/canvasd" {
			continue
		}
		fset := token.NewFileSet()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if p != module && !strings.HasPrefix(p, module+"/") {
					continue
				}
				dep := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
				if !slices.Contains(allowed, dep) {
					t.Errorf("%s/%s imports %s; package %q may import only %v of this module", dir, name, p, pkg, allowed)
				}
			}
		}
	}
}
