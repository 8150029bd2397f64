package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

const seedExample = `{"surfaceUpdate":{"surfaceId":"main","components":[{"id":"root","component":{"Column":{"children":{"explicitList":["title","content"]}}}},{"id":"title","component":{"Text":{"text":{"literalString":"Canvas (A2UI v0.8)"},"usageHint":"h1"}}},{"id":"content","component":{"Text":{"text":{"literalString":"If you can read this, push works."},"usageHint":"body"}}}]}}
{"beginRendering":{"surfaceId":"main","root":"root"}}
`

func su(comps string) string {
	return `{"surfaceUpdate":{"surfaceId":"s","components":[` + comps + `]}}`
}

func TestA2UIValidation(t *testing.T) {
	allGood := strings.Join([]string{
		su(`{"id":"root","component":{"Column":{"children":{"explicitList":["t","i","ic","v","a","r","l","c","tabs","d","m","b","cb","tf","dt","mc","sl"]},"distribution":"spaceBetween","alignment":"stretch"}}}`),
		su(`{"id":"t","component":{"Text":{"text":{"path":"/user/name","literalString":"Guest"},"usageHint":"h2"}}},{"id":"i","component":{"Image":{"url":{"literalString":"https://example.com/a.png"},"fit":"cover","usageHint":"avatar"}}},{"id":"ic","component":{"Icon":{"name":{"literalString":"star"}}}}`),
		su(`{"id":"v","component":{"Video":{"url":{"path":"/video"}}}},{"id":"a","component":{"AudioPlayer":{"url":{"literalString":"a.mp3"},"description":{"literalString":"song"}}}}`),
		su(`{"id":"r","weight":1,"component":{"Row":{"children":{"template":{"componentId":"item","dataBinding":"/items"}}}}},{"id":"item","component":{"Text":{"text":{"path":"name"}}}}`),
		su(`{"id":"l","component":{"List":{"children":{"explicitList":[]},"direction":"horizontal"}}},{"id":"c","component":{"Card":{"child":"t"}}}`),
		su(`{"id":"tabs","component":{"Tabs":{"tabItems":[{"title":{"literalString":"One"},"child":"t"}]}}},{"id":"d","component":{"Divider":{"axis":"vertical"}}}`),
		su(`{"id":"m","component":{"Modal":{"entryPointChild":"b","contentChild":"t"}}},{"id":"b","component":{"Button":{"child":"t","primary":true,"action":{"name":"go","context":[{"key":"n","value":{"path":"/user/name"}},{"key":"k","value":{"literalNumber":3}}]}}}}`),
		su(`{"id":"cb","component":{"CheckBox":{"label":{"literalString":"ok"},"value":{"literalBoolean":true}}}},{"id":"tf","component":{"TextField":{"label":{"literalString":"Name"},"text":{"path":"/user/name"},"textFieldType":"shortText","validationRegexp":"[a-z]+"}}}`),
		su(`{"id":"dt","component":{"DateTimeInput":{"value":{"literalString":"2025-01-01"},"enableDate":true,"enableTime":false}}},{"id":"mc","component":{"MultipleChoice":{"selections":{"literalArray":["a"]},"options":[{"label":{"literalString":"A"},"value":"a"}],"maxAllowedSelections":1}}},{"id":"sl","component":{"Slider":{"value":{"literalNumber":5},"minValue":0,"maxValue":10}}}`),
		`{"dataModelUpdate":{"surfaceId":"s","path":"/user","contents":[{"key":"name","valueString":"Bob"},{"key":"age","valueNumber":3},{"key":"ok","valueBoolean":true},{"key":"addr","valueMap":[{"key":"city","valueString":"X"}]}]}}`,
		`{"beginRendering":{"surfaceId":"s","root":"root","styles":{"primaryColor":"#00BFFF","font":"Roboto"},"catalogId":"` + StandardCatalogID + `"}}`,
		``,
		`{"deleteSurface":{"surfaceId":"other"}}`,
	}, "\n")

	cases := []struct {
		name string
		body string
		want []string // "line:field-substring:reason-substring" per expected error, in order
	}{
		{"seed example", seedExample, nil},
		{"every component", allGood, nil},
		{"CRLF lines", strings.ReplaceAll(seedExample, "\n", "\r\n"), nil},
		{"empty body", "\n \n", []string{"1::no A2UI messages"}},
		{"not json", "{nope", []string{"1::not valid JSON"}},
		{"two values", `{"deleteSurface":{"surfaceId":"a"}} {}`, []string{"1::more than one JSON value"}},
		{"array", `[1]`, []string{"1::must be a JSON object"}},
		{"two kinds", `{"deleteSurface":{"surfaceId":"a"},"beginRendering":{"surfaceId":"a","root":"r"}}`, []string{"1::exactly one key"}},
		{"v0.9 kind", `{"createSurface":{"surfaceId":"a"}}`, []string{"1:createSurface:unknown message kind"}},
		{"missing surfaceId", `{"deleteSurface":{}}`, []string{"1:deleteSurface.surfaceId:is required"}},
		{"surfaceId type", `{"deleteSurface":{"surfaceId":3}}`, []string{"1:deleteSurface.surfaceId:must be a string"}},
		{"unknown prop on message", `{"deleteSurface":{"surfaceId":"a","x":1}}`, []string{"1:deleteSurface.x:unknown property"}},
		{"no components", `{"surfaceUpdate":{"surfaceId":"s","components":[]}}`, []string{"1:surfaceUpdate.components:must not be empty"}},
		{"missing components", `{"surfaceUpdate":{"surfaceId":"s"}}`, []string{"1:surfaceUpdate.components:is required"}},
		{"component without id", su(`{"component":{"Divider":{}}}`), []string{"1:components[0].id:is required"}},
		{"unknown component", su(`{"id":"x","component":{"Carousel":{}}}`), []string{"1:components[0].component:unknown component \"Carousel\""}},
		{"two types", su(`{"id":"x","component":{"Divider":{},"Text":{}}}`), []string{"1:components[0].component:exactly one key"}},
		{"missing required prop", su(`{"id":"x","component":{"Text":{}}}`), []string{"1:component.Text.text:is required"}},
		{"unknown prop", su(`{"id":"x","component":{"Text":{"text":{"literalString":"a"},"color":"red"}}}`), []string{"1:component.Text.color:unknown property"}},
		{"bad enum", su(`{"id":"x","component":{"Text":{"text":{"literalString":"a"},"usageHint":"h9"}}}`), []string{"1:Text.usageHint:must be one of"}},
		{"bad icon", su(`{"id":"x","component":{"Icon":{"name":{"literalString":"rocket"}}}}`), []string{"1:Icon.name.literalString:must be one of"}},
		{"bound value not object", su(`{"id":"x","component":{"Text":{"text":"hello"}}}`), []string{"1:Text.text:must be an object"}},
		{"bound literal type", su(`{"id":"x","component":{"Slider":{"value":{"literalNumber":"5"}}}}`), []string{"1:Slider.value.literalNumber:must be a number"}},
		{"children both", su(`{"id":"x","component":{"Row":{"children":{"explicitList":[],"template":{"componentId":"a","dataBinding":"/x"}}}}}`), []string{"1:Row.children:exactly one of"}},
		{"template no binding", su(`{"id":"x","component":{"Column":{"children":{"template":{"componentId":"x"}}}}}`), []string{"1:template.dataBinding:is required"}},
		{"button without action", su(`{"id":"x","component":{"Button":{"child":"x"}}}`), []string{"1:Button.action:is required"}},
		{"button action context", su(`{"id":"x","component":{"Text":{"text":{"literalString":"a"}}}},{"id":"b","component":{"Button":{"child":"x","action":{"name":"go","context":[{"key":"k"}]}}}}`), []string{"1:action.context[0].value:is required"}},
		{"weight type", su(`{"id":"x","weight":"1","component":{"Divider":{}}}`), []string{"1:components[0].weight:must be a number"}},
		{"begin without root", `{"beginRendering":{"surfaceId":"s"}}`, []string{"1:beginRendering.root:is required"}},
		{"foreign catalog", `{"beginRendering":{"surfaceId":"s","root":"r","catalogId":"https://x/cat"}}`, []string{"1:beginRendering.catalogId:only the v0.8 standard catalog"}},
		{"bad colour", `{"beginRendering":{"surfaceId":"s","root":"r","styles":{"primaryColor":"blue"}}}`, []string{"1:styles.primaryColor:#rrggbb"}},
		{"data entry two values", `{"dataModelUpdate":{"surfaceId":"s","contents":[{"key":"a","valueString":"x","valueNumber":1}]}}`, []string{"1:contents[0]:exactly one of"}},
		{"data entry no key", `{"dataModelUpdate":{"surfaceId":"s","contents":[{"valueString":"x"}]}}`, []string{"1:contents[0].key:is required"}},
		{"data nested bad", `{"dataModelUpdate":{"surfaceId":"s","contents":[{"key":"m","valueMap":[{"key":"b","valueBoolean":"yes"}]}]}}`, []string{"1:valueMap[0].valueBoolean:true or false"}},
		{"missing contents", `{"dataModelUpdate":{"surfaceId":"s"}}`, []string{"1:dataModelUpdate.contents:is required"}},
		{"dangling child", su(`{"id":"root","component":{"Column":{"children":{"explicitList":["nope"]}}}}`), []string{"1:explicitList[0]:\"nope\" is not defined"}},
		{"dangling card", su(`{"id":"c","component":{"Card":{"child":"ghost"}}}`), []string{"1:Card.child:\"ghost\" is not defined"}},
		{"dangling template", su(`{"id":"c","component":{"List":{"children":{"template":{"componentId":"tpl","dataBinding":"/x"}}}}}`), []string{"1:template.componentId:\"tpl\" is not defined"}},
		{"dangling tab", su(`{"id":"c","component":{"Tabs":{"tabItems":[{"title":{"literalString":"a"},"child":"zz"}]}}}`), []string{"1:tabItems[0].child:\"zz\" is not defined"}},
		{"dangling modal", su(`{"id":"c","component":{"Modal":{"entryPointChild":"c","contentChild":"q"}}}`), []string{"1:contentChild:\"q\" is not defined", "1::contains itself"}},
		{"ref resolved later in push", su(`{"id":"c","component":{"Card":{"child":"t"}}}`) + "\n" + su(`{"id":"t","component":{"Text":{"text":{"literalString":"x"}}}}`), nil},
		{"ref to other surface", su(`{"id":"c","component":{"Card":{"child":"t"}}}`) + "\n" + `{"surfaceUpdate":{"surfaceId":"other","components":[{"id":"t","component":{"Divider":{}}}]}}`, []string{"1:Card.child:\"t\" is not defined on surface \"s\""}},
		{"surface deleted in push", su(`{"id":"c","component":{"Card":{"child":"ghost"}}}`) + "\n" + `{"deleteSurface":{"surfaceId":"s"}}`, nil},
		{"root missing", su(`{"id":"a","component":{"Divider":{}}}`) + "\n" + `{"beginRendering":{"surfaceId":"s","root":"b"}}`, []string{"2:beginRendering.root:\"b\" is not defined"}},
		{"cycle", su(`{"id":"a","component":{"Card":{"child":"b"}}},{"id":"b","component":{"Column":{"children":{"explicitList":["a"]}}}}`), []string{"1:components[0]:contains itself", "1:components[1]:contains itself"}},
		{"many bad lines", "x\n" + seedExample + "y\n{}", []string{"1::not valid JSON", "4::not valid JSON", "5::exactly one key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, _ := newTestHost(t, Config{})
			res, err := h.PushA2UI(ctx, "sess", []byte(c.body))
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if res.Applied == 0 {
					t.Fatal("nothing applied")
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, canvas.ErrUnprocessable) {
				t.Fatalf("error %v, want *ValidationError", err)
			}
			if len(ve.Lines) != len(c.want) {
				t.Fatalf("got %d errors %+v, want %d %v", len(ve.Lines), ve.Lines, len(c.want), c.want)
			}
			for i, w := range c.want {
				parts := strings.SplitN(w, ":", 3)
				got := ve.Lines[i]
				if parts[0] != itoa(got.Line) || !strings.Contains(got.Field, parts[1]) || !strings.Contains(got.Reason, parts[2]) {
					t.Errorf("error %d: %+v, want %s", i, got, w)
				}
			}
			// Nothing was applied.
			if msgs, _ := h.A2UIMessages(ctx, "sess"); len(msgs) != 0 {
				t.Fatalf("state changed by a rejected push: %s", msgs)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestA2UIStateAndReplay(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	sub, snap, err := subscribe(h, "main")
	if err != nil || len(snap) != 0 {
		t.Fatalf("subscribe: %v %v", snap, err)
	}
	defer sub.Close()
	if _, err := h.PushA2UI(ctx, "main", []byte(seedExample)); err != nil {
		t.Fatal(err)
	}
	evs := <-sub.C // the push's two messages, together
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	for _, ev := range evs {
		if ev.Name != EventA2UI {
			t.Fatalf("event %q", ev.Name)
		}
	}
	data := `{"dataModelUpdate":{"surfaceId":"main","path":"/user","contents":[{"key":"name","valueString":"Bob"},{"key":"n","valueNumber":2}]}}`
	if _, err := h.PushA2UI(ctx, "main", []byte(data)); err != nil {
		t.Fatal(err)
	}
	// A rejected push publishes nothing.
	if _, err := h.PushA2UI(ctx, "main", []byte(data+"\nbroken")); err == nil {
		t.Fatal("broken push accepted")
	}
	// A second push can reference components of the first.
	more := su(`{"id":"x","component":{"Card":{"child":"title"}}}`)
	more = strings.Replace(more, `"s"`, `"main"`, 1)
	if _, err := h.PushA2UI(ctx, "main", []byte(more)); err != nil {
		t.Fatal(err)
	}
	// Another process (or a restart) on the same store has the same surfaces.
	h2 := peer(t, h)
	msgs, _ := h2.A2UIMessages(ctx, "main")
	want, _ := h.A2UIMessages(ctx, "main")
	if len(msgs) != 3 || string(mustJSON(msgs)) != string(mustJSON(want)) {
		t.Fatalf("replay after restart:\n%s\nwant\n%s", msgs, want)
	}
	joined := string(mustJSON(msgs))
	for _, s := range []string{`"surfaceUpdate"`, `"id":"x"`, `"valueString":"Bob"`, `"beginRendering"`, `"root":"root"`} {
		if !strings.Contains(joined, s) {
			t.Errorf("replay lacks %s: %s", s, joined)
		}
	}
	// The replay itself is a valid push.
	var lines []string
	for _, m := range msgs {
		lines = append(lines, string(m))
	}
	if _, err := ParseA2UI([]byte(strings.Join(lines, "\n")), 0); err != nil {
		t.Fatalf("replay does not validate: %v", err)
	}
	// A new subscriber gets the replay atomically.
	sub2, snap2, _ := subscribe(h, "main")
	defer sub2.Close()
	if len(snap2) != 3 {
		t.Fatalf("snapshot events: %d", len(snap2))
	}
	n, err := h.ResetA2UI(ctx, "main")
	if err != nil || n != 1 {
		t.Fatalf("reset: %d %v", n, err)
	}
	ev := (<-sub2.C)[0]
	if !strings.Contains(string(ev.Data), `"deleteSurface":{"surfaceId":"main"}`) {
		t.Fatalf("reset event %s", ev.Data)
	}
	if msgs, _ := h2.A2UIMessages(ctx, "main"); len(msgs) != 0 {
		t.Fatalf("state survives reset: %s", msgs)
	}
}

func TestA2UILimits(t *testing.T) {
	h, _ := newTestHost(t, Config{MaxA2UIBytes: 200, MaxA2UILines: 2, MaxComponents: 2, MaxSurfaces: 1})
	if _, err := h.PushA2UI(ctx, "l", []byte(strings.Repeat(" ", 201))); !errors.Is(err, canvas.ErrTooLarge) {
		t.Fatalf("size: %v", err)
	}
	d := `{"deleteSurface":{"surfaceId":"a"}}`
	if _, err := h.PushA2UI(ctx, "l", []byte(d+"\n"+d+"\n"+d)); err == nil || !strings.Contains(err.Error(), "more than 2 messages") {
		t.Fatalf("lines: %v", err)
	}
	three := `{"surfaceUpdate":{"surfaceId":"a","components":[{"id":"1","component":{"Divider":{}}},{"id":"2","component":{"Divider":{}}},{"id":"3","component":{"Divider":{}}}]}}`
	if _, err := h.PushA2UI(ctx, "l", []byte(three)); err == nil || !strings.Contains(err.Error(), "more than 2 components") {
		t.Fatalf("components: %v", err)
	}
	two := `{"surfaceUpdate":{"surfaceId":"a","components":[{"id":"1","component":{"Divider":{}}}]}}` + "\n" +
		`{"surfaceUpdate":{"surfaceId":"b","components":[{"id":"1","component":{"Divider":{}}}]}}`
	if _, err := h.PushA2UI(ctx, "l", []byte(two)); err == nil || !strings.Contains(err.Error(), "surfaces") {
		t.Fatalf("surfaces: %v", err)
	}
}

func TestA2UIStateLimit(t *testing.T) {
	h, _ := newTestHost(t, Config{MaxStateBytes: 2000})
	big := `{"dataModelUpdate":{"surfaceId":"a","path":"/k%d","contents":[{"key":"v","valueString":"` + strings.Repeat("x", 600) + `"}]}}`
	var err error
	n := 0
	for ; n < 10 && err == nil; n++ {
		_, err = h.PushA2UI(ctx, "st", []byte(strings.Replace(big, "%d", itoa(n), 1)))
	}
	if !errors.Is(err, canvas.ErrTooLarge) || n < 2 {
		t.Fatalf("after %d pushes: %v", n, err)
	}
	// The rejected push left the earlier state intact.
	msgs, _ := h.A2UIMessages(ctx, "st")
	if len(msgs) != 1 || strings.Contains(string(msgs[0]), "k"+itoa(n-1)) {
		t.Fatalf("state after a rejected push: %s", msgs)
	}
}

// TestA2UIDeepPathRefused: a dataModelUpdate path deeper than the data
// model's nesting limit is a 422 naming it, and changes nothing: the state
// another process (or a restart) reads stays whole.
func TestA2UIDeepPathRefused(t *testing.T) {
	a := openHost(t, Config{})
	good := `{"surfaceUpdate":{"surfaceId":"keep","components":[{"id":"t","component":{"Text":{"text":{"literalString":"hi"}}}}]}}`
	if _, err := a.PushA2UI(ctx, "s", []byte(good)); err != nil {
		t.Fatal(err)
	}
	for _, segs := range []int{33, 12000} {
		push := `{"dataModelUpdate":{"surfaceId":"other","path":"/` + strings.Repeat("a/", segs) + `","contents":[{"key":"k","valueString":"v"}]}}`
		_, err := a.PushA2UI(ctx, "s", []byte(push))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Lines[0].Field != "dataModelUpdate.path" {
			t.Fatalf("path of %d segments: %v", segs, err)
		}
	}
	// 20 segments and 13 levels of valueMap are 33 levels together.
	deepMap := `{"key":"k","valueString":"v"}`
	for range 13 {
		deepMap = `{"key":"m","valueMap":[` + deepMap + `]}`
	}
	push := `{"dataModelUpdate":{"surfaceId":"other","path":"/` + strings.Repeat("a/", 20) + `","contents":[` + deepMap + `]}}`
	if _, err := a.PushA2UI(ctx, "s", []byte(push)); err == nil || !strings.Contains(err.Error(), "path's segments count too") {
		t.Fatalf("path and valueMap over the limit together: %v", err)
	}
	if m, _ := peer(t, a).A2UIMessages(ctx, "s"); len(m) != 1 {
		t.Fatalf("another process reads %d messages, want the one surface", len(m))
	}
}

// TestA2UIResetEmptyKeepsStreams: resetting a session without surfaces
// changes nothing, so a live stream admits the next push (no false "missed
// updates" reset).
func TestA2UIResetEmptyKeepsStreams(t *testing.T) {
	h := openHost(t, Config{})
	sub, _, err := subscribe(h, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if n, err := h.ResetA2UI(ctx, "s"); err != nil || n != 0 {
		t.Fatalf("reset: %d %v", n, err)
	}
	if _, err := h.PushA2UI(ctx, "s", []byte(`{"surfaceUpdate":{"surfaceId":"m","components":[{"id":"d","component":{"Divider":{}}}]}}`)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range <-sub.C {
		if ev.Version != sub.seen+1 {
			t.Fatalf("the push after an empty reset has version %d, want %d (the next after the stream's snapshot)", ev.Version, sub.seen+1)
		}
	}
}

// TestA2UIBigPushKeepsSubscribers: a push of more messages than a
// subscriber's queue holds reaches a live subscriber whole (a push takes one
// place in the queue) and counts it.
func TestA2UIBigPushKeepsSubscribers(t *testing.T) {
	h := openHost(t, Config{})
	sub, _, err := subscribe(h, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var b strings.Builder
	const lines = 512 // more than a hub subscriber's queue of 256 publishes
	for i := range lines {
		fmt.Fprintf(&b, `{"dataModelUpdate":{"surfaceId":"m","path":"/k%d","contents":[{"key":"v","valueNumber":%d}]}}`+"\n", i, i)
	}
	res, err := h.PushA2UI(ctx, "s", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if evs := <-sub.C; res.Browsers != 1 || len(evs) != lines {
		t.Fatalf("push of %d lines: browsers %d, subscriber got %d events", lines, res.Browsers, len(evs))
	}
}

// TestA2UIStatesBounded: the decoded states of sessions nobody uses are not
// kept without bound (a viewer can open streams on any session name).
func TestA2UIStatesBounded(t *testing.T) {
	h := openHost(t, Config{})
	for i := range 1000 {
		sub, _, err := subscribe(h, fmt.Sprintf("x%d", i))
		if err != nil {
			t.Fatal(err)
		}
		sub.Close()
	}
	h.mu.Lock()
	n := len(h.sessions)
	h.mu.Unlock()
	if n > maxIdleStates+1 {
		t.Fatalf("%d session states kept after 1,000 sessions were used once", n)
	}
}
