package postgres

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestHasSortedPrefix: hasSortedPrefix agrees with trying every prefix, on
// random keys and prefix sets over a small alphabet (so that prefixes nest,
// share beginnings and include the empty string).
func TestHasSortedPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(max int) string {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = "ab#:"[r.IntN(4)]
		}
		return string(b)
	}
	matched := 0
	for range 2000 {
		var prefixes []string
		for range r.IntN(6) {
			prefixes = append(prefixes, word(4))
		}
		slices.Sort(prefixes)
		prefixes = slices.Compact(prefixes)
		k := word(7)
		want := slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) })
		if got := hasSortedPrefix(prefixes, k); got != want {
			t.Fatalf("hasSortedPrefix(%q, %q) = %v, want %v", prefixes, k, got, want)
		}
		if want {
			matched++
		}
	}
	if matched < 200 || matched > 1800 {
		t.Fatalf("%d of 2000 keys matched: the cases do not exercise both answers", matched)
	}
}
