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
func (s *Searcher) proximityList(ctx context.Context, d *corpusData, words []queryWord, rest map[int]fusedScore, stats *contentStats) (ranked, error) {
	l := ranked{signal: SignalProximity}
	if len(words) == 0 || len(rest) == 0 {
		return l, nil
	}
	st, err := s.contentStats(ctx, words, stats)
	if err != nil {
		return l, err
	}
	weights := make([]float64, len(words))
	var total float64
	for i, w := range words {
		weights[i], _ = wordWeight(w, st)
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
		terms, _ := d.seqOf(u)
		share[u] = windowShare(terms, nil, words, weights, total, windowTerms)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(share[b], share[a]) })
	l.units = order
	return l, nil
}

// wordWeight is a query word's weight over the chunks st counts, its idf
// (modal and framing words, how a question is put, weigh nothing), and
// its document frequency: that of the commonest of its terms.
func wordWeight(w queryWord, st state.LexicalStats) (weight float64, df int) {
	for _, t := range w.terms {
		df = max(df, st.DF[t])
	}
	if modalWords[w.word] || framingWords[w.word] {
		return 0, df
	}
	return idf(max(st.Rows, 1), df), df
}

// contentStats is the lexical index's statistics over a pipeline's chunks
// for one search's content words: read once a search and shared by the
// proximity signal and the relevance floor, which ask for the same terms.
type contentStats struct {
	st   state.LexicalStats
	read bool
}

// contentStats returns the chunk statistics (rows, document frequencies)
// of words' terms, from c when a signal of this search has read them.
func (s *Searcher) contentStats(ctx context.Context, words []queryWord, c *contentStats) (state.LexicalStats, error) {
	if c != nil && c.read {
		return c.st, nil
	}
	st, _, err := s.Store.LexicalSearch(ctx, s.Pipeline, state.LexicalChunk, lexicalTerms(words))
	if err != nil {
		return st, fmt.Errorf("search: %w", err)
	}
	if c != nil {
		c.st, c.read = st, true
	}
	return st, nil
}

// termSeq is a unit's text as quantityTerms analyzes it: its terms in
// order and which of them are quantities.
type termSeq struct {
	terms []string
	qty   []bool
}

// maxUnitSeqs bounds corpusData.unitSeqs: about 200 terms of 16 bytes a
// unit, some 64 MB at the bound; past it the cache starts over.
const maxUnitSeqs = 20000

// seqOf returns unit u's text as quantityTerms analyzes it, cached.
func (d *corpusData) seqOf(u int) ([]string, []bool) {
	d.seqMu.Lock()
	if t, ok := d.unitSeqs[u]; ok {
		d.seqMu.Unlock()
		return t.terms, t.qty
	}
	d.seqMu.Unlock()
	terms, qty := quantityTerms(d.units[u].Text, langOr(d.units[u]))
	d.seqMu.Lock()
	if d.unitSeqs == nil || len(d.unitSeqs) >= maxUnitSeqs {
		d.unitSeqs = map[int]termSeq{}
	}
	d.unitSeqs[u] = termSeq{terms, qty}
	d.seqMu.Unlock()
	return terms, qty
}
