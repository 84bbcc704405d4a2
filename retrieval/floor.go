package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Floor is the relevance floor. It answers one of three ways: the hits
// (confidence high); the hits marked weak (confidence low, with what is
// missing), so that an assistant can choose; or "nothing relevant"
// (declined, no hit). Losing an answerable question costs more than
// answering an unanswerable one with its hits marked weak, so a search is
// declined only when every signal is weak together: the lexical evidence
// (Evidence.Window + ScoreWeight × Evidence.Score, read over the query's
// content words weighted by rarity) is below DeclineEvidence, the vector
// similarity is below what the embedder's calibration says answerable
// questions reach, and the retrievers do not agree on the best hit. Below
// MinEvidence, a question asking a quantity whose words stand near no
// number, or a coverage below MinCoverage mark the answer weak, unless the
// calibrated similarity vouches for it. An address of the query that named
// something, or a question what a named term means, is always answered.
// `kgsync eval` calibrates the thresholds per embedder and can write them
// (Calibration, keyed by the embedder's fingerprint; docs/retrieval.md).
type Floor struct {
	// Disabled turns the floor off: every search returns its hits.
	Disabled bool
	// MinEvidence is the least Window + ScoreWeight × Score an answer
	// needs not to be weak, in [0, 1 + ScoreWeight].
	MinEvidence float64
	// DeclineEvidence is the evidence below which a search is declined
	// when no other signal vouches for its hits, in [0, MinEvidence].
	DeclineEvidence float64
	// ScoreWeight is the weight of the best hit's fused score in the
	// evidence, in [0, 1].
	ScoreWeight float64
	// MinCoverage is the least Evidence.Coverage an answer needs not to be
	// weak (0: not checked).
	MinCoverage float64
	// MinScore is the least fused score the best hit needs (0: any); a hit
	// below it is declined whatever its coverage.
	MinScore float64
	// Hits is how many of the best hits Coverage reads (default 3).
	Hits int
	// QuantityShare, for a question asking a quantity ("how many", "how
	// long", "сколько", "на какой срок"), is the least share of Window
	// its QuantityWindow must reach — the query's words must stand near a
	// number — for the answer not to be weak, in [0, 1] (0: not checked).
	QuantityShare float64
	// Calibration is the embedder's calibration (nil: none). Its
	// thresholds replace MinEvidence and DeclineEvidence, and its cosines
	// let the vector similarity vouch for hits; a calibration made with
	// another embedder must not be set (LoadCalibration checks).
	Calibration *Calibration
}

// DefaultFloor is the floor used when the config sets none.
// MinEvidence 0.82, DeclineEvidence 0.42 and ScoreWeight 0.4 are
// calibrated for the local hashing embedder on the golden tuning sets
// (testdata/golden: corpus.jsonl, heldout.jsonl, tuning-users.jsonl).
func DefaultFloor() Floor {
	return Floor{MinEvidence: 0.82, DeclineEvidence: 0.42, ScoreWeight: 0.4, Hits: 3, QuantityShare: 0.5}
}

// strength is the evidence the floor compares with MinEvidence.
func (f Floor) strength(e Evidence) float64 { return e.Window + f.ScoreWeight*e.Score }

// Confidence levels of an answer.
const (
	ConfidenceHigh = "high"
	ConfidenceLow  = "low"
)

// Verdict is the floor's decision on a search.
type Verdict struct {
	// Declined says the search answers "nothing relevant".
	Declined bool
	// Confidence is ConfidenceHigh or ConfidenceLow ("" when declined).
	Confidence string
	// Reason says why it was declined or is weak.
	Reason string
}

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
	// Window is the largest share of that weight that one of the best
	// hits holds within windowTerms consecutive words: a question whose
	// words a near-miss passage has far apart, or several passages have
	// between them, has a high Coverage and a low Window.
	Window float64 `json:"window"`
	// Quantity says the question asks for a quantity ("how many", "how
	// long", "what is the maximum number", "сколько", "на какой срок");
	// QuantityWindow is then the largest share of the query's weight one
	// of the best hits holds within windowTerms words that include a
	// quantity (a number that is no reference or list marker, or a
	// numeral written out). A near miss has the question's words but not
	// the number it asks for. A hit on a table row's attribute needs no
	// number in its text (its QuantityWindow is its Window): the row's
	// other columns hold the answer.
	Quantity       bool    `json:"quantity,omitempty"`
	QuantityWindow float64 `json:"quantity_window,omitempty"`
	// Unit is the unit the question asks its quantity in, when it names
	// one: a class ("time", "time or length", "money", "age", "size",
	// "frequency") or the noun counted ("judges"). QuantityWindow then
	// counts only numbers within three words of such a unit ("15 days",
	// "11 судей").
	Unit string `json:"unit,omitempty"`
	// Strength is Window + the floor's ScoreWeight × Score, what the
	// floor compares with its MinEvidence and DeclineEvidence.
	Strength float64 `json:"strength"`
	// Score and Cosine are the best hit's fused score and cosine.
	Score  float64 `json:"score"`
	Cosine float64 `json:"cosine"`
	// Agreement is how many kinds of retriever rank the best hit among
	// their first agreeRank: the vector one, and a lexical one (BM25 over
	// chunks or over elements); 2 when they agree.
	Agreement int `json:"agreement"`
	// Address and Term say an address or a defined term of the query named
	// something; Definition that the query asks what such a term means
	// ("what is …", "what does … mean", "define …") and the term's name
	// holds at least half of the query's weight of words (TermShare). An
	// address or a definition keeps the floor from declining.
	Address    bool `json:"address,omitempty"`
	Term       bool `json:"term,omitempty"`
	Definition bool `json:"definition,omitempty"`
	// TermShare is the largest share of the query's weight of words that
	// the name of one defined term it names holds.
	TermShare float64 `json:"term_share,omitempty"`
	// NoWords says the query has no content word (only short or common
	// words, "x", "what is it"): Coverage and Window are 1 for want of
	// anything to measure, and the hits rest on similarity alone.
	NoWords bool `json:"no_words,omitempty"`
}

// agreeRank is the rank within which a retriever agrees on the best hit.
const agreeRank = 3

// thresholds are the floor's MinEvidence and DeclineEvidence, the
// calibration's when it has them.
func (f Floor) thresholds() (minEv, declineEv float64) {
	minEv, declineEv = f.MinEvidence, f.DeclineEvidence
	if c := f.Calibration; c != nil {
		if c.MinEvidence > 0 {
			minEv = c.MinEvidence
		}
		if c.DeclineEvidence > 0 {
			declineEv = c.DeclineEvidence
		}
	}
	return minEv, min(declineEv, minEv)
}

// judge decides on e.
func (f Floor) judge(e Evidence) Verdict {
	high := Verdict{Confidence: ConfidenceHigh}
	if f.Disabled || e.Address || e.Definition {
		return high
	}
	if e.Score == 0 {
		return Verdict{Declined: true, Reason: "nothing in the pipeline matches the query"}
	}
	if e.Score < f.MinScore {
		return Verdict{Declined: true, Reason: fmt.Sprintf("the best hit's fused score %.3f is below the floor's min_score %.3f", e.Score, f.MinScore)}
	}
	minEv, declineEv := f.thresholds()
	st := f.strength(e)
	c := f.Calibration
	vouch := func(at float64) bool { return c != nil && at > 0 && e.Cosine >= at }
	missing := ""
	if len(e.Missing) > 0 {
		missing = "; missing: " + strings.Join(e.Missing, ", ")
	}
	if st < declineEv && e.Agreement < 2 && !vouch(cosineOf(c, true)) {
		why := fmt.Sprintf("the best hits hold at most %.0f%% of the query's weight of words together (evidence %.2f with the fused score %.2f; declined below %.2f)",
			100*e.Window, st, e.Score, declineEv)
		if c != nil && c.DeclineCosine > 0 {
			why += fmt.Sprintf(", and their similarity %.2f is below what answers reach with this embedder (%.2f)", e.Cosine, c.DeclineCosine)
		}
		return Verdict{Declined: true, Reason: why + missing}
	}
	var why string
	switch {
	case e.Quantity && f.QuantityShare > 0 && e.QuantityWindow < f.QuantityShare*e.Window:
		asked, number := "a quantity", "number"
		if e.Unit != "" {
			asked, number = fmt.Sprintf("a quantity (%s)", e.Unit), "number in that unit"
		}
		why = fmt.Sprintf("the question asks for %s and the best hits have no %s near its words (near one they hold %.0f%% of the query's weight of words, together %.0f%%)",
			asked, number, 100*e.QuantityWindow, 100*e.Window)
	case vouch(cosineOf(c, false)):
		return high
	case e.NoWords:
		why = "the query has no content word (only short or common words) to check the hits against: they rest on similarity alone"
	case e.Coverage < f.MinCoverage:
		why = fmt.Sprintf("the best hits hold %.0f%% of the query's weight of words (min_coverage %.0f%%)", 100*e.Coverage, 100*f.MinCoverage)
	case st < minEv:
		why = fmt.Sprintf("the best hits hold at most %.0f%% of the query's weight of words together (evidence %.2f with the fused score %.2f; min_evidence %.2f)",
			100*e.Window, st, e.Score, minEv)
	}
	if why != "" {
		return Verdict{Confidence: ConfidenceLow, Reason: why + missing}
	}
	return high
}

// cosineOf is the calibration's DeclineCosine (decline) or HighCosine.
func cosineOf(c *Calibration, decline bool) float64 {
	switch {
	case c == nil:
		return 0
	case decline:
		return c.DeclineCosine
	}
	return c.HighCosine
}

// evidence computes what the floor needs for a search's result: the
// coverage of the query's words by the best hits (weighted by idf over the
// pipeline's chunks in state), the best score and cosine, and whether an
// address or term matched; and the words' weights.
func (s *Searcher) evidence(ctx context.Context, d *corpusData, query string, words []queryWord, res *Result, order []int, fused map[int]fusedScore, stats *contentStats) (Evidence, []float64, error) {
	e := Evidence{Quantity: reAsksQuantity().MatchString(query)}
	for _, a := range res.Addresses {
		if len(a.Nodes) > 0 {
			e.Address = true
		}
	}
	e.Term = len(res.Terms) > 0
	if len(res.Hits) > 0 {
		e.Score, e.Cosine = res.Hits[0].Score, res.Hits[0].Cosine
		// The vector retriever and a lexical one (BM25 over chunks or
		// over elements: one kind of evidence) each count once.
		near := func(sig string) bool { r, ok := res.Hits[0].Ranks[sig]; return ok && r <= agreeRank }
		if near(SignalVector) {
			e.Agreement++
		}
		if near(SignalLexical) || near(SignalElement) {
			e.Agreement++
		}
	}
	if len(words) == 0 {
		e.Coverage, e.Window, e.NoWords = 1, 1, true
		return e, nil, nil
	}
	st, err := s.contentStats(ctx, words, stats)
	if err != nil {
		return e, nil, err
	}
	n := s.config().Floor.Hits
	if n <= 0 {
		n = 3
	}
	top := order[:min(n, len(order))]
	weights := make([]float64, len(words))
	var total, have float64
	for i, w := range words {
		weight, df := wordWeight(w, st)
		if df == 0 {
			e.Unknown = append(e.Unknown, w.word)
			if isNumber(w.word) {
				// A number no chunk has ("status 451", "article 999")
				// asks for something the pipeline does not hold.
				weight *= unknownNumberWeight
			}
		}
		weights[i] = weight
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
		} else if weight > 0 {
			e.Missing = append(e.Missing, w.word)
		}
	}
	if total == 0 {
		e.Coverage, e.Window = 1, 1
		return e, weights, nil
	}
	e.Coverage = have / total
	for _, name := range res.Terms {
		// The share of the query a defined term it names makes up
		// ("What is a Software Bill of Materials?": most of it).
		lang := DetectLanguage(name)
		if lang == "" {
			lang = LangEnglish
		}
		e.TermShare = max(e.TermShare, windowShare(indexTerms(name, lang), nil, words, weights, total, 1<<20))
	}
	var units map[string]bool // the unit the question asks its quantity in
	if e.Quantity {
		units, e.Unit = askedUnits(query)
	}
	for _, u := range top {
		terms, qty := d.seqOf(u)
		window := windowShare(terms, nil, words, weights, total, windowTerms)
		e.Window = max(e.Window, window)
		if e.Quantity {
			// A table row's attribute stands for its row, whose other
			// columns (an answer, a rate, a count) hold the quantity the
			// attribute's text need not: only a chunk is asked for a number.
			if d.units[u].Label == LabelChunk {
				window = windowShare(terms, withUnit(terms, qty, units), words, weights, total, windowTerms)
			}
			e.QuantityWindow = max(e.QuantityWindow, window)
		}
	}
	return e, weights, nil
}

func langOr(u Unit) string {
	if u.Lang != "" {
		return u.Lang
	}
	return DetectLanguage(u.Text)
}

// windowTerms is the width, in terms (stop words included), of the window
// of a hit's text that Evidence.Window reads.
const windowTerms = 24

// windowShare is the largest weight share of words found together within
// width consecutive terms of text; with need, only in windows holding a
// term need marks.
func windowShare(text []string, need []bool, words []queryWord, weights []float64, total float64, width int) float64 {
	of := map[string][]int{} // term → query words it matches
	for i, w := range words {
		for _, t := range w.terms {
			of[t] = append(of[t], i)
		}
	}
	best := 0.0
	count := make([]int, len(words))
	have := 0.0
	needed := 0 // marked terms in the window
	for i, t := range text {
		if need != nil && need[i] {
			needed++
		}
		for _, q := range of[t] {
			if count[q] == 0 {
				have += weights[q]
			}
			count[q]++
		}
		if j := i - width; j >= 0 {
			if need != nil && need[j] {
				needed--
			}
			for _, q := range of[text[j]] {
				count[q]--
				if count[q] == 0 {
					have -= weights[q]
				}
			}
		}
		if need == nil || needed > 0 {
			best = max(best, have)
		}
	}
	return best / total
}

// modalWords are the modal verbs a question is put with; the floor gives
// them no weight (they stay in the lexical query).
var modalWords = map[string]bool{
	"must": true, "may": true, "can": true, "should": true, "shall": true, "might": true, "could": true, "would": true,
	"will": true, "должен": true, "должна": true, "должно": true, "должны": true, "может": true, "могут": true,
	"debe": true, "deben": true, "puede": true, "pueden": true, "doit": true, "doivent": true, "peut": true, "peuvent": true,
}

// framingWords ask for a definition without naming what is defined
// ("How does the regulation define a manufacturer?"); the floor gives
// them no weight.
var framingWords = map[string]bool{
	"define": true, "defines": true, "defined": true, "definition": true, "defining": true,
	"определение": true, "определяет": true, "определяется": true, "определено": true,
	"definición": true, "definir": true, "définition": true, "définit": true,
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
