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

// TestFloorDecide: below MinEvidence an answer is weak (confidence low,
// with what is missing), not declined; it is declined only below
// DeclineEvidence when the retrievers do not agree on the best hit and no
// calibrated similarity vouches for it. An address or a definition of a
// named term is never declined nor weak.
func TestFloorDecide(t *testing.T) {
	f := Floor{MinEvidence: 0.75, DeclineEvidence: 0.45, ScoreWeight: 0.4}
	weak := Evidence{Coverage: 0.9, Window: 0.4, Score: 0.8, Missing: []string{"permission", "kid"}}
	v := f.judge(weak)
	require.False(t, v.Declined, "0.4 + 0.4 × 0.8 = 0.72: weak, not declined")
	require.Equal(t, ConfidenceLow, v.Confidence)
	require.Contains(t, v.Reason, "missing: permission, kid")
	require.Contains(t, v.Reason, "0.72")
	require.Equal(t, ConfidenceHigh, f.judge(Evidence{Coverage: 0.9, Window: 0.5, Score: 0.8}).Confidence, "0.5 + 0.32 = 0.82")

	none := Evidence{Coverage: 0.2, Window: 0.1, Score: 0.5, Cosine: 0.6, Missing: []string{"teapot"}}
	v = f.judge(none)
	require.True(t, v.Declined, "0.1 + 0.2 = 0.3 < 0.45")
	require.Contains(t, v.Reason, "missing: teapot")
	agreed := none
	agreed.Agreement = 2
	require.False(t, f.judge(agreed).Declined, "vector and lexical both rank the best hit first: weak, not declined")
	require.Equal(t, ConfidenceLow, f.judge(agreed).Confidence)

	// A calibrated embedder's similarity vouches for a paraphrase.
	cal := f
	cal.Calibration = &Calibration{Embedder: "openai/m/8", DeclineCosine: 0.5, HighCosine: 0.7}
	require.False(t, cal.judge(none).Declined, "cosine 0.6 >= decline_cosine 0.5")
	require.Equal(t, ConfidenceLow, cal.judge(none).Confidence, "below high_cosine")
	para := none
	para.Cosine = 0.8
	require.Equal(t, ConfidenceHigh, cal.judge(para).Confidence, "cosine 0.8 >= high_cosine 0.7")
	far := none
	far.Cosine = 0.3
	require.True(t, cal.judge(far).Declined)
	require.Contains(t, cal.judge(far).Reason, "similarity 0.30")

	a := none
	a.Address = true
	require.Equal(t, ConfidenceHigh, f.judge(a).Confidence, "an address that named something")
	d := none
	d.Definition = true
	require.Equal(t, ConfidenceHigh, f.judge(d).Confidence, "a question what a named term means")
	require.True(t, f.judge(Evidence{Window: 1, Score: 0}).Declined, "nothing matched")
	f.MinCoverage = 0.95
	require.Equal(t, ConfidenceLow, f.judge(Evidence{Coverage: 0.9, Window: 0.9, Score: 0.9}).Confidence, "below min_coverage")
	f.Disabled = true
	require.Equal(t, Verdict{Confidence: ConfidenceHigh}, f.judge(none))
}

// TestFloorCalibration: eval's calibration declines below the largest
// evidence that loses at most 5% of the answerable questions, marks weak
// below the least evidence that catches the most unanswerable ones while
// marking at most a quarter of the found answers weak, and reads the
// cosines from the best hits.
func TestFloorCalibration(t *testing.T) {
	var rs []QuestionResult
	add := func(kind string, window, cos float64, found bool) {
		r := QuestionResult{Kind: kind, Evidence: Evidence{Window: window, Score: 1, Cosine: cos}, Modes: map[string]QuestionMode{ModeHybrid: {}}}
		if found {
			r.Modes[ModeHybrid] = QuestionMode{AtK: 1}
		}
		rs = append(rs, r)
	}
	for _, w := range []float64{0.1, 0.2, 0.3, 0.9} {
		add(KindUnanswerable, w, 0.2, false)
	}
	for i := range 20 {
		add(KindLexical, 0.5+float64(i)/40, 0.3+float64(i)/50, true) // 0.5 … 0.975; cosine 0.3 … 0.68
	}
	add(KindParaphrase, 0.05, 0.1, false)
	c := calibrate(Floor{ScoreWeight: 0.5}, "m", rs)
	require.Equal(t, "m", c.Embedder)
	require.Equal(t, 25, c.Questions)
	require.InDelta(t, 0.32, c.DeclineCosine, 1e-9, "the 5th percentile of the found answers' cosines")
	require.InDelta(t, 0.21, c.HighCosine, 1e-9, "above every unanswerable one")
	// The found answers' cosines reach high_cosine: none is ever weak, so
	// the least threshold catching every unanswerable one (0.9 + 0.5) is
	// taken. Below decline_cosine are the paraphrase (0.05 + 0.5) and the
	// first answer (0.5 + 0.5): declining both would lose 2 of 21 (> 5%).
	require.InDelta(t, 1.41, c.MinEvidence, 1e-9)
	require.InDelta(t, 1.0, c.DeclineEvidence, 1e-9)
	rep := floorReport(Floor{MinEvidence: 0.75, DeclineEvidence: 0.5, ScoreWeight: 0.5}, "m", rs)
	require.Equal(t, 4, rep.Unanswerable)
	require.Equal(t, 21, rep.Answerable)
	require.InDelta(t, 0.5, rep.Weak, 1e-9, "0.1 + 0.5 and 0.2 + 0.5 are below 0.75")
	require.Zero(t, rep.Declined)
	require.Len(t, rep.Curve, 31, "0, 0.05, … 1.5")
}
