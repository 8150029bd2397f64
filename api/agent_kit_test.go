package api

// The agent speaks the tldraw agent starter kit's reply format: the kit's
// replies (agent/testdata/tldraw-kit) stream from a local OpenAI-compatible
// server to a real canvasd, and what the kit means is on the canvas.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/hub"
)

// kitReply reads a reply of agent/testdata/tldraw-kit.
func kitReply(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "agent", "testdata", "tldraw-kit", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inCanvasdFormat rewrites a kit reply's actions {"_type": X, ...} as
// canvasd's {"name": X, "params": {...}}: the kit's names and fields inside
// canvasd's own format.
func inCanvasdFormat(t *testing.T, reply string) string {
	t.Helper()
	var doc struct {
		Actions []map[string]any `json:"actions"`
	}
	if err := json.Unmarshal([]byte(reply), &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range doc.Actions {
		name := a["_type"]
		delete(a, "_type")
		b, _ := json.Marshal(map[string]any{"name": name, "params": a})
		out = append(out, string(b))
	}
	return actionsJSON(out...)
}

func propNum(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return math.NaN()
}

func kitNear(a, b float64) bool { return math.Abs(a-b) < 0.01 }

// kitRun runs a session whose first reply is reply (in chunks of 13 bytes;
// later turns answer no actions) and returns it with the model's requests.
// A browser is the canvas's host (it gets set_viewport) and acks every envelope.
func kitRun(t *testing.T, canvasID, reply string) (*agentEnv, client.AgentSession, []openAIRequest, *ackingBrowser) {
	t.Helper()
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(reply, 13)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.MaxFollowups = 6; c.LowActionThreshold = 0 })
	e.newCanvas(canvasID)
	host := newAckingBrowser(t, e, canvasID, "host", []string{hub.CapScreenshot, hub.CapViewport}, func(agent.ActionEnvelope) bool { return true })
	sess := e.run(client.AgentRunRequest{RoomID: canvasID, Message: "draw what the reply draws"})
	if sess.State != client.AgentDone {
		t.Fatalf("session %s: %+v", sess.State, sess)
	}
	return e, sess, model.requests(), host
}

// prompts returns the user prompts of the model calls after the first.
func laterPrompts(reqs []openAIRequest) string {
	var b strings.Builder
	for _, r := range reqs[1:] {
		p, _ := r.last()
		b.WriteString(p + "\n")
	}
	return b.String()
}

func TestAgentKitFlowchart(t *testing.T) {
	reply := kitReply(t, "flowchart.json")
	for _, tc := range []struct{ name, reply string }{
		{"the kit's format", reply},
		{"the kit's names in canvasd's format", inCanvasdFormat(t, reply)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, sess, reqs, host := kitRun(t, "kit", tc.reply)
			snap := e.snapshot("kit")
			node := func(text string) *canvas.Node {
				t.Helper()
				n := nodeByName(snap, text)
				if n == nil {
					t.Fatalf("no shape with text %q in %d nodes", text, len(snap.State.Nodes))
				}
				return n
			}
			build, check, ship := node("Build and test"), node("Tests pass?"), node("Ship")
			title, reminder, notes := node("Release flow"), node("Tag the release"), node("Write the notes")

			// create: geo kinds, colours and fills as the kit means them; label; update.
			for _, c := range []struct {
				n                *canvas.Node
				geo, color, fill string
				w, h             float64
			}{
				{build, "rectangle", "blue", "solid", 240, 120},
				{check, "diamond", "red", "lined-fill", 220, 160},
				{ship, "oval", "green", "semi", 200, 100},
			} {
				if c.n.Type != "geo" || c.n.Props["geo"] != c.geo || c.n.Props["color"] != c.color || c.n.Props["fill"] != c.fill || c.n.W != c.w || c.n.H != c.h {
					t.Errorf("%v: %s %v %vx%v, want geo %s %s %s %vx%v", c.n.Props["text"], c.n.Type, c.n.Props, c.n.W, c.n.H, c.geo, c.color, c.fill, c.w, c.h)
				}
			}
			if build.Props["align"] != "middle" || build.Props["meta"].(map[string]any)["note"] != "first step" {
				t.Errorf("build props %v", build.Props)
			}
			// place (ship right of check, centred, 100 apart), align top, distribute.
			if !kitNear(build.Y, 140) || !kitNear(check.Y, 140) || !kitNear(ship.X, 800) || !kitNear(ship.Y, 170) {
				t.Errorf("build at %v,%v; check at %v,%v; ship at %v,%v", build.X, build.Y, check.X, check.Y, ship.X, ship.Y)
			}
			if g1, g2 := check.X-(build.X+build.W), ship.X-(check.X+check.W); !kitNear(g1, g2) || !kitNear(build.X, 100) {
				t.Errorf("distributed gaps %v and %v (build at %v)", g1, g2, build.X)
			}
			// text: anchored at its top centre, its font size, growing with the text.
			if title.Type != "text" || title.Props["align"] != "middle" || propNum(title.Props["fontSize"]) != 32 || title.Props["autoSize"] != true || !kitNear(title.X+title.W/2, 550) || !kitNear(title.Y, 40) {
				t.Errorf("title %+v", title)
			}
			// stack: the notes below the title, 40 apart.
			if !kitNear(notes.Y, title.Y+title.H+40) {
				t.Errorf("notes at y %v, title %v+%v", notes.Y, title.Y, title.H)
			}
			// move, resize about an origin, rotate, bring to front.
			if reminder.Type != "note" || reminder.Props["color"] != "yellow" || !kitNear(reminder.W, 300) || !kitNear(reminder.H, 300) || !kitNear(reminder.Rotation, 10*math.Pi/180) {
				t.Errorf("reminder %+v", reminder)
			}
			for _, n := range snap.State.Nodes { // the pen stroke came later
				if n.Type != "draw" && n.ID != reminder.ID && n.Index > reminder.Index {
					t.Errorf("%v is above the reminder", n.Props["text"])
				}
			}
			// pen: a draw shape at the corner of its stroke; delete: the rule is gone.
			var draws, lines int
			for _, n := range snap.State.Nodes {
				switch n.Type {
				case "draw":
					draws++
					segs, _ := n.Props["segments"].([]any)
					if n.X != 450 || n.Y != 90 || n.Props["color"] != "red" || len(segs) != 1 || len(segs[0].(map[string]any)["points"].([]any)) != 3 {
						t.Errorf("pen stroke %+v", n)
					}
				case "line":
					lines++
				}
			}
			if draws != 1 || lines != 0 {
				t.Errorf("%d draw shapes, %d lines; want the stroke and no rule", draws, lines)
			}
			// arrows: edges bound to the shapes; the bent one curved through a displaced middle.
			edges := map[string]*canvas.Edge{}
			for _, ed := range snap.State.Edges {
				edges[ed.From+">"+ed.To] = ed
			}
			if ed := edges[build.ID+">"+check.ID]; ed == nil || ed.Props["text"] != "then" || ed.Props["color"] != "black" {
				t.Errorf("build→check arrow %+v (edges %v)", ed, snap.State.Edges)
			}
			if ed := edges[check.ID+">"+ship.ID]; ed == nil || ed.Props["routing"] != "curved" || len(ed.Props["points"].([]any)) != 3 {
				t.Errorf("check→ship arrow %+v", ed)
			} else if mid := ed.Props["points"].([]any)[1].(map[string]any); !kitNear(propNum(mid["x"]), 740) || !kitNear(propNum(mid["y"]), 180) {
				t.Errorf("bent arrow's middle %v, want 40 to the left of its direction (740, 180)", mid)
			}
			if len(snap.State.Edges) != 2 {
				t.Errorf("%d edges", len(snap.State.Edges))
			}
			// think, message, update-todo-list, review, add-detail, setMyView.
			var chat []string
			for _, m := range sess.Transcript {
				chat = append(chat, m.Text)
			}
			all := strings.Join(chat, "\n")
			for _, want := range []string{"A release flow: three steps", "I drew the release flow."} {
				if !strings.Contains(all, want) {
					t.Errorf("chat lacks %q:\n%s", want, all)
				}
			}
			if len(sess.Todos) != 1 || sess.Todos[0].Text != "Draw the release flow" || sess.Todos[0].Status != "done" {
				t.Errorf("todos %+v", sess.Todos)
			}
			later := laterPrompts(reqs)
			for _, want := range []string{"Review your work: Check the arrows (the area x 50, y 100, w 1100, h 400)", "Add an owner to each step"} {
				if !strings.Contains(later, want) {
					t.Errorf("no follow-up with %q in %d later prompts", want, len(reqs)-1)
				}
			}
			if strings.Contains(later, "were not applied") || sess.Stats.ActionsDropped != 0 {
				t.Errorf("something was not applied (%d dropped):\n%s", sess.Stats.ActionsDropped, later)
			}
			viewport := false
			for _, env := range host.got() {
				for _, a := range env.Actions {
					viewport = viewport || a.Name == "set_viewport" && a.Params["x"] == 0.0 && a.Params["w"] == 1200.0 && a.Params["h"] == 800.0
				}
			}
			if !viewport {
				t.Errorf("the host got no set_viewport to 0, 0, 1200 × 800: %+v", host.got())
			}
		})
	}
}

// TestAgentKitSnowman replays the kit's own example reply, verbatim: a
// JavaScript object literal under "events", with width, height and schedule.
func TestAgentKitSnowman(t *testing.T) {
	e, sess, reqs, _ := kitRun(t, "snowman", kitReply(t, "snowman.txt"))
	snap := e.snapshot("snowman")
	var got []string
	for _, n := range snap.State.Nodes {
		note, _ := n.Props["meta"].(map[string]any)["note"].(string)
		got = append(got, fmt.Sprintf("%s %v %v,%v %vx%v %v %v", note, n.Props["geo"], n.X, n.Y, n.W, n.H, n.Props["color"], n.Props["fill"]))
	}
	sort.Strings(got)
	want := []string{
		"Snowman's bottom ellipse 50,250 150x150 white lined-fill",
		"Snowman's head ellipse 100,100 50x50 white lined-fill",
		"Snowman's left eye rectangle 120,120 10x10 <nil> <nil>",
		"Snowman's middle ellipse 75,150 100x100 white lined-fill",
		"Snowman's right eye rectangle 180,120 10x10 <nil> <nil>",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("shapes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var chat strings.Builder
	for _, m := range sess.Transcript {
		chat.WriteString(m.Text + "\n")
	}
	for _, want := range []string{"I'll create three circles", "Now I'll add eyes to the snowman.", "I've created a snowman."} {
		if !strings.Contains(chat.String(), want) {
			t.Errorf("chat lacks %q:\n%s", want, chat.String())
		}
	}
	if later := laterPrompts(reqs); !strings.Contains(later, "Review your work: I'll make sure the snowman looks done. (the area x 25, y 50, w 225, h 450)") {
		t.Errorf("no review follow-up:\n%s", later)
	}
	if sess.Stats.ActionsDropped != 0 {
		t.Errorf("%d actions dropped", sess.Stats.ActionsDropped)
	}
}

// TestAgentKitUnmappableToldToTheModel: what the kit's reply holds that
// canvasd cannot do is applied as far as it can be, and the rest is told
// to the model in the next turn, never dropped silently.
func TestAgentKitUnmappableToldToTheModel(t *testing.T) {
	e, sess, reqs, _ := kitRun(t, "unmapped", kitReply(t, "unmappable.json"))
	snap := e.snapshot("unmapped")
	box := nodeByName(snap, "Box")
	if len(snap.State.Nodes) != 1 || box == nil || box.Props["geo"] != "rectangle" || box.Props["fill"] != "solid" || box.Props["color"] != nil {
		t.Fatalf("nodes %+v", snap.State.Nodes)
	}
	if len(reqs) < 2 {
		t.Fatalf("%d model calls: no follow-up", len(reqs))
	}
	p, _ := reqs[1].last()
	for _, want := range []string{
		"Parts of your previous reply were not applied",
		`count: count: the tldraw kit's "count" action is not available here`,
		`countryInfo: countryInfo: the tldraw kit's "countryInfo" action is not available here`,
		`create: create: shape kind "unknown" cannot be created`,
		"create: create: a draw shape is not created with create; draw it with a pen action",
		"create: rectangle box: color magenta is not one of",
		"update-todo-list: update-todo-list: todo 7 has no text",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the follow-up prompt lacks %q:\n%s", want, p)
		}
	}
	var notes strings.Builder
	for _, m := range sess.Transcript {
		notes.WriteString(m.Text + "\n")
	}
	if !strings.Contains(notes.String(), "Not applied from the model's reply (6); telling the model") {
		t.Errorf("the chat does not say what was not applied:\n%s", notes.String())
	}
}
