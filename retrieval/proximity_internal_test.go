package retrieval

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSeqOfIsQuantityTermsAndBounded: the cached analysis of a unit is
// quantityTerms' own, and the cache never holds more than maxUnitSeqs
// units.
func TestSeqOfIsQuantityTermsAndBounded(t *testing.T) {
	d := &corpusData{}
	for i := range maxUnitSeqs + 10 {
		d.units = append(d.units, Unit{Text: fmt.Sprintf("Within 72 hours the controller notifies breach %d.", i), Lang: LangEnglish})
	}
	wantTerms, wantQty := quantityTerms(d.units[3].Text, LangEnglish)
	for range 2 { // computed, then cached
		terms, qty := d.seqOf(3)
		require.Equal(t, wantTerms, terms)
		require.Equal(t, wantQty, qty)
	}
	for u := range d.units {
		d.seqOf(u)
		require.LessOrEqual(t, len(d.unitSeqs), maxUnitSeqs)
	}
	terms, _ := d.seqOf(len(d.units) - 1)
	require.Contains(t, terms, fmt.Sprint(len(d.units)-1))
}
