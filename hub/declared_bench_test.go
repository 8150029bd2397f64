package hub

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkDeclaredBrowsers: what an ack's check (SpeaksFor) and a
// browser's join and leave cost on a canvas with 10,000 declared browsers
// (neither scans the canvas's streams).
func BenchmarkDeclaredBrowsers(b *testing.B) {
	h := New(Config{QueueSize: 64})
	for i := range 10000 {
		s, err := h.Subscribe("c", &Browser{id: fmt.Sprint("b", i), owner: "u", since: time.Now().UnixNano()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Unsubscribe("c", s) })
	}
	b.Run("speaksFor", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := h.SpeaksFor("c", fmt.Sprint("b", i%10000), "u"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("join-and-leave", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s, err := h.Subscribe("c", &Browser{id: fmt.Sprint("x", i), owner: "u", since: time.Now().UnixNano()})
			if err != nil {
				b.Fatal(err)
			}
			h.Unsubscribe("c", s)
		}
	})
}
