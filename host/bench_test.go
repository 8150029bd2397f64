package host

import (
	"strings"
	"testing"
)

func BenchmarkParsePath(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParsePath("assets/img/hero%20shot.png"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPushA2UI(b *testing.B) {
	h := openHost(b, Config{})
	body := []byte(seedExample)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.PushA2UI(ctx, "bench", body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate100Components(b *testing.B) {
	var comps []string
	ids := []string{}
	for i := 0; i < 99; i++ {
		id := "t" + itoa(i)
		ids = append(ids, `"`+id+`"`)
		comps = append(comps, `{"id":"`+id+`","component":{"Text":{"text":{"path":"/items/`+id+`"},"usageHint":"body"}}}`)
	}
	comps = append(comps, `{"id":"root","component":{"Column":{"children":{"explicitList":[`+strings.Join(ids, ",")+`]}}}}`)
	body := []byte(`{"surfaceUpdate":{"surfaceId":"s","components":[` + strings.Join(comps, ",") + `]}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseA2UI(body, 0); err != nil {
			b.Fatal(err)
		}
	}
}
