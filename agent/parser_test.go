package agent

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

const posterJSON = "Sure! Here is the plan:\n```json\n" + `{"actions": [
 {"name": "think", "params": {"text": "Bold \"hero\" first \u2014 then notes \ud83d\ude00"}},
 {"name": "create_shape", "params": {"id": "hero", "type": "headline", "x": 80, "y": 60, "w": 720, "props": {"text": "RAW", "color": "brutalist orange", "size": "xl"}}},
 {"name": "create_shape", "params": {"id": "n1", "type": "sticky", "x": -12.5e1, "y": 1E2, "props": {"text": "one"}}},
 {"name": "update_shape", "params": {"id": "hero", "props": {"color": "ink"}, "rotation": 0}}
]}` + "\n```\nDone."

func collect(t *testing.T, p *Parser, chunks []string) (complete []ParsedAction, partials []ParsedAction) {
	t.Helper()
	for _, c := range chunks {
		done, part := p.Feed(c)
		complete = append(complete, done...)
		if part != nil {
			partials = append(partials, *part)
		}
	}
	return
}

func wantActions(t *testing.T) []map[string]any {
	t.Helper()
	s := posterJSON[strings.Index(posterJSON, "{") : strings.LastIndex(posterJSON, "}")+1]
	var doc struct {
		Actions []map[string]any `json:"actions"`
	}
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Actions
}

func TestParserChunkings(t *testing.T) {
	want := wantActions(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		var chunks []string
		rest := posterJSON
		for len(rest) > 0 {
			n := 1 + rng.IntN(12)
			if trial == 0 {
				n = 1
			}
			if n > len(rest) {
				n = len(rest)
			}
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		p := NewParser(0)
		got, partials := collect(t, p, chunks)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d complete actions, want %d", trial, len(got), len(want))
		}
		for i, a := range got {
			if a.Index != i || !a.Complete || a.Name != want[i]["name"] || !reflect.DeepEqual(a.Params, want[i]["params"]) {
				t.Fatalf("trial %d action %d = %+v, want %v", trial, i, a, want[i])
			}
		}
		if !p.Done() {
			t.Fatalf("trial %d: array not closed", trial)
		}
		for _, pa := range partials {
			if pa.Complete || pa.Index >= len(want) {
				t.Fatalf("bad partial %+v", pa)
			}
			// A partial's strings are prefixes of the final ones.
			if !strings.HasPrefix(want[pa.Index]["name"].(string), pa.Name) {
				t.Fatalf("partial name %q is not a prefix of %q", pa.Name, want[pa.Index]["name"])
			}
		}
	}
}

func TestParserPartialPreview(t *testing.T) {
	p := NewParser(0)
	_, part := p.Feed(`{"actions":[{"name":"create_shape","params":{"type":"geo","x":12`)
	if part == nil || part.Name != "create_shape" || part.Params["type"] != "geo" {
		t.Fatalf("partial = %+v", part)
	}
	if _, has := part.Params["x"]; has {
		t.Fatal("a number that may go on was previewed")
	}
	_, part = p.Feed(`3,"props":{"color":"yel`)
	if props := part.Params["props"].(map[string]any); props["color"] != "yel" || part.Params["x"] != 123.0 {
		t.Fatalf("partial = %+v", part)
	}
	done, part := p.Feed(`low"}}},`)
	if len(done) != 1 || part != nil || done[0].Params["props"].(map[string]any)["color"] != "yellow" {
		t.Fatalf("done %+v partial %+v", done, part)
	}
}

func TestParserGarbageAndEdgeCases(t *testing.T) {
	cases := map[string]int{
		"I cannot help with that.": 0,
		"{\"foo\": [1,2,{\"a\":\"}\"}], \"actions\": [{\"name\":\"think\",\"params\":{\"text\":\"x\"}}]}": 1,
		`[{"name":"think","params":{"text":"bare array"}}]`:                                               1,
		`{"actions": [{"name": "think", "params": {"text": "a"}} {"name": "x"}]}`:                         2, // a missing comma is tolerated
		`{"actions": [{"name": "think", "params": {"text": "a"}}, {"name": "x" "y"}]}`:                    2, // a malformed element is a bad action
		`{"actions": "none"}`: 0,
		`{"actions": [1, {"name":"think","params":{"text":"b"}}]}`:                              2,
		`{"actions": [{"name":"think","params":{"text":"\x01"}}]}`:                              1, // a bad action
		`{"actions": [{"name":"create_shape","params":{"x": 1e999, "y": -1e999}}]}`:             1,
		`{"actions": [{"name":"create_shape","params":{"x": NaN, "y": Infinity, "ok": true}}]}`: 1,
	}
	for in, n := range cases {
		p := NewParser(0)
		got, _ := collect(t, p, []string{in})
		if len(got) != n {
			t.Errorf("%q: %d actions, want %d", in, len(got), n)
		}
	}
	p := NewParser(10)
	got, _ := collect(t, p, []string{`{"actions":[{"name":"think","params":{"text":"x"}}]}`})
	if len(got) != 0 || !p.Overflowed() {
		t.Fatalf("bound ignored: %v", got)
	}
}

// TestParserProseFencesAndBadElements: the JSON is found after prose that
// holds brackets, a ```json fence is preferred, and a malformed element is
// reported as one bad (nameless) action without losing the ones after it,
// however the text is cut into chunks.
func TestParserProseFencesAndBadElements(t *testing.T) {
	think := func(text string) string { return `{"name":"think","params":{"text":"` + text + `"}}` }
	cases := []struct {
		name, in string
		want     []string // the texts of the think actions, "!" for a bad action
		done     bool
	}{
		{"brackets in prose before the fence", "Sure [plan below]:\n```json\n{\"actions\":[" + think("a") + "]}\n```", []string{"a"}, true},
		{"braces in prose before the fence", "I will use {curly} braces.\n```json\n{\"actions\":[" + think("a") + "]}\n```", []string{"a"}, true},
		{"a bare fence", "Plan: [1] then [2].\n```\n{\"actions\":[" + think("a") + "]}\n```", []string{"a"}, true},
		{"a fence of another language first", "```python\nx = {\"actions\": [1]}\n```\n```json\n{\"actions\":[" + think("a") + "]}\n```", []string{"a"}, true},
		{"unfenced after prose with brackets", "Here [is] the {plan}: {\"actions\": [" + think("a") + "]}", []string{"a"}, true},
		{"a bare array after prose", "Steps [below]\n[" + think("a") + "," + think("b") + "]", []string{"a", "b"}, true},
		{"a trailing comma in an element is tolerated", "```json\n{\"actions\":[{\"name\":\"think\",\"params\":{\"text\":\"a\"},}," + think("b") + ",]}\n```", []string{"a", "b"}, true},
		{"a trailing comma in the last element is tolerated", `{"actions":[` + think("a") + `,{"name":"think","params":{"text":"b",}}]}`, []string{"a", "b"}, true},
		{"a missing comma between members is tolerated", `{"actions":[{"name":"think" "params":{"text":"a"}}]}`, []string{"a"}, true},
		{"keys without quotes (JavaScript)", "{actions: [{name: \"think\", params: {text: \"a\",},},]}", []string{"a"}, true},
		{"a doubled colon", `{"actions":[{"name":"think","params"::{"text":"a"}},` + think("b") + `]}`, []string{"!", "b"}, true},
		{"a stray token", `{"actions":[` + think("a") + `, oops, ` + think("b") + `]}`, []string{"a", "!", "b"}, true},
		{"brackets inside a bad element's strings", `{"actions":[{"name": : "]}, {"},` + think("b") + `]}`, []string{"!", "b"}, true},
		{"a bad element at the end of the text", `{"actions":[` + think("a") + `,{"name":"x" ::}`, []string{"a", "!"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{1, 2, 3, 7, 64, len(tc.in)} {
				p := NewParser(0)
				var chunks []string
				for i := 0; i < len(tc.in); i += size {
					chunks = append(chunks, tc.in[i:min(i+size, len(tc.in))])
				}
				got, _ := collect(t, p, chunks)
				var texts []string
				for i, a := range got {
					if a.Index != i || !a.Complete {
						t.Fatalf("chunks of %d: action %d = %+v", size, i, a)
					}
					switch {
					case a.Name == "":
						texts = append(texts, "!")
					case a.Name == "think":
						texts = append(texts, a.Params["text"].(string))
					default:
						t.Fatalf("chunks of %d: action %+v", size, a)
					}
				}
				if !reflect.DeepEqual(texts, tc.want) || p.Done() != tc.done {
					t.Fatalf("chunks of %d: actions %q done %v, want %q done %v", size, texts, p.Done(), tc.want, tc.done)
				}
			}
		})
	}
}

func TestParseStringEscapesCut(t *testing.T) {
	for _, in := range []string{`"ab\`, `"ab\u00`, `"ab\ud83d`, "\"ab\xe2\x82"} {
		s, ok, _ := parseString([]byte(in), 0)
		if ok || s != "ab" {
			t.Errorf("%q → %q %v, want \"ab\" cut", in, s, ok)
		}
	}
}

func BenchmarkParserFeed(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := NewParser(0)
		for j := 0; j < len(posterJSON); j += 8 {
			end := min(j+8, len(posterJSON))
			p.Feed(posterJSON[j:end])
		}
	}
}
