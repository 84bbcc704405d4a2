package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/state"
)

// Floor is the relevance floor: when the best hits carry too little of the
// query, a search answers "nothing relevant" instead of its nearest
// neighbours. The evidence it weighs is lexical and rank-based (Evidence),
// so it reads the same over state and over Memgraph; MinCoverage is
// calibrated per embedder by `kgsync eval --calibrate` (docs/retrieval.md).
type Floor struct {
	// Disabled turns the floor off: every search returns its hits.
	Disabled bool
	// MinCoverage is the least Evidence.Coverage a search needs to answer,
	// unless an address of the query named something.
	MinCoverage float64
	// MinScore is the least fused score the best hit needs (0: any); a hit
	// below it is declined whatever its coverage.
	MinScore float64
	// Hits is how many of the best hits Coverage reads (default 3).
	Hits int
}

// DefaultFloor is the floor used when the config sets none.
func DefaultFloor() Floor { return Floor{MinCoverage: 0.45, Hits: 3} }

// Evidence is what the relevance floor decides on.
type Evidence struct {
	// Coverage is the share of the query's content words, each weighted by
	// its inverse document frequency over the chunks, that occur (as
	// stems) in at least one of the best hits: 1 when they hold every word,
	// low when the rare words of the query are nowhere in them.
	Coverage float64 `json:"coverage"`
	// Missing are the query's content words none of the best hits has;
	// Unknown those no chunk of the pipeline has at all.
	Missing []string `json:"missing,omitempty"`
	Unknown []string `json:"unknown,omitempty"`
	// Score and Cosine are the best hit's fused score and cosine.
	Score  float64 `json:"score"`
	Cosine float64 `json:"cosine"`
	// Address and Term say an address or a defined term of the query named
	// something; an address keeps the floor from declining.
	Address bool `json:"address,omitempty"`
	Term    bool `json:"term,omitempty"`
}

// decline decides on e: the reason to decline, or false.
func (f Floor) decline(e Evidence) (string, bool) {
	if f.Disabled {
		return "", false
	}
	if e.Address {
		return "", false
	}
	if e.Score == 0 {
		return "nothing in the pipeline matches the query", true
	}
	if e.Score < f.MinScore {
		return fmt.Sprintf("the best hit's fused score %.3f is below the floor's min_score %.3f", e.Score, f.MinScore), true
	}
	if e.Coverage < f.MinCoverage {
		why := fmt.Sprintf("the best hits hold %.0f%% of the query's weight of words (floor: %.0f%%)", 100*e.Coverage, 100*f.MinCoverage)
		if len(e.Missing) > 0 {
			why += "; missing: " + strings.Join(e.Missing, ", ")
		}
		return why, true
	}
	return "", false
}

// evidence computes what the floor needs for a search's result: the
// coverage of the query's words by the best hits (weighted by idf over the
// pipeline's chunks in state), the best score and cosine, and whether an
// address or term matched.
func (s *Searcher) evidence(ctx context.Context, d *corpusData, words []queryWord, res *Result, order []int, fused map[int]fusedScore) (Evidence, error) {
	var e Evidence
	for _, a := range res.Addresses {
		if len(a.Nodes) > 0 {
			e.Address = true
		}
	}
	e.Term = len(res.Terms) > 0
	if len(res.Hits) > 0 {
		e.Score, e.Cosine = res.Hits[0].Score, res.Hits[0].Cosine
	}
	if len(words) == 0 {
		e.Coverage = 1
		return e, nil
	}
	st, _, err := s.Store.LexicalSearch(ctx, s.Pipeline, state.LexicalChunk, lexicalTerms(words))
	if err != nil {
		return e, fmt.Errorf("search: %w", err)
	}
	n := s.config().Floor.Hits
	if n <= 0 {
		n = 3
	}
	top := order[:min(n, len(order))]
	var total, have float64
	for _, w := range words {
		df := 0
		for _, t := range w.terms {
			df = max(df, st.DF[t])
		}
		weight := idf(max(st.Rows, 1), df)
		if df == 0 {
			e.Unknown = append(e.Unknown, w.word)
			if isNumber(w.word) {
				// A number no chunk has ("status 451", "article 999")
				// asks for something the pipeline does not hold.
				weight *= unknownNumberWeight
			}
		}
		total += weight
		found := false
		for _, u := range top {
			terms := d.termsOf(u)
			if slices.ContainsFunc(w.terms, func(t string) bool { return terms[t] }) {
				found = true
				break
			}
		}
		if found {
			have += weight
		} else {
			e.Missing = append(e.Missing, w.word)
		}
	}
	if total > 0 {
		e.Coverage = have / total
	}
	return e, nil
}

// unknownNumberWeight is how much more than its idf a number that no
// chunk of the pipeline has weighs in Coverage.
const unknownNumberWeight = 4

func isNumber(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return w != ""
}

// termsOf is the set of lexical terms of a unit's text (cached).
func (d *corpusData) termsOf(u int) map[string]bool {
	d.termsMu.Lock()
	defer d.termsMu.Unlock()
	if t, ok := d.unitTerms[u]; ok {
		return t
	}
	unit := d.units[u]
	lang := unit.Lang
	if lang == "" {
		lang = DetectLanguage(unit.Text)
	}
	t := map[string]bool{}
	for _, term := range indexTerms(unit.Text, lang) {
		t[term] = true
	}
	d.unitTerms[u] = t
	return t
}
