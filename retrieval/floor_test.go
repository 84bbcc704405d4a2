package retrieval

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWindowShare: the floor's window reads the query's words found
// together. A near miss that has every word of the question, but far apart
// ("minimum" here, "pension" a sentence later), holds less of the query
// in any window than a passage that says it in one breath.
func TestWindowShare(t *testing.T) {
	words := analyzeQuery("What is the minimum pension?", []string{LangEnglish})
	require.Len(t, words, 2)
	weights := []float64{1, 3}
	together := indexTerms("The minimum pension is set by law.", LangEnglish)
	require.InDelta(t, 1, windowShare(together, nil, words, weights, 4, 8), 1e-9)
	apart := indexTerms("A minimum wage is guaranteed by the state, which also supports families, mothers, fathers, "+
		"children, disabled people and elderly citizens in many ways, and sets up a system of social services; "+
		"state pensions and allowances are paid.", LangEnglish)
	require.InDelta(t, 0.75, windowShare(apart, nil, words, weights, 4, 8), 1e-9, "only the heavier word in any 8-term window")
	require.InDelta(t, 1, windowShare(apart, nil, words, weights, 4, 1<<20), 1e-9, "both words in the whole text")
	require.Zero(t, windowShare(nil, nil, words, weights, 4, 8))
}

// TestFloorDecide: the evidence is Window + ScoreWeight × Score against
// MinEvidence; an address or a definition of a named term is never
// declined; MinCoverage, when set, is checked too.
func TestFloorDecide(t *testing.T) {
	f := Floor{MinEvidence: 0.75, ScoreWeight: 0.4}
	weak := Evidence{Coverage: 0.9, Window: 0.4, Score: 0.8, Missing: []string{"pension"}}
	why, no := f.decline(weak)
	require.True(t, no, "0.4 + 0.4 × 0.8 = 0.72 < 0.75")
	require.Contains(t, why, "missing: pension")
	require.Contains(t, why, "0.72")
	_, no = f.decline(Evidence{Coverage: 0.9, Window: 0.5, Score: 0.8})
	require.False(t, no, "0.5 + 0.32 = 0.82")
	a := weak
	a.Address = true
	_, no = f.decline(a)
	require.False(t, no, "an address that named something is never declined")
	d := weak
	d.Definition = true
	_, no = f.decline(d)
	require.False(t, no, "a question what a named term means is never declined")
	_, no = f.decline(Evidence{Window: 1, Score: 0})
	require.True(t, no, "nothing matched")
	f.MinCoverage = 0.95
	_, no = f.decline(Evidence{Coverage: 0.9, Window: 0.9, Score: 0.9})
	require.True(t, no, "below min_coverage")
	f.Disabled = true
	_, no = f.decline(weak)
	require.False(t, no)
}

// TestFloorCalibration: eval's calibration finds the least MinEvidence
// that declines the most unanswerable questions while losing at most 5% of
// the answerable ones whose answer was found, and draws the curve.
func TestFloorCalibration(t *testing.T) {
	var rs []QuestionResult
	add := func(kind string, window float64, found bool) {
		r := QuestionResult{Kind: kind, Evidence: Evidence{Window: window, Score: 1}, Modes: map[string]QuestionMode{ModeHybrid: {}}}
		if found {
			r.Modes[ModeHybrid] = QuestionMode{AtK: 1}
		}
		rs = append(rs, r)
	}
	for _, w := range []float64{0.1, 0.2, 0.3, 0.9} {
		add(KindUnanswerable, w, false)
	}
	for i := range 20 {
		add(KindLexical, 0.5+float64(i)/40, true) // 0.5 … 0.975
	}
	add(KindParaphrase, 0.05, false) // declined at any floor, but its answer was not found anyway
	rep := floorReport(Floor{MinEvidence: 0.75, ScoreWeight: 0.5}, rs)
	require.Equal(t, 4, rep.Unanswerable)
	require.Equal(t, 21, rep.Answerable)
	require.InDelta(t, 0.5, rep.Declined, 1e-9, "0.1 + 0.5 and 0.2 + 0.5 are below 0.75")
	require.InDelta(t, 1.0/21, rep.Lost, 1e-9)
	require.Zero(t, rep.LostFound)
	// Declining the fourth (1.4) would lose most found answers (1.0 …):
	// the calibrated floor is the least that declines three and loses none.
	require.InDelta(t, 0.81, rep.Calibrated, 1e-9)
	require.InDelta(t, 0.75, rep.CalibratedDeclined, 1e-9)
	require.Zero(t, rep.CalibratedLost)
	require.Len(t, rep.Curve, 31, "0, 0.05, … 1.5")
	require.Equal(t, FloorPoint{MinEvidence: 1.5, Declined: 1, LostFound: 20.0 / 21}, rep.Curve[30])
}
