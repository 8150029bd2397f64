package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/client"
)

// TestAgentSessionsOfACanvas: GET /api/canvases/{id}/agent-sessions lists the
// canvas's runs, whoever started them, newest first, each as the session
// endpoint reads it; limit bounds it; another canvas's runs are not in it;
// a bad limit is a 400 and an unknown canvas a 404. With agents run as
// workers (the sessions only in the store) the list is the same.
func TestAgentSessionsOfACanvas(t *testing.T) {
	for _, worker := range []bool{false, true} {
		t.Run(fmt.Sprintf("worker=%v", worker), func(t *testing.T) {
			note := func(text string) scriptedReply {
				return scriptedReply{chunks: chunked(actionsJSON(fmt.Sprintf(`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":%q}}}`, text)), 7)}
			}
			model := newFakeOpenAI(t, note("one"), note("two"), note("elsewhere"))
			e := newAgentEnvMode(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.LowActionThreshold = 0 }, worker)
			e.newCanvas("ls")
			e.newCanvas("other")
			ctx := context.Background()
			if list, err := e.human.AgentSessions(ctx, "ls", 0); err != nil || len(list) != 0 {
				t.Fatalf("sessions of a canvas without runs: %v %v", list, err)
			}
			first := e.run(client.AgentRunRequest{RoomID: "ls", Message: "one"})
			second := e.run(client.AgentRunRequest{RoomID: "ls", Message: "two"})
			e.run(client.AgentRunRequest{RoomID: "other", Message: "elsewhere"})
			list, err := e.human.AgentSessions(ctx, "ls", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].ID != second.ID || list[1].ID != first.ID {
				t.Fatalf("sessions of ls: %+v; want %s then %s", list, second.ID, first.ID)
			}
			if s := list[1]; s.State != client.AgentDone || s.Message != "one" || len(s.Turns) != 1 || len(s.Transcript) == 0 {
				t.Errorf("a listed session is not the session's record: %+v", s)
			}
			if one, err := e.human.AgentSessions(ctx, "ls", 1); err != nil || len(one) != 1 || one[0].ID != second.ID {
				t.Errorf("limit 1: %+v %v", one, err)
			}
			for _, bad := range []struct {
				path   string
				status int
			}{
				{"/api/canvases/ls/agent-sessions?limit=0", 400},
				{"/api/canvases/ls/agent-sessions?limit=101", 400},
				{"/api/canvases/ls/agent-sessions?limit=x", 400},
				{"/api/canvases/nope/agent-sessions", 404},
			} {
				req, _ := http.NewRequest("GET", e.srv.URL+bad.path, nil)
				req.Header.Set("Authorization", "Bearer "+testAdmin)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != bad.status || resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("GET %s: %d %s %s, want a %d problem", bad.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, bad.status)
				}
			}
		})
	}
}
