package convert

import (
	"strconv"
	"testing"
)

// TestAppendQuoteIsStrconvs: the signatures stored with imported objects
// hash appendQuote's text, so it must stay strconv.Quote's exactly.
func TestAppendQuoteIsStrconvs(t *testing.T) {
	for r := rune(0); r < 0x3000; r++ {
		for _, s := range []string{string(r), "a" + string(r) + "b", "plain ASCII ~", "\x7f\"\\", "bad\xff"} {
			if got, want := string(appendQuote([]byte("x"), s)), "x"+strconv.Quote(s); got != want {
				t.Fatalf("appendQuote(%q) = %s, want %s", s, got, want)
			}
		}
	}
}
