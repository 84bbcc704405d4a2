package retrieval

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/state"
)

// SignalProximity re-ranks the best candidates of the other signals by the
// largest idf-weighted share of the query's words one window of
// windowTerms consecutive words of their text holds: the words of a
// question found together, not scattered over a long chunk.
const SignalProximity = "proximity"

// proximityPool is how many of the best candidates of the other signals
// the proximity signal re-ranks (50 ranked as 30 on the golden sets).
const proximityPool = 30

// proximityList ranks the best proximityPool units of rest (the fused
// ranking of the other signals) by the largest share of the query's
// idf-weighted words (over the chunks; modal and framing words weigh
// nothing, as for the relevance floor) one window of windowTerms words of
// their text holds; ties keep rest's order.
func (s *Searcher) proximityList(ctx context.Context, d *corpusData, words []queryWord, rest map[int]fusedScore) (ranked, error) {
	l := ranked{signal: SignalProximity}
	if len(words) == 0 || len(rest) == 0 {
		return l, nil
	}
	st, _, err := s.Store.LexicalSearch(ctx, s.Pipeline, state.LexicalChunk, lexicalTerms(words))
	if err != nil {
		return l, fmt.Errorf("search: %w", err)
	}
	weights := make([]float64, len(words))
	var total float64
	for i, w := range words {
		df := 0
		for _, t := range w.terms {
			df = max(df, st.DF[t])
		}
		weights[i] = idf(max(st.Rows, 1), df)
		if modalWords[w.word] || framingWords[w.word] {
			weights[i] = 0
		}
		total += weights[i]
	}
	if total == 0 {
		return l, nil
	}
	order := make([]int, 0, len(rest))
	for u := range rest {
		order = append(order, u)
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(rest[b].score, rest[a].score), strings.Compare(d.units[a].ID, d.units[b].ID))
	})
	order = order[:min(proximityPool, len(order))]
	share := map[int]float64{}
	for _, u := range order {
		terms, _ := quantityTerms(d.units[u].Text, langOr(d.units[u]))
		share[u] = windowShare(terms, nil, words, weights, total, windowTerms)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(share[b], share[a]) })
	l.units = order
	return l, nil
}
