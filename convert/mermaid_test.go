package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// checkLayout checks a laid-out chart: no two nodes overlap (a frame holds
// its own nodes and overlaps no other), and every link of an acyclic chart
// runs the declared direction.
func checkLayout(t *testing.T, name string, sc *Scene, dir string) {
	t.Helper()
	byID := map[string]*canvas.Node{}
	for _, n := range sc.Nodes {
		byID[n.ID] = n
	}
	within := func(n, f *canvas.Node) bool {
		return n.X >= f.X-0.5 && n.Y >= f.Y-0.5 && n.X+n.W <= f.X+f.W+0.5 && n.Y+n.H <= f.Y+f.H+0.5
	}
	inFrame := func(n *canvas.Node, f string) bool {
		for p := byID[n.ParentID]; p != nil; p = byID[p.ParentID] {
			if p.ID == f {
				return true
			}
		}
		return false
	}
	overlap := func(a, b *canvas.Node) bool {
		return a.X < b.X+b.W-0.5 && b.X < a.X+a.W-0.5 && a.Y < b.Y+b.H-0.5 && b.Y < a.Y+a.H-0.5
	}
	for i, a := range sc.Nodes {
		if a.Type == "frame" {
			for _, n := range sc.Nodes {
				if n != a && inFrame(n, a.ID) && !within(n, a) {
					t.Errorf("%s: %s is in frame %s but outside its box", name, n.ID, a.ID)
				}
			}
		}
		for _, b := range sc.Nodes[i+1:] {
			if !overlap(a, b) {
				continue
			}
			if (a.Type == "frame" && inFrame(b, a.ID)) || (b.Type == "frame" && inFrame(a, b.ID)) {
				continue
			}
			t.Errorf("%s: %s (%g,%g %gx%g) overlaps %s (%g,%g %gx%g)", name, a.ID, a.X, a.Y, a.W, a.H, b.ID, b.X, b.Y, b.W, b.H)
		}
	}
	// Directions: only for charts without cycles (dot turns a cycle's back link).
	next := map[string][]string{}
	for _, e := range sc.Edges {
		next[e.From] = append(next[e.From], e.To)
	}
	state := map[string]int{}
	var cyclic func(string) bool
	cyclic = func(v string) bool {
		state[v] = 1
		for _, w := range next[v] {
			if state[w] == 1 || (state[w] == 0 && cyclic(w)) {
				return true
			}
		}
		state[v] = 2
		return false
	}
	for v := range next {
		if state[v] == 0 && cyclic(v) {
			return
		}
	}
	for _, e := range sc.Edges {
		a, b := byID[e.From], byID[e.To]
		if a == nil || b == nil || a.Type == "frame" || b.Type == "frame" || a == b {
			continue
		}
		ax, ay, bx, by := a.X+a.W/2, a.Y+a.H/2, b.X+b.W/2, b.Y+b.H/2
		ok := map[string]bool{"TB": by > ay, "BT": by < ay, "LR": bx > ax, "RL": bx < ax}[dir]
		if !ok {
			t.Errorf("%s: the link %s → %s does not run %s", name, e.From, e.To, dir)
		}
	}
}

func TestMermaidEveryFeature(t *testing.T) {
	data, err := os.ReadFile("testdata/mermaid/every-feature.mmd")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Decode(Mermaid, data)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "every-feature", sc, "TB")
	nodes := map[string]*canvas.Node{}
	for _, n := range sc.Nodes {
		nodes[n.ID] = n
	}
	for id, geo := range map[string]string{"start": "oval", "input": "rhombus", "check": "diamond", "pay": "rectangle",
		"reject": "rhombus", "store": "oval", "mail": "ellipse", "log": "hexagon", "done": "ellipse", "audit": "rhombus-2",
		"report": "trapezoid", "pack": "rectangle", "send": "trapezoid"} {
		n := nodes[id]
		if n == nil || n.Type != "geo" || n.Props["geo"] != geo {
			t.Errorf("%s became %+v, want a geo %s", id, n, geo)
		}
	}
	if nodes["check"].Props["text"] != "Valid?" || nodes["input"].Props["text"] != "Read the order" {
		t.Errorf("labels: %v, %v", nodes["check"].Props["text"], nodes["input"].Props["text"])
	}
	if f := nodes["ship"]; f == nil || f.Type != "frame" || f.Name != "Shipping" || nodes["pack"].ParentID != "ship" || nodes["send"].ParentID != "ship" {
		t.Errorf("the subgraph became %+v (pack in %q)", f, nodes["pack"].ParentID)
	}
	if p := nodes["reject"].Props; p["fillColor"] != "#ffc9c9" || p["color"] != "#e03131" || p["fill"] != "solid" {
		t.Errorf("style: reject's props are %v", p)
	}
	if nodes["pay"].Props["fillColor"] != "#ffec99" || nodes["done"].Props["fillColor"] != "#ffec99" {
		t.Errorf("classes: pay %v, done %v", nodes["pay"].Props["fillColor"], nodes["done"].Props["fillColor"])
	}
	edges := map[string]*canvas.Edge{}
	for _, e := range sc.Edges {
		edges[e.From+">"+e.To] = e
		if pts, _ := e.Props["points"].([]any); len(pts) < 2 {
			t.Errorf("%s has no points", e.ID)
		}
	}
	want := func(key string, props map[string]any) {
		t.Helper()
		e := edges[key]
		if e == nil {
			t.Errorf("no link %s", key)
			return
		}
		for k, v := range props {
			if e.Props[k] != v {
				t.Errorf("%s: props.%s = %v, want %v", key, k, e.Props[k], v)
			}
		}
	}
	want("check>pay", map[string]any{"text": "yes", "arrowheadEnd": "arrow"})
	want("check>reject", map[string]any{"text": "no"})
	want("pay>store", map[string]any{"strokeWidth": 4.0})
	want("pay>mail", map[string]any{"dash": "dotted", "text": "receipt"})
	want("reject>log", map[string]any{"arrowheadEnd": "none"})
	want("mail>done", map[string]any{"arrowheadEnd": "dot"})
	want("store>audit", map[string]any{"arrowheadEnd": "bar"})
	want("audit>report", map[string]any{"arrowheadStart": "arrow", "arrowheadEnd": "arrow"})
	if _, ok := edges["log>report"]; ok {
		t.Errorf("an invisible link (~~~) became an edge")
	}
}

// TestMermaidDocsExamples reads every flowchart of Mermaid's own
// documentation (testdata/mermaid/docs, MIT): each lays out with nothing
// overlapping and its links the declared way.
func TestMermaidDocsExamples(t *testing.T) {
	files, _ := filepath.Glob("testdata/mermaid/docs/*.mmd")
	if len(files) < 100 {
		t.Fatalf("found %d examples", len(files))
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		sc, err := Decode(Mermaid, data)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		g, _ := parseMermaid(string(data))
		checkLayout(t, filepath.Base(f), sc, g.dir)
		if len(sc.Nodes) == 0 {
			t.Errorf("%s: no nodes", filepath.Base(f))
		}
	}
}

func TestMermaidBadFilesNameTheLine(t *testing.T) {
	for _, c := range []struct{ file, field, says string }{
		{"sequenceDiagram\n  A->>B: hi", "body line 1", "flowchart"},
		{"flowchart XY\n  A-->B", "body line 1", "direction"},
		{"flowchart TD\n  A-->B\n  subgraph one\n  C-->D", "body line 3", "not closed"},
		{"flowchart TD\n  A-->B\n  end", "body line 3", "closes no subgraph"},
		{"flowchart TD\n  A-->B\n  A-->", "body line 3", "must end at a node"},
		{"flowchart TD\n  A-->|label B", "body line 2", "not closed"},
		{"", "body line 1", "empty"},
	} {
		_, err := Decode(Mermaid, []byte(c.file))
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Reason, c.says) {
			t.Errorf("Decode(%q) = %v, want a 422 naming %s and saying %q", c.file, err, c.field, c.says)
		}
	}
}

// TestMermaidConcurrentImports lays out different charts at once, as
// concurrent imports do: each must come out as it does alone (Graphviz runs
// as one WebAssembly module instance that two layouts must not share).
func TestMermaidConcurrentImports(t *testing.T) {
	files, _ := filepath.Glob("testdata/mermaid/docs/*.mmd")
	if len(files) < 8 {
		t.Fatalf("found %d examples", len(files))
	}
	files = append(files[:6], "testdata/mermaid/every-feature.mmd")
	alone := make([][]byte, len(files))
	for i, f := range files {
		data, _ := os.ReadFile(f)
		sc, err := Decode(Mermaid, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		alone[i], _ = json.Marshal(sc)
	}
	var wg sync.WaitGroup
	for i, f := range files {
		data, _ := os.ReadFile(f)
		for range 3 {
			wg.Go(func() {
				sc, err := Decode(Mermaid, data)
				if err != nil {
					t.Errorf("%s, concurrently: %v", filepath.Base(f), err)
					return
				}
				if got, _ := json.Marshal(sc); !bytes.Equal(got, alone[i]) {
					t.Errorf("%s: laid out concurrently with others, it differs from its layout alone", filepath.Base(f))
				}
			})
		}
	}
	wg.Wait()
}

// chart writes a flowchart of nodes nodes and links links: each link from
// a lower-numbered node to a higher one (acyclic), every third labelled,
// picked by a fixed seed; random picks links that run any way.
func chart(nodes, links int, random bool) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i := range nodes {
		fmt.Fprintf(&b, "  n%d[step %d]\n", i, i)
	}
	r := rand.New(rand.NewPCG(7, 11))
	for k := range links {
		from, to := r.IntN(nodes), r.IntN(nodes)
		if !random {
			from = r.IntN(nodes - 1)
			to = from + 1 + r.IntN(min(nodes-from-1, 8))
		}
		if k%3 == 0 {
			fmt.Fprintf(&b, "  n%d -->|link %d| n%d\n", from, k, to)
		} else {
			fmt.Fprintf(&b, "  n%d --> n%d\n", from, to)
		}
	}
	return b.String()
}

// nested writes a flowchart of depth subgraphs, each inside the one before.
func nested(depth int) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i := range depth {
		fmt.Fprintf(&b, "subgraph s%d\n  n%d --> m%d\n", i, i, i)
	}
	b.WriteString(strings.Repeat("end\n", depth))
	return b.String()
}

// TestMermaidBigChartsBounded: a chart past the curved-link size is laid
// out with straight links and dot's bounded search, still with nothing
// overlapping and every link the declared way; past the limits a chart is
// refused before any layout.
func TestMermaidBigChartsBounded(t *testing.T) {
	g, _ := parseMermaid(chart(300, MaxMermaidEdges, false))
	if dotEffort(g) != mmBoundedDot {
		t.Fatalf("a chart of 300 nodes and %d links is laid out with %q", MaxMermaidEdges, dotEffort(g))
	}
	sc, err := Decode(Mermaid, []byte(chart(300, MaxMermaidEdges, false)))
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, "300 nodes", sc, g.dir)
	if len(sc.Nodes) != 300 || len(sc.Edges) != MaxMermaidEdges {
		t.Fatalf("%d nodes and %d edges, want 300 and %d", len(sc.Nodes), len(sc.Edges), MaxMermaidEdges)
	}
	for _, e := range sc.Edges {
		if pts, _ := e.Props["points"].([]any); len(pts) < 2 {
			t.Fatalf("edge %s has no route: %v", e.ID, e.Props["points"])
		}
	}
	if sc, err := Decode(Mermaid, []byte(nested(MaxMermaidDepth))); err != nil || len(sc.Nodes) != 3*MaxMermaidDepth {
		t.Errorf("subgraphs nested %d deep: %v", MaxMermaidDepth, err)
	}
	small, _ := parseMermaid(chart(40, mmCurvedEdges, false))
	if dotEffort(small) != "splines=spline" {
		t.Errorf("a chart of 40 nodes and %d links is laid out with %q, want curved links", mmCurvedEdges, dotEffort(small))
	}
	for _, c := range []struct {
		file, says string
	}{
		{chart(MaxMermaidNodes+1, 10, false), fmt.Sprintf("has %d nodes and subgraphs, more than the %d", MaxMermaidNodes+1, MaxMermaidNodes)},
		{chart(100, MaxMermaidEdges+1, true), fmt.Sprintf("has %d links, more than the %d", MaxMermaidEdges+1, MaxMermaidEdges)},
		{nested(MaxMermaidDepth + 1), fmt.Sprintf("is nested %d deep, more than the %d", MaxMermaidDepth+1, MaxMermaidDepth)},
	} {
		_, err := Decode(Mermaid, []byte(c.file))
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "body") || !strings.Contains(fe.Reason, c.says) {
			t.Errorf("Decode = %v, want a 422 saying %q", err, c.says)
		}
	}
}

// BenchmarkMermaidWorstCase lays out the hardest charts within the limits
// that were found: links between random nodes (crossing everywhere,
// cycles, long links), a third of them labelled, at the most links each
// kind of layout takes: how long one import can hold a Graphviz worker
// (and a core) short of being killed at dotTimeout.
func BenchmarkMermaidWorstCase(b *testing.B) {
	for _, c := range []struct {
		name         string
		nodes, links int
	}{
		{"curved-40-nodes", 40, mmCurvedEdges},
		{"bounded-100-nodes", 100, MaxMermaidEdges},
		{"bounded-200-nodes", 200, MaxMermaidEdges},
		{"bounded-1000-nodes", MaxMermaidNodes, MaxMermaidEdges},
	} {
		data := []byte(chart(c.nodes, c.links, true))
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Decode(Mermaid, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
