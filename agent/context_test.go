package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

func TestBuildContextCapsAndSummaries(t *testing.T) {
	var nodes []*canvas.Node
	for i := 0; i < 500; i++ {
		nodes = append(nodes, &canvas.Node{ID: fmt.Sprintf("shape:%03d", i), Type: "geo", X: float64(i%25) * 300, Y: float64(i/25) * 300, W: 100, H: 100,
			Props: map[string]any{"text": strings.Repeat("x", 200), "color": "red"}, UpdatedBy: "user-1"})
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	in := ContextInput{
		Snapshot:  client.Snapshot{HeadRev: 42, State: canvas.SceneState{Nodes: nodes}},
		Viewport:  &Box{X: 0, Y: 0, W: 1000, H: 700},
		Selection: []string{"shape:499"},
		Transcript: []client.TranscriptEntry{{Role: "user", Text: "old", TS: now.Add(-2 * time.Minute)},
			{Role: "user", Text: "recent", TS: now.Add(-10 * time.Second)}},
		Now: now,
	}
	pc := BuildContext(cfg, in)
	var doc struct {
		DocVersion string `json:"docVersion"`
		Selection  []struct {
			ID string `json:"id"`
		} `json:"selection"`
		Shapes []struct {
			ID   string  `json:"id"`
			X    float64 `json:"x"`
			Text string  `json:"text"`
			By   string  `json:"by"`
		} `json:"shapes"`
		Peripheral []struct {
			Count int `json:"count"`
		} `json:"peripheral"`
		ShapeState []json.RawMessage        `json:"shapeState"`
		Transcript []client.TranscriptEntry `json:"transcript"`
	}
	if err := json.Unmarshal([]byte(pc.JSON), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Shapes) != 300 || pc.Stats.Listed != 300 || pc.Stats.Count != 500 {
		t.Fatalf("listed %d", len(doc.Shapes))
	}
	clustered := 0
	for _, c := range doc.Peripheral {
		clustered += c.Count
	}
	if clustered != 200 || pc.Stats.Clusters != len(doc.Peripheral) {
		t.Fatalf("peripheral clusters hold %d shapes", clustered)
	}
	// Shapes in the viewport come first.
	if doc.Shapes[0].X >= 1000 || len(doc.Shapes[0].Text) != 80 || doc.Shapes[0].By != "human" {
		t.Fatalf("first shape %+v", doc.Shapes[0])
	}
	if len(doc.Selection) != 1 || doc.Selection[0].ID != "shape:499" {
		t.Fatalf("selection %+v", doc.Selection)
	}
	size := 0
	for _, s := range doc.ShapeState {
		size += len(s)
	}
	if size > cfg.ShapeStateLimit || !pc.Stats.Truncated || size != pc.Stats.Bytes || len(doc.ShapeState) == 0 {
		t.Fatalf("shape state %d bytes (limit %d), stats %+v", size, cfg.ShapeStateLimit, pc.Stats)
	}
	if len(doc.Transcript) != 1 || doc.Transcript[0].Text != "recent" || doc.DocVersion != "42" {
		t.Fatalf("transcript %+v version %s", doc.Transcript, doc.DocVersion)
	}
	if again := BuildContext(cfg, in); again.JSON != pc.JSON {
		t.Fatal("context is not deterministic")
	}
	canvasVerbs := string(catalogJSON(func(v Verb) bool { return !v.Doc }))
	if !strings.Contains(SystemPrompt(), canvasVerbs) || strings.Contains(SystemPrompt(), `"replace_lines"`) {
		t.Fatal("the system prompt lacks the canvas verbs of the catalog, or offers document verbs")
	}
	if doc := DocumentSystemPrompt(); !strings.Contains(doc, `"replace_lines"`) || !strings.Contains(doc, `"todo"`) || strings.Contains(doc, `"create_shape"`) {
		t.Fatal("the document prompt does not offer exactly the document verbs and the meta verbs")
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"CANVAS_STEWARD_MODEL":               "openai:gpt-4o-mini",
		"OPENAI_BASE_URL":                    "http://127.0.0.1:9/v1",
		"CANVAS_AGENT_MAX_FOLLOWUPS":         "5",
		"CANVAS_AGENT_LOW_ACTION_THRESHOLD":  "2",
		"CANVAS_AGENT_SHAPE_STATE_LIMIT":     "8192",
		"CANVAS_AGENT_SCREENSHOT_TIMEOUT_MS": "100", // below the enforced minimum
		"CANVAS_AGENT_CONFIG":                `{"screenshot":{"retries":2},"followups":{"lowActionThreshold":4}}`,
	}
	c, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "openai:gpt-4o-mini" || c.MaxFollowups != 5 || c.LowActionThreshold != 4 || c.ScreenshotRetries != 2 ||
		c.ShapeStateLimit != 8192 || c.ScreenshotTimeout != 2500*time.Millisecond || c.OpenAIBaseURL != "http://127.0.0.1:9/v1" {
		t.Fatalf("config %+v", c)
	}
	if strings.Contains(c.String(), "sk-") {
		t.Fatal("key in String")
	}
	for k, v := range map[string]string{
		"CANVAS_AGENT_MAX_FOLLOWUPS": "lots", "CANVAS_STEWARD_MODEL": "mistral:x", "CANVAS_AGENT_CONFIG": `{"bogus":1}`,
		"CANVAS_AGENT_SCREENSHOT_RETRIES": "-1",
	} {
		_, err := ConfigFromEnv(func(key string) string {
			if key == k {
				return v
			}
			return ""
		})
		if !errors.Is(err, canvas.ErrInvalid) || !strings.Contains(err.Error(), strings.SplitN(k, "_", 3)[0]) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	d, err := ConfigFromEnv(func(string) string { return "" })
	if err != nil || d.Model != "debug/fake" || d.MaxFollowups != 3 || d.LowActionThreshold != 6 || d.ShapeStateLimit != 4096 {
		t.Fatalf("defaults %+v %v", d, err)
	}
}

func TestFakeReplyParsesAndSanitizes(t *testing.T) {
	for _, task := range []string{"Draft a brutalist poster concept", "a \"quoted\"\nnote\x01 with ünïcode"} {
		p := NewParser(0)
		done, _ := p.Feed(FakeReply(ModelRequest{Task: task, Kind: "initial"}))
		s := NewSanitizer(nil, nil)
		n := 0
		for _, pa := range done {
			r, d := s.Push(Action{Name: pa.Name, Params: pa.Params})
			if len(d) > 0 {
				t.Fatalf("%q: dropped %v", task, d)
			}
			n += len(r)
		}
		if n == 0 || !p.Done() {
			t.Fatalf("%q: %d actions", task, n)
		}
	}
}
