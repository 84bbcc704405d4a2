package retrieval

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/chunker/baseline"
	"github.com/kgsync/kgsync/embed"
)

// Eval modes: what is measured side by side in one run.
const (
	// ModeVector is the vector signal alone.
	ModeVector = "vector"
	// ModeLexical is BM25 over chunks and rows alone.
	ModeLexical = "lexical"
	// ModeHybrid fuses every signal.
	ModeHybrid = "hybrid"
	// ModeExpand is hybrid search with its hits expanded within the budget.
	ModeExpand = "hybrid+expand"
	// ModeFlatBM25 and ModeFlatVector rank flat fixed-size chunks of the
	// same documents (chunker/baseline.FixedWindow), which know nothing of
	// their structure, by BM25 and by the same embedder.
	ModeFlatBM25   = "flat-bm25"
	ModeFlatVector = "flat-vector"
)

// AllModes are the eval modes in report order.
var AllModes = []string{ModeVector, ModeLexical, ModeHybrid, ModeExpand, ModeFlatBM25, ModeFlatVector}

// EvalOptions tune an eval.
type EvalOptions struct {
	// K is the number of hits a question gets (0: Config.K).
	K int
	// Budget is the expanded context's token budget (0: Config.Budget).
	Budget int
	// Modes are the modes to measure (nil: AllModes).
	Modes []string
	// FlatTokens is the size of a flat chunk in tokens (0: 400, about
	// 1,600 characters of English).
	FlatTokens int
}

// EvalReport is the result of an eval.
type EvalReport struct {
	// Golden names the golden set (its file) and HeldOut says it is held
	// out from tuning (HeldOut); set by the caller.
	Golden    string `json:"golden,omitempty"`
	HeldOut   bool   `json:"held_out,omitempty"`
	Pipeline  string `json:"pipeline"`
	Embedder  string `json:"embedder"`
	Questions int    `json:"questions"`
	K         int    `json:"k"`
	Budget    int    `json:"budget"`
	// Modes are the measured modes, in AllModes order.
	Modes []ModeReport `json:"modes"`
	// Floor is how the relevance floor did on the hybrid results.
	Floor FloorReport `json:"floor"`
	// Unresolved are the golden addresses that name no element ("q7: RFC
	// 9999 1: …"); their questions count as missed.
	Unresolved []string `json:"unresolved,omitempty"`
	// Results are the per-question outcomes.
	Results []QuestionResult `json:"results"`
}

// ModeReport is one mode's metrics, over all questions and split by kind
// and language.
type ModeReport struct {
	Mode   string             `json:"mode"`
	All    Metrics            `json:"all"`
	ByKind map[string]Metrics `json:"by_kind"`
	ByLang map[string]Metrics `json:"by_lang"`
}

// Metrics are the retrieval metrics of a set of answerable questions.
type Metrics struct {
	// Questions is the number of answerable questions.
	Questions int `json:"questions"`
	// Recall1 and Recall5 are the mean share of a question's answer
	// elements found in its first hit and in its first K hits.
	Recall1 float64 `json:"recall_at_1"`
	Recall5 float64 `json:"recall_at_k"`
	// Sufficiency is the share of questions whose context (the K hits, or
	// the expanded context) holds every answer and required-context
	// element whole.
	Sufficiency float64 `json:"sufficiency"`
	// MedianTokens and MeanTokens are the context sizes.
	MedianTokens float64 `json:"median_tokens"`
	MeanTokens   float64 `json:"mean_tokens"`
}

// FloorReport is the relevance floor's outcome on the hybrid results.
type FloorReport struct {
	// MinEvidence, DeclineEvidence, ScoreWeight and MinCoverage are the
	// floor's settings (a loaded calibration's thresholds when set).
	MinEvidence     float64 `json:"min_evidence"`
	DeclineEvidence float64 `json:"decline_evidence"`
	ScoreWeight     float64 `json:"score_weight"`
	MinCoverage     float64 `json:"min_coverage,omitempty"`
	// Unanswerable is the number of unanswerable questions; Declined the
	// share of them the floor declined, Weak the share it answered marked
	// low confidence, Caught the two together.
	Unanswerable int     `json:"unanswerable"`
	Declined     float64 `json:"declined"`
	Weak         float64 `json:"weak"`
	Caught       float64 `json:"caught"`
	// Answerable is the number of answerable questions; Lost the share of
	// them the floor declined, LostFound the share it declined although
	// the hits held an answer: what the floor costs. WeakAnswerable is
	// the share answered marked low confidence.
	Answerable     int     `json:"answerable"`
	Lost           float64 `json:"lost"`
	LostFound      float64 `json:"lost_found"`
	WeakAnswerable float64 `json:"weak_answerable"`
	// Calibration is the calibration measured on this set for this
	// embedder (`kgsync eval --calibrate` stores it), and
	// CalibratedLost, CalibratedCaught and CalibratedWeak its outcome.
	Calibration      Calibration `json:"calibration"`
	CalibratedLost   float64     `json:"calibrated_lost"`
	CalibratedCaught float64     `json:"calibrated_caught"`
	CalibratedWeak   float64     `json:"calibrated_weak_answerable"`
	// Curve is the trade-off of MinEvidence: the outcome at 0, 0.05, …
	// 1 + ScoreWeight, the other settings kept.
	Curve []FloorPoint `json:"curve,omitempty"`
}

// FloorPoint is the floor's outcome at one MinEvidence: the share of
// unanswerable questions declined or weak, and of answerable ones whose
// answer was found declined or weak.
type FloorPoint struct {
	MinEvidence float64 `json:"min_evidence"`
	Caught      float64 `json:"caught"`
	WeakFound   float64 `json:"weak_found"`
}

// QuestionResult is one question's outcome.
type QuestionResult struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Lang string `json:"lang"`
	// Modes has, per mode, the share of answers found at 1 and at K, and
	// whether the context was sufficient, with its size.
	Modes map[string]QuestionMode `json:"modes"`
	// Declined says the floor declined the hybrid search, Low that it
	// answered with low confidence; Evidence is what it decided on.
	Declined bool     `json:"declined"`
	Low      bool     `json:"low,omitempty"`
	Evidence Evidence `json:"evidence"`
	// Top are the hybrid hits: chunk id and the node each is named by
	// (Hit.Match).
	Top []string `json:"top"`
}

// QuestionMode is one question's outcome in one mode.
type QuestionMode struct {
	At1        float64 `json:"at_1"`
	AtK        float64 `json:"at_k"`
	Sufficient bool    `json:"sufficient"`
	Tokens     int     `json:"tokens"`
}

// target is a resolved golden address: the leaves that make it, each with
// the leaves of other documents holding the same text, and the same
// element in the other renditions of its document (another file with the
// same title: the .md, .docx and .pdf of one specification), any of which
// answers as well.
type target struct {
	addr string
	// options are the leaf lists that answer: the element's, then the
	// renditions'; each leaf with its same-text equivalents.
	options [][][]string
	rows    []string // a table row's node id
}

// Eval runs every question of a golden set in every mode of opts and
// reports recall@1 and @K, context sufficiency with the context size, and
// the relevance floor's declines, split by kind and language. Recall and
// sufficiency are measured without the floor; the floor is reported apart.
func (s *Searcher) Eval(ctx context.Context, qs []GoldenQuestion, opts EvalOptions) (*EvalReport, error) {
	d, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	cfg := s.config()
	k := opts.K
	if k <= 0 {
		k = max(cfg.K, 1)
	}
	budget := opts.Budget
	if budget <= 0 {
		budget = cfg.Budget
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	modes := opts.Modes
	if len(modes) == 0 {
		modes = AllModes
	}
	use := map[string]bool{}
	for _, m := range modes {
		if !slices.Contains(AllModes, m) {
			return nil, fmt.Errorf("eval: unknown mode %q (want %s)", m, strings.Join(AllModes, ", "))
		}
		use[m] = true
	}
	rep := &EvalReport{Pipeline: s.Pipeline, Embedder: s.Embedder.Model(), Questions: len(qs), K: k, Budget: budget}
	equiv := d.equivalents()
	var flat *flatIndex
	if use[ModeFlatBM25] || use[ModeFlatVector] {
		if flat, err = s.newFlatIndex(ctx, d, opts.FlatTokens, use[ModeFlatVector]); err != nil {
			return nil, err
		}
	}
	tok := chunker.DefaultTokenizer()
	for _, q := range qs {
		r := QuestionResult{ID: q.ID, Kind: q.Kind, Lang: q.Lang, Modes: map[string]QuestionMode{}}
		answers, unresolved := d.resolveAll(q.ID, q.Answers, equiv)
		required, unresolved2 := d.resolveAll(q.ID, q.Context, equiv)
		rep.Unresolved = append(append(rep.Unresolved, unresolved...), unresolved2...)
		score := func(hits []Hit, c *Context) QuestionMode {
			var m QuestionMode
			if len(q.Answers) == 0 {
				return m
			}
			hits = d.withRenditions(hits)
			m.At1 = found(answers, hits[:min(1, len(hits))])
			m.AtK = found(answers, hits[:min(k, len(hits))])
			covered := map[string]bool{}
			if c != nil {
				covered, m.Tokens = c.Covered(), c.Tokens
				for _, h := range hits {
					for _, e := range h.Elements {
						covered[e] = true
					}
				}
			} else {
				for _, h := range hits[:min(k, len(hits))] {
					for _, e := range h.Elements {
						covered[e] = true
					}
					n := h.Tokens
					if n == 0 {
						n = tok.Count(h.Text)
					}
					m.Tokens += n
				}
			}
			m.Sufficient = len(unresolved)+len(unresolved2) == 0 && whole(answers, covered, hits) && whole(required, covered, hits)
			return m
		}
		for _, mode := range []string{ModeVector, ModeLexical} {
			if !use[mode] {
				continue
			}
			res, err := s.Search(ctx, q.Question, Options{K: k, Signals: []string{mode}, NoFloor: true})
			if err != nil {
				return nil, fmt.Errorf("eval %s: %w", q.ID, err)
			}
			r.Modes[mode] = score(res.Hits, nil)
		}
		if use[ModeHybrid] || use[ModeExpand] {
			res, err := s.Search(ctx, q.Question, Options{K: k, NoFloor: true})
			if err != nil {
				return nil, fmt.Errorf("eval %s: %w", q.ID, err)
			}
			r.Evidence = res.Evidence
			v := cfg.Floor.judge(res.Evidence)
			r.Declined, r.Low = v.Declined, v.Confidence == ConfidenceLow
			for _, h := range res.Hits {
				where := h.Address
				if h.Match != nil {
					where = h.Match.ID
				}
				r.Top = append(r.Top, h.ID+" "+where)
			}
			if use[ModeHybrid] {
				r.Modes[ModeHybrid] = score(res.Hits, nil)
			}
			if use[ModeExpand] {
				// What a user of --expand receives: the context of the
				// same search, with the hits beyond k that fit.
				_, c, err := s.SearchExpand(ctx, q.Question, Options{K: k, NoFloor: true}, budget)
				if err != nil {
					return nil, fmt.Errorf("eval %s: %w", q.ID, err)
				}
				if c == nil {
					c = &Context{Budget: budget}
				}
				r.Modes[ModeExpand] = score(c.Hits, c)
			}
		}
		if flat != nil {
			for _, mode := range []string{ModeFlatBM25, ModeFlatVector} {
				if !use[mode] {
					continue
				}
				hits, err := flat.search(ctx, s, d, q.Question, mode, k)
				if err != nil {
					return nil, fmt.Errorf("eval %s: %w", q.ID, err)
				}
				r.Modes[mode] = score(hits, nil)
			}
		}
		rep.Results = append(rep.Results, r)
	}
	for _, mode := range AllModes {
		if use[mode] {
			rep.Modes = append(rep.Modes, summarize(mode, rep.Results))
		}
	}
	if use[ModeHybrid] || use[ModeExpand] {
		rep.Floor = floorReport(cfg.Floor, s.Embedder.Model(), rep.Results)
	}
	return rep, nil
}

// resolveAll resolves golden addresses to targets; unresolved ones are
// reported as "id: address: reason".
func (d *corpusData) resolveAll(id string, addrs []string, equiv map[string][]string) ([]target, []string) {
	var out []target
	var bad []string
	for _, a := range addrs {
		t := target{addr: a}
		nodes, _, err := d.lookup(a)
		if err != nil {
			if _, ok := d.byID[a]; ok { // a table row's node
				t.rows = append(t.rows, a)
				out = append(out, t)
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: %s", id, err))
			out = append(out, t)
			continue
		}
		var main [][]string
		for _, n := range nodes {
			for _, l := range d.x.leaves(n.ID) {
				main = append(main, append([]string{l}, equiv[l]...))
			}
		}
		if len(main) > 0 {
			t.options = append(t.options, main)
		}
		for _, alt := range d.renditionsOf(nodes) {
			var opt [][]string
			for _, l := range d.x.leaves(alt.ID) {
				opt = append(opt, append([]string{l}, equiv[l]...))
			}
			if len(opt) > 0 {
				t.options = append(t.options, opt)
			}
		}
		if len(nodes) == 0 {
			bad = append(bad, fmt.Sprintf("%s: %s: names a whole document, not an element", id, a))
		}
		out = append(out, t)
	}
	return out, bad
}

// renditionsOf are the nodes with the same citation as nodes in the other
// renditions of their documents: documents sharing a name other than a
// file name (their title).
func (d *corpusData) renditionsOf(nodes []*Node) []*Node {
	var out []*Node
	for _, n := range nodes {
		doc := d.x.docOf[n.ID]
		if doc == nil || n.Citation == "" {
			continue
		}
		titles := map[string]bool{}
		for _, name := range doc.Names {
			if name != doc.Key {
				titles[normalizeDocName(name)] = true
			}
		}
		for _, other := range d.corpus.Documents {
			if other == doc || !slices.ContainsFunc(other.Names, func(name string) bool {
				return name != other.Key && titles[normalizeDocName(name)]
			}) {
				continue
			}
			out = append(out, d.addr.resolve(n.Citation, map[*Document]bool{other: true})...)
		}
	}
	return out
}

// equivalents maps each leaf to the leaves of other documents with the
// same text (as lexical terms, at least 40 characters long): renditions of
// one document in several formats hold the same answer.
func (d *corpusData) equivalents() map[string][]string {
	byText := map[string][]string{}
	for _, doc := range d.corpus.Documents {
		for _, n := range doc.Nodes {
			if n.Label != LabelElement || len(n.Text) < 40 {
				continue
			}
			key := LexicalText(n.Text, doc.Lang)
			byText[key] = append(byText[key], n.ID)
		}
	}
	out := map[string][]string{}
	for _, ids := range byText {
		if len(ids) < 2 {
			continue
		}
		for _, id := range ids {
			for _, o := range ids {
				if o != id && d.x.docOf[o] != d.x.docOf[id] {
					out[id] = append(out[id], o)
				}
			}
		}
	}
	return out
}

// found is the share of targets of which a hit (or, expanded, its
// context) holds at least one leaf, or the row.
func found(ts []target, hits []Hit) float64 {
	if len(ts) == 0 {
		return 0
	}
	have := map[string]bool{}
	for _, h := range hits {
		have[h.ID], have[h.Node] = true, true
		for _, e := range h.Elements {
			have[e] = true
		}
		for _, x := range h.Expansions {
			for _, e := range x.Covers {
				have[e] = true
			}
		}
	}
	n := 0
	for _, t := range ts {
		if slices.ContainsFunc(t.rows, func(r string) bool { return have[r] }) ||
			slices.ContainsFunc(t.options, func(leaves [][]string) bool {
				return slices.ContainsFunc(leaves, func(alts []string) bool {
					return slices.ContainsFunc(alts, func(e string) bool { return have[e] })
				})
			}) {
			n++
		}
	}
	return float64(n) / float64(len(ts))
}

// whole reports whether every target has an option whose every leaf (or
// an equivalent) is covered, or its row among the hits.
func whole(ts []target, covered map[string]bool, hits []Hit) bool {
	for _, t := range ts {
		if len(t.rows) > 0 {
			if !slices.ContainsFunc(hits, func(h Hit) bool { return slices.Contains(t.rows, h.ID) }) {
				return false
			}
			continue
		}
		if !slices.ContainsFunc(t.options, func(leaves [][]string) bool {
			return !slices.ContainsFunc(leaves, func(alts []string) bool {
				return !slices.ContainsFunc(alts, func(e string) bool { return covered[e] })
			})
		}) {
			return false
		}
	}
	return true
}

func summarize(mode string, rs []QuestionResult) ModeReport {
	m := ModeReport{Mode: mode, ByKind: map[string]Metrics{}, ByLang: map[string]Metrics{}}
	groups := map[string][]QuestionMode{}
	kinds := map[string][]QuestionMode{}
	langs := map[string][]QuestionMode{}
	for _, r := range rs {
		if r.Kind == KindUnanswerable {
			continue
		}
		qm, ok := r.Modes[mode]
		if !ok {
			continue
		}
		groups[""] = append(groups[""], qm)
		kinds[r.Kind] = append(kinds[r.Kind], qm)
		langs[r.Lang] = append(langs[r.Lang], qm)
	}
	m.All = metrics(groups[""])
	for k, v := range kinds {
		m.ByKind[k] = metrics(v)
	}
	for l, v := range langs {
		m.ByLang[l] = metrics(v)
	}
	return m
}

func metrics(qs []QuestionMode) Metrics {
	m := Metrics{Questions: len(qs)}
	if len(qs) == 0 {
		return m
	}
	var tokens []float64
	for _, q := range qs {
		m.Recall1 += q.At1
		m.Recall5 += q.AtK
		if q.Sufficient {
			m.Sufficiency++
		}
		tokens = append(tokens, float64(q.Tokens))
		m.MeanTokens += float64(q.Tokens)
	}
	n := float64(len(qs))
	m.Recall1, m.Recall5, m.Sufficiency, m.MeanTokens = m.Recall1/n, m.Recall5/n, m.Sufficiency/n, m.MeanTokens/n
	sort.Float64s(tokens)
	if l := len(tokens); l%2 == 1 {
		m.MedianTokens = tokens[l/2]
	} else {
		m.MedianTokens = (tokens[l/2-1] + tokens[l/2]) / 2
	}
	return m
}

// floorReport measures the floor on the hybrid results, calibrates it for
// the embedder (calibrate) and draws the trade-off curve of MinEvidence.
func floorReport(f Floor, model string, rs []QuestionResult) FloorReport {
	minEv, declineEv := f.thresholds()
	rep := FloorReport{MinEvidence: minEv, DeclineEvidence: declineEv, ScoreWeight: f.ScoreWeight, MinCoverage: f.MinCoverage}
	type outcome struct{ declined, weak, caught, lost, lostFound, weakAns, weakFound float64 }
	measure := func(f Floor) outcome {
		var o outcome
		var un, ans, found int
		for _, r := range rs {
			v := f.judge(r.Evidence)
			low := !v.Declined && v.Confidence == ConfidenceLow
			hit := r.Modes[ModeHybrid].AtK > 0
			if r.Kind == KindUnanswerable {
				un++
				o.declined += b2f(v.Declined)
				o.weak += b2f(low)
				continue
			}
			ans++
			o.lost += b2f(v.Declined)
			o.weakAns += b2f(low)
			if hit {
				found++
				o.lostFound += b2f(v.Declined)
				o.weakFound += b2f(v.Declined || low)
			}
		}
		if un > 0 {
			o.declined, o.weak = o.declined/float64(un), o.weak/float64(un)
			o.caught = o.declined + o.weak
		}
		if ans > 0 {
			o.lost, o.lostFound, o.weakAns = o.lost/float64(ans), o.lostFound/float64(ans), o.weakAns/float64(ans)
		}
		if found > 0 {
			o.weakFound /= float64(found)
		}
		return o
	}
	for _, r := range rs {
		if r.Kind == KindUnanswerable {
			rep.Unanswerable++
		} else {
			rep.Answerable++
		}
	}
	o := measure(f)
	rep.Declined, rep.Weak, rep.Caught = o.declined, o.weak, o.caught
	rep.Lost, rep.LostFound, rep.WeakAnswerable = o.lost, o.lostFound, o.weakAns
	rep.Calibration = calibrate(f, model, rs)
	g := f
	g.Disabled = false
	g.Calibration = &rep.Calibration
	c := measure(g)
	rep.CalibratedLost, rep.CalibratedCaught, rep.CalibratedWeak = c.lost, c.caught, c.weakAns
	top := 1 + f.ScoreWeight
	for t := 0; float64(t)/100 <= top+1e-9; t += 5 {
		g := f
		g.Disabled = false
		g.MinEvidence = float64(t) / 100
		if g.Calibration != nil {
			cal := *g.Calibration
			cal.MinEvidence = 0
			g.Calibration = &cal
		}
		p := measure(g)
		rep.Curve = append(rep.Curve, FloorPoint{MinEvidence: g.MinEvidence, Caught: p.caught, WeakFound: p.weakFound})
	}
	return rep
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// flatIndex is the flat baseline: each document's text cut into fixed
// windows of tokens, with the elements each window holds.
type flatIndex struct {
	windows []flatWindow
	df      map[string]int
	avg     float64
	vectors [][]float32
}

type flatWindow struct {
	text     string
	terms    map[string]int
	n        int
	elements []string
}

// newFlatIndex cuts every document's text — its elements' text in document
// order, blank lines between — into windows of size tokens
// (chunker/baseline.FixedWindow, no overlap), and maps each window to the
// elements it holds at least half of (or 400 bytes of).
func (s *Searcher) newFlatIndex(ctx context.Context, d *corpusData, size int, vectors bool) (*flatIndex, error) {
	if size <= 0 {
		size = 400
	}
	tok := chunker.DefaultTokenizer()
	f := &flatIndex{df: map[string]int{}}
	for _, doc := range d.corpus.Documents {
		var b strings.Builder
		type span struct {
			id         string
			start, end int
		}
		var spans []span
		for _, n := range doc.Nodes {
			if n.Label != LabelElement || strings.TrimSpace(n.Text) == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			spans = append(spans, span{n.ID, b.Len(), b.Len() + len(n.Text)})
			b.WriteString(n.Text)
		}
		text := b.String()
		from := 0
		for _, w := range baseline.FixedWindow(text, size, 0, tok) {
			at := strings.Index(text[from:], w)
			if at < 0 {
				at = 0
			} else {
				at += from
			}
			end := at + len(w)
			from = max(from, end-1)
			fw := flatWindow{text: w, terms: map[string]int{}}
			for _, sp := range spans {
				o := min(end, sp.end) - max(at, sp.start)
				if o > 0 && (2*o >= sp.end-sp.start || o >= 400) {
					fw.elements = append(fw.elements, sp.id)
				}
			}
			for _, t := range Terms(w, doc.Lang) {
				fw.terms[t]++
				fw.n++
			}
			for t := range fw.terms {
				f.df[t]++
			}
			f.windows = append(f.windows, fw)
			f.avg += float64(fw.n)
		}
	}
	if len(f.windows) > 0 {
		f.avg /= float64(len(f.windows))
	}
	if vectors && len(f.windows) > 0 {
		texts := make([]string, len(f.windows))
		for i, w := range f.windows {
			texts[i] = w.text
		}
		vecs, _, err := embed.EmbedAll(ctx, s.Embedder, s.Store, texts)
		if err != nil {
			return nil, fmt.Errorf("eval: embed the flat baseline: %w", err)
		}
		f.vectors = vecs
	}
	return f, nil
}

// search ranks the flat windows for a query by BM25 or by cosine and
// returns the best k as hits.
func (f *flatIndex) search(ctx context.Context, s *Searcher, d *corpusData, query, mode string, k int) ([]Hit, error) {
	scores := make([]float64, len(f.windows))
	if mode == ModeFlatVector {
		vecs, err := s.Embedder.Embed(ctx, []string{query})
		if err != nil {
			return nil, err
		}
		for i := range f.windows {
			scores[i] = cosine(vecs[0], f.vectors[i])
		}
	} else {
		words := analyzeQuery(query, d.langs)
		for i, w := range f.windows {
			norm := bm25K1 * (1 - bm25B + bm25B*float64(w.n)/math.Max(f.avg, 1))
			for _, qw := range words {
				var best float64
				for _, t := range qw.terms {
					if tf := float64(w.terms[t]); tf > 0 {
						best = max(best, idf(len(f.windows), f.df[t])*tf*(bm25K1+1)/(tf+norm))
					}
				}
				scores[i] += best
			}
		}
	}
	order := byScore(scores, func(i int) string { return fmt.Sprintf("%09d", i) })
	var hits []Hit
	for _, i := range order[:min(k, len(order))] {
		if mode == ModeFlatBM25 && scores[i] == 0 {
			break
		}
		w := f.windows[i]
		hits = append(hits, Hit{ID: fmt.Sprintf("flat#%d", i), Label: "FlatChunk", Text: w.text, Elements: w.elements, Score: scores[i]})
	}
	return hits, nil
}
