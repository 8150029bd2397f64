package reducer

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// model1Log reads the log of the canvas today's canvasd wrote under model 1
// (store/testdata/model1: commits.jsonl, as GET .../events returned it).
func model1Log(t testing.TB) []canvas.Commit {
	t.Helper()
	b, err := os.ReadFile("../store/testdata/model1/commits.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var log []canvas.Commit
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c canvas.Commit
		if err := canvas.UnmarshalExact(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		canvas.NormalizePatchNumbers(c.Changes)
		log = append(log, c)
	}
	return log
}

// migrateCommit decides and applies the migrate_model commit of s.
func migrateCommit(t testing.TB, s *canvas.State) Decision {
	t.Helper()
	cmd := canvas.Command{CanvasID: "v1model", ID: "migrate", Type: CmdMigrateModel, Args: []byte(`{}`), Actor: MigrationActor,
		Rev: s.Rev + 1, TS: time.Unix(1800000000, 0).UTC(), Seed: "m"}
	before := s.Clone()
	dec, err := MigrateModel(s, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(before.Scene()) != jsonOf(s.Scene()) {
		t.Fatal("MigrateModel modified the state")
	}
	c := jsonRoundTrip(t, commitOf(cmd, dec))
	if err := Apply(s, &c); err != nil {
		t.Fatalf("applying migrate_model: %v", err)
	}
	return dec
}

func TestMigrateModel1(t *testing.T) {
	s, err := Replay(model1Log(t))
	if err != nil {
		t.Fatal(err)
	}
	if !NeedsMigration(s) {
		t.Fatal("the model 1 canvas needs no migration")
	}
	if len(s.History) == 0 {
		t.Fatal("the model 1 log left no undo history")
	}
	dec := migrateCommit(t, s)
	if len(dec.Changes) == 0 {
		t.Fatal("no changes")
	}
	checkInvariants(t, s) // every node and edge validates under model 2, every bound end is on its node
	if NeedsMigration(s) {
		t.Fatalf("migrated, it still needs a migration: %s", jsonOf(s.Scene()))
	}
	if s.History != nil {
		t.Fatalf("the undo histories survived the migration: %v", s.History)
	}
	if _, ok := s.Nodes["arr1"]; ok {
		t.Fatal("arrow node arr1 is still a node")
	}
	for _, c := range []struct{ id, want string }{
		// Arrow nodes are edges: bound from their bindings, their points from start and end.
		{"arr1", `{"id":"arr1","from":"a","to":"b","type":"arrow","props":{"color":"black","meta":{"v1":{"created_by":"admin","created_rev":6,"h":1,"index":"a6","rotation":0,"w":280,"x":120,"y":40}},"points":[{"x":120,"y":40},{"x":400,"y":40}],"text":"calls"},"created_by":"canvasd","created_rev":22,"updated_rev":22}`},
		{"arr2", `{"id":"arr2","from":"a","to":"c","type":"arrow","props":{"meta":{"v1":{"created_by":"admin","created_rev":7,"h":100,"index":"a7","rotation":0,"w":100,"x":60,"y":80}},"points":[{"x":71.333333,"y":85},{"x":78.5,"y":300}]},"created_by":"canvasd","created_rev":22,"updated_rev":22}`},
		{"arr3", `{"id":"arr3","from":"","to":"","type":"arrow","props":{"arrowheadEnd":"triangle","arrowheadStart":"dot","meta":{"v1":{"bend":20,"created_by":"admin","created_rev":8,"h":100,"index":"a8","rotation":0,"w":100,"x":700,"y":0}},"points":[{"x":700,"y":0},{"x":800,"y":50}]},"created_by":"canvasd","created_rev":22,"updated_rev":22}`},
		// Edges get points; keys an edge does not have go to meta.v1.
		{"e1", `{"id":"e1","from":"a","to":"c","type":"arrow","props":{"color":"green","dash":"dashed","points":[{"x":71.333333,"y":85},{"x":78.5,"y":300}],"text":"edge label"},"created_by":"admin","created_rev":9,"updated_rev":22}`},
		{"e2", `{"id":"e2","from":"b","to":"n1","type":"depends_on","props":{"meta":{"v1":{"weight":3}},"points":[{"x":484.368308,"y":76.552462},{"x":633.333333,"y":300}]},"created_by":"admin","created_rev":10,"updated_rev":22}`},
	} {
		if got := jsonOf(s.Edges[c.id]); got != c.want {
			t.Errorf("edge %s:\n got %s\nwant %s", c.id, got, c.want)
		}
	}
	for _, c := range []struct{ id, want string }{
		// Refused values and unknown keys go to meta.v1, numbers exactly as they were.
		{"b", `{"color":"red","geo":"ellipse","meta":{"v1":{"big":1795461385736852721,"customThing":{"nested":[1,2,3]},"dash":"wavy","fill":"tint","size":"xxl"}},"opacity":0.5}`},
		{"c", `{"meta":{"v1":{"geo":"pill"}},"text":"pill"}`},
		{"a", `{"color":"blue","fill":"solid","geo":"rectangle","text":"A"}`},
		{"n1", `{"color":"yellow","richText":{"content":[{"content":[{"text":"rich","type":"text"}],"type":"paragraph"}],"type":"doc"},"text":"a note"}`},
		{"t1", `{"align":"middle","font":"sans","size":"xl","text":"Title","verticalAlign":"middle"}`},
		// A tldraw line's point map is a list; an image's src its url.
		{"l1", `{"color":"violet","meta":{"v1":{"points":{"a1":{"id":"a1","index":"a1","x":0,"y":0},"a2":{"id":"a2","index":"a2","x":50,"y":80}}}},"points":[{"x":0,"y":0},{"x":50,"y":80}]}`},
		{"img", `{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="}`},
		{"doc1", `{"language":"python","meta":{"v1":{"owner":"team"}},"text":"def main():\n    print(2)\n"}`},
	} {
		if got := jsonOf(s.Nodes[c.id].Props); got != c.want {
			t.Errorf("node %s props:\n got %s\nwant %s", c.id, got, c.want)
		}
	}
	// Migrated twice, nothing changes.
	if dec := migrateCommit(t, s); len(dec.Changes) != 0 {
		t.Fatalf("a second migration changed %s", changeSummary(dec.Changes))
	}
	// Undo reaches no further back than the migration.
	if _, err := Decide(s, rhCommand(s, "undo", `{}`)); err == nil {
		t.Fatal("undo after the migration undid something")
	}
	// Reverting to a snapshot taken under model 1 brings back what it held, as model 2 holds it.
	at8, err := Replay(model1Log(t)[:8])
	if err != nil {
		t.Fatal(err)
	}
	cmd := rhCommand(s, CmdRevertToSnapshot, `{"snapshot_id":"v1"}`)
	cmd.Snapshot = at8
	dec, err = Decide(s, cmd)
	if err != nil {
		t.Fatalf("revert to a model 1 snapshot: %v", err)
	}
	r := s.Clone()
	c := jsonRoundTrip(t, commitOf(cmd, dec))
	if err := Apply(r, &c); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, r)
	if _, ok := r.Edges["arr3"]; !ok || len(r.Nodes) != 5 || len(r.Edges) != 3 {
		t.Fatalf("after the revert: %s", jsonOf(r.Scene()))
	}
	// The migrated canvas is an ordinary one: moving a node keeps its arrows attached.
	h := &rh{t: t, s: s}
	h.do("move", `{"ids":["a"],"dx":100,"dy":50}`)
	checkInvariants(t, h.s)
	if got := edgePoints(t, h.s, "arr1"); got[0] != (pt{220, 90}) || got[1] != (pt{400, 40}) {
		t.Fatalf("arr1 after moving a: %v", got)
	}
	h.do("delete_node", `{"id":"b"}`)
	for _, id := range []string{"arr1", "e2"} {
		if _, ok := h.s.Edges[id]; ok {
			t.Fatalf("edge %s of the deleted node b is still there", id)
		}
	}
}

// Edges ending on an arrow node, arrows bound to shapes that are gone or to
// other arrows, an edge id taken by an edge, meta that is not an object: the migration frees those ends and keeps what it moves.
func TestMigrateModel1EdgeCases(t *testing.T) {
	s := canvas.NewState()
	s.Rev = 5
	s.Nodes["n"] = &canvas.Node{ID: "n", Type: "geo", X: 0, Y: 0, W: 100, H: 100, Index: "a1", Props: map[string]any{"geo": "pill"}}
	s.Nodes["x"] = &canvas.Node{ID: "x", Type: "arrow", X: 200, Y: 0, W: 50, H: 50, Index: "a2", Name: "ex",
		Props: map[string]any{"start": map[string]any{"boundShapeId": "gone"}, "end_binding": "y", "meta": "mine"}}
	s.Nodes["y"] = &canvas.Node{ID: "y", Type: "arrow", X: 300, Y: 300, W: 10, H: 10, Index: "a3",
		Props: map[string]any{"start": map[string]any{"type": "binding", "boundShapeId": "n", "normalizedAnchor": map[string]any{"x": 0.5, "y": 0.5}}}}
	s.SetEdge("x", &canvas.Edge{ID: "x", From: "n", To: "y", Type: "arrow", Props: map[string]any{"label": "hi"}})
	migrateCommit(t, s)
	checkInvariants(t, s)
	for _, c := range []struct{ id, want string }{
		// The edge that ended on arrow y keeps its id; its to end is free at y's middle.
		{"x", `{"id":"x","from":"n","to":"","type":"arrow","props":{"meta":{"v1":{"label":"hi","to":"y"}},"points":[{"x":100,"y":100},{"x":305,"y":305}]},"created_by":"","created_rev":0,"updated_rev":6}`},
		// Arrow x became an edge of another id; its bindings named nothing it can end on.
		{"x:arrow1", `{"id":"x:arrow1","from":"","to":"","type":"arrow","props":{"meta":{"v1":{"end_binding":"y","h":50,"index":"a2","meta":"mine","name":"ex","rotation":0,"start_binding":"gone","w":50,"x":200,"y":0}},"points":[{"x":200,"y":0},{"x":250,"y":50}]},"created_by":"canvasd","created_rev":6,"updated_rev":6}`},
		// tldraw's binding object: the end is bound and the object kept.
		{"y", `{"id":"y","from":"n","to":"","type":"arrow","props":{"meta":{"v1":{"h":10,"index":"a3","rotation":0,"start":{"boundShapeId":"n","normalizedAnchor":{"x":0.5,"y":0.5},"type":"binding"},"w":10,"x":300,"y":300}},"points":[{"x":100,"y":100},{"x":310,"y":310}]},"created_by":"canvasd","created_rev":6,"updated_rev":6}`},
	} {
		if got := jsonOf(s.Edges[c.id]); got != c.want {
			t.Errorf("edge %s:\n got %s\nwant %s", c.id, got, c.want)
		}
	}
	if got := jsonOf(s.Nodes["n"].Props); got != `{"meta":{"v1":{"geo":"pill"}}}` {
		t.Errorf("n's props became %s", got)
	}
}

// A client cannot send migrate_model.
func TestMigrateModelIsNoClientCommand(t *testing.T) {
	h := newRH(t)
	_, err := h.try(CmdMigrateModel, `{}`)
	wantFieldError(t, err, "type", "clients cannot send it")
	if slices.Contains(CommandTypes(), CmdMigrateModel) {
		t.Fatal("CommandTypes lists migrate_model")
	}
}
