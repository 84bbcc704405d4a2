package retrieval

import "testing"

// TestCapsUnmatchedHyphenated: a term written in capitals inside a
// hyphenated word ("HTTP-GET", "152-ФЗ") is written in capitals, so the
// question names it; written in lower case there, it does not.
func TestCapsUnmatchedHyphenated(t *testing.T) {
	for _, c := range []struct {
		name, query string
		want        bool
	}{
		{"GET", "How does an HTTP-GET request work?", false},
		{"ФЗ", "Что требует 152-ФЗ о персональных данных?", false},
		{"РФ", "Какие законы РФ применимы?", false},
		{"ФЗ", "Что требует 152-фз о персональных Данных?", true},
		{"GET", "What do I get back?", true},
	} {
		if got := capsUnmatched(c.name, c.query); got != c.want {
			t.Errorf("capsUnmatched(%q, %q) = %v, want %v", c.name, c.query, got, c.want)
		}
	}
}
