// Package retrieval searches a pipeline's graph: vector, lexical (BM25 over
// text indexes), exact term and address look-ups, fused by reciprocal rank
// fusion; a relevance floor that declines questions nothing answers;
// expansion of hits to the minimal sufficient context within a token
// budget; and eval, which scores all of it against a golden set.
//
// It reads the corpus from state through a CorpusLoader (the pipeline), the
// vectors from the embedding cache and the lexical index from state, and,
// with a Memgraph sink, queries Memgraph's vector and text indexes through
// Graph instead. Either way the fused score means the same: it is computed
// from ranks, not from the engines' raw scores.
package retrieval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/state"
)

// Graph is the part of a graph database sink a search queries
// (*memgraph.Sink implements it).
type Graph interface {
	// VectorSearch returns the k nodes nearest to vec in the vector index
	// called index, nearest first.
	VectorSearch(ctx context.Context, index string, k int, vec []float32) ([]memgraph.Hit, error)
	// TextSearch returns up to limit nodes of the text index called index
	// whose property matches any of terms, best first (BM25).
	TextSearch(ctx context.Context, index, property string, terms []string, limit int) ([]memgraph.Hit, error)
}

// Text indexes and properties the pipeline writes (pipeline.ChunkTextIndex …).
const (
	chunkTextIndex   = "chunk_lex"
	elementTextIndex = "element_lex"
	propLex          = "lex"
	propRowLex       = "_lex"
)

// Signals: the ranked lists a search fuses.
const (
	// SignalVector ranks units by the cosine of their vector and the query's.
	SignalVector = "vector"
	// SignalLexical ranks chunks and table rows by BM25 over their
	// normalized text.
	SignalLexical = "lexical"
	// SignalElement ranks elements by BM25; a chunk takes the best rank of
	// the elements it covers.
	SignalElement = "element"
	// SignalTerm lists the chunks defining a term the query names.
	SignalTerm = "term"
	// SignalAddress lists the chunks of the elements an address in the
	// query names ("Article 7(3)", "section 6.5.1").
	SignalAddress = "address"
)

// AllSignals are the signals in fusion order.
var AllSignals = []string{SignalVector, SignalLexical, SignalElement, SignalTerm, SignalProximity, SignalAddress}

// Weights are the reciprocal rank fusion weights of the signals.
type Weights struct {
	Vector, Lexical, Element, Term, Address float64
	// Proximity weighs SignalProximity: the best candidates re-ranked by
	// how much of the query one window of their text holds.
	Proximity float64
}

func (w Weights) of(signal string) float64 {
	switch signal {
	case SignalVector:
		return w.Vector
	case SignalLexical:
		return w.Lexical
	case SignalElement:
		return w.Element
	case SignalTerm:
		return w.Term
	case SignalAddress:
		return w.Address
	case SignalProximity:
		return w.Proximity
	}
	return 0
}

// Config tunes a search (config key `search`, docs/retrieval.md).
type Config struct {
	// K is the number of hits when a search asks for none.
	K int
	// Budget is the token budget of an expanded context when none is given.
	Budget int
	// Weights of the signals in the fusion.
	Weights Weights
	// RRFK is the rank constant of reciprocal rank fusion: a unit ranked r
	// by a signal of weight w adds w/(RRFK+r).
	RRFK float64
	// OverFetch is how many candidates each signal ranks per hit asked for
	// (at least 50), so that top-k is taken after filters.
	OverFetch int
	// Floor is the relevance floor.
	Floor Floor
}

// DefaultConfig is the configuration used when the config file sets none,
// measured on the golden set (docs/retrieval.md).
func DefaultConfig() Config {
	return Config{
		K:         5,
		Budget:    DefaultBudget,
		Weights:   Weights{Vector: 0.7, Lexical: 1, Element: 0.5, Term: 1, Address: 3, Proximity: 0.5},
		RRFK:      10,
		OverFetch: 10,
		Floor:     DefaultFloor(),
	}
}

// Searcher searches one pipeline. Create it with its fields set; it reads
// the corpus once, on first use, and is then safe for concurrent use.
type Searcher struct {
	// Pipeline names the pipeline in state.
	Pipeline string
	// Store is the pipeline's state: the embedding cache and the lexical
	// index.
	Store state.Store
	// Embedder embeds queries; it must be the pipeline's embedder.
	Embedder embed.Embedder
	// Corpus reads the pipeline's documents and units.
	Corpus CorpusLoader
	// Graph, when set, answers vector and lexical queries from the graph
	// database's indexes instead of state.
	Graph Graph
	// Config tunes the search; the zero value means DefaultConfig.
	Config *Config

	once sync.Once
	err  error
	c    *corpusData
}

// corpusData is the corpus with the indexes a search needs.
type corpusData struct {
	corpus *Corpus
	x      *corpusIndex
	addr   *addressIndex
	units  []Unit
	byID   map[string][]int // unit id → unit indexes (a row: one per attribute)
	// coveredBy lists, for each element id, the chunks covering it, the
	// chunk that starts with it first.
	coveredBy map[string][]int
	langs     []string
	vecMu     sync.Mutex
	vectors   map[uint64][]float32
	termsMu   sync.Mutex
	unitTerms map[int]map[string]bool
	termUse   map[string]bool // term id → used by many chunks
	// nodeTermSets are the lexical terms of an element's or section's own
	// text and title, by node id (guarded by termsMu).
	nodeTermSets map[string]map[string]bool
	// unitSeqs are units' texts as quantityTerms analyzes them, for the
	// proximity signal and the floor's window (guarded by seqMu; at most
	// maxUnitSeqs units, then it starts over).
	seqMu    sync.Mutex
	unitSeqs map[int]termSeq
	pat      patternCache
	headings *headingIndex

	textAddrMu sync.Mutex
	textAddr   map[string][]queryAddress

	titleIdx titleIndex

	// renditions are the rendition keys of the chunks another document
	// repeats (renditionKeys), for foldRenditions.
	renditions map[int]uint64
}

// Options narrow one search.
type Options struct {
	// K is the number of hits (0: Config.K).
	K int
	// Anchor and Attribute restrict the search to one embeddable
	// attribute's units (Attribute "" with Anchor set: all of the anchor's
	// units, its chunks included). Both empty: every unit of the pipeline.
	Anchor, Attribute string
	// Signals are the signals to fuse (nil: all).
	Signals []string
	// NoFloor returns the best hits even when the floor would decline.
	NoFloor bool
}

// Hit is one search result.
type Hit struct {
	// ID is the id of the node holding the vector: a chunk or an anchor's node.
	ID string `json:"id"`
	// Label is that node's label.
	Label string `json:"label"`
	// Property is the vector property ("embedding" for chunks).
	Property string `json:"property"`
	// Node is the record's node the hit belongs to (a chunk's document or row).
	Node string `json:"node"`
	// Score is the fused score in (0, 1]: the weighted reciprocal rank
	// fusion sum divided by the sum a unit ranked first by every signal that
	// found anything would get. It is computed from ranks only, so it means
	// the same over state and over Memgraph.
	Score float64 `json:"score"`
	// Ranks is the hit's rank (from 1) in each signal that found it.
	Ranks map[string]int `json:"ranks,omitempty"`
	// Cosine is the cosine similarity of the hit's vector and the query's,
	// in [-1, 1] (0 when the vector signal was not used).
	Cosine float64 `json:"cosine"`
	// Text is the embedded text (a chunk's context line and text).
	Text string `json:"text"`
	// Context is a chunk's context line (its heading path), Text's start.
	Context string `json:"context,omitempty"`
	// Address is a chunk's element address path ("" for attributes).
	Address string `json:"address,omitempty"`
	// Elements are the ids of the elements a chunk covers.
	Elements []string `json:"elements,omitempty"`
	// Tokens is the size of Text in tokens.
	Tokens int `json:"tokens"`
	// Match is the node of a chunk the query matched, the one the hit is
	// named by: the element (or section) an address of the query named,
	// the definition of a term it names, or the covered element holding
	// most of its words. Address is the chunk's own (its first element).
	// Nil for table rows.
	Match *Match `json:"match,omitempty"`
	// Expansions are the context Expand added for this hit.
	Expansions []Expansion `json:"expansions,omitempty"`
	// Renditions are the chunks of other documents with the same text,
	// folded into this hit: the same passage in another format or copy of
	// the document (a standard synced as .md, .docx and .pdf).
	Renditions []Rendition `json:"renditions,omitempty"`
}

// Result is what a search returns.
type Result struct {
	// Hits are the best units, best first; empty when the floor declined.
	Hits []Hit `json:"hits"`
	// Declined says the floor found nothing relevant; Reason says why
	// (or, for a weak answer, why it is weak).
	Declined bool   `json:"declined,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Confidence is ConfidenceHigh, or ConfidenceLow when the floor
	// answers with hits it finds weak; Missing then lists the query's
	// content words none of the best hits has. Empty when declined.
	Confidence string   `json:"confidence,omitempty"`
	Missing    []string `json:"missing,omitempty"`
	// Addresses are the addresses found in the query and what each names.
	Addresses []AddressMatch `json:"addresses,omitempty"`
	// Terms are the defined terms the query names.
	Terms []string `json:"terms,omitempty"`
	// Evidence is what the floor decided on.
	Evidence Evidence `json:"evidence"`
	// Warnings say what did not work as configured (a text index the graph
	// lacks: state answered instead).
	Warnings []string `json:"warnings,omitempty"`
}

// AddressMatch is one address of a query and the nodes it names.
type AddressMatch struct {
	// Text is the address as the query has it; Citation its canonical
	// form (chunker.ParseAddress).
	Text     string   `json:"text"`
	Citation string   `json:"citation"`
	Nodes    []string `json:"nodes"`
}

func (s *Searcher) config() Config {
	if s.Config != nil {
		return *s.Config
	}
	return DefaultConfig()
}

// load reads the corpus on first use.
func (s *Searcher) load(ctx context.Context) (*corpusData, error) {
	s.once.Do(func() {
		c, err := s.Corpus.Corpus(ctx)
		if err != nil {
			s.err = fmt.Errorf("read corpus of pipeline %q: %w", s.Pipeline, err)
			return
		}
		s.c = newCorpusData(c)
	})
	return s.c, s.err
}

func newCorpusData(c *Corpus) *corpusData {
	x := newCorpusIndex(c)
	x.terms = append(x.terms, inlineDefinitions(c, x)...)
	d := &corpusData{corpus: c, x: x, addr: newAddressIndex(x, c), headings: newHeadingIndex(c), units: c.Units, byID: map[string][]int{},
		coveredBy: map[string][]int{}, unitTerms: map[int]map[string]bool{}, nodeTermSets: map[string]map[string]bool{}, termUse: map[string]bool{}, textAddr: map[string][]queryAddress{}}
	langs := map[string]bool{}
	for _, doc := range c.Documents {
		if doc.Lang != "" {
			langs[doc.Lang] = true
		}
	}
	for i, u := range c.Units {
		d.byID[u.ID] = append(d.byID[u.ID], i)
		for _, e := range u.Elements {
			d.coveredBy[e] = append(d.coveredBy[e], i)
		}
		if u.Lang == "" && u.Label != LabelChunk {
			langs[LangEnglish] = true
		}
	}
	// The chunk that starts with an element comes first: it holds the
	// element whole, not as overlap.
	for e, list := range d.coveredBy {
		slices.SortStableFunc(list, func(a, b int) int {
			ea, eb := c.Units[a].Elements, c.Units[b].Elements
			return boolRank(len(ea) > 0 && ea[0] == e) - boolRank(len(eb) > 0 && eb[0] == e)
		})
	}
	for l := range langs {
		d.langs = append(d.langs, l)
	}
	slices.Sort(d.langs)
	d.renditions = renditionKeys(c.Units)
	return d
}

func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}

// nonDefinitionTermBoost weighs the term signal of a question that does
// not ask what a term means (tuned on the golden tuning sets).
const nonDefinitionTermBoost = 0.5

// ranked is one signal's list: unit indexes, best first; boost
// multiplies the signal's weight for this query (0 means 1).
type ranked struct {
	signal string
	units  []int
	boost  float64
}

// Search runs a hybrid search: every signal opts allows ranks its
// candidates (over-fetched), the lists are fused by weighted reciprocal
// rank fusion, the filters applied, the top K kept, and the relevance floor
// decides whether they answer the query at all.
func (s *Searcher) Search(ctx context.Context, query string, opts Options) (*Result, error) {
	if strings.TrimSpace(query) == "" {
		return nil, errors.New("search: empty query")
	}
	cfg := s.config()
	k := opts.K
	if k <= 0 {
		k = cfg.K
	}
	if k <= 0 {
		k = 5
	}
	fetch := max(50, k*max(cfg.OverFetch, 1))
	d, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	allowed := d.allowed(opts)
	use := map[string]bool{}
	for _, sig := range opts.Signals {
		use[sig] = true
	}
	if len(opts.Signals) == 0 {
		for _, sig := range AllSignals {
			use[sig] = true
		}
	}
	words := analyzeQuery(query, d.langs)
	// The floor weighs the words that ask something: not those of the
	// addresses and document names the query routes by.
	content := analyzeQuery(d.withoutRoutes(query), d.langs)
	res := &Result{Hits: []Hit{}}
	var lists []ranked
	cos := map[int]float64{}
	var qvec []float32
	addressed, defined := unitMatches{}, unitMatches{}
	subject := false // a definition question's subject named a term or heading
	if use[SignalVector] {
		l, c, q, err := s.vectorList(ctx, d, query, allowed, fetch)
		if err != nil {
			return nil, err
		}
		lists, cos, qvec = append(lists, l), c, q
	}
	if use[SignalLexical] && len(words) > 0 {
		l, err := s.lexicalList(ctx, d, words, allowed, fetch, &res.Warnings)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	if use[SignalElement] && len(words) > 0 {
		l, err := s.elementList(ctx, d, words, allowed, fetch, &res.Warnings)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	if use[SignalTerm] {
		l, names := d.termList(query, allowed, defined)
		if definitionRe().reAsksDefinition.MatchString(query) {
			l.boost = 2 // "what is X", "define X": X's definition first
		} else {
			// A question that only uses a term does not ask its meaning:
			// the definition is context (--expand adds it), not the answer.
			l.boost = nonDefinitionTermBoost
		}
		// A definition question whose subject names a defined term or a
		// section heading exactly goes to it first.
		var first []int
		for _, id := range d.definitionTargets(subjectsOf(d.withoutRoutes(query))) {
			for _, u := range d.chunksOf(id) {
				if ok(allowed, u) {
					if !slices.Contains(first, u) {
						first = append(first, u)
						defined.add(u, id)
					}
					break
				}
			}
		}
		if len(first) > 0 {
			l.units = append(first, slices.DeleteFunc(l.units, func(u int) bool { return slices.Contains(first, u) })...)
			l.boost = 3
			subject = true
		}
		lists, res.Terms = append(lists, l), names
	}
	// Over the candidates of every signal so far, so it runs last but for
	// the address signal (which the rest of the query ranks), and over the
	// words that ask something (as the floor's window). A definition
	// question the term layer routed asks for the definition: where the
	// question's words stand together does not matter.
	var stats contentStats // read once, for the proximity signal and the floor
	if use[SignalProximity] && cfg.Weights.Proximity > 0 && !subject {
		l, err := s.proximityList(ctx, d, content, fuse(lists, cfg), &stats)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	if use[SignalAddress] {
		// Several matches are ranked by the rest of the query: by their
		// fused score over the other signals.
		rest := fuse(lists, cfg)
		l, matches := d.addressList(query, allowed, rest, addressed)
		lists, res.Addresses = append(lists, l), matches
	}
	// A query that is nothing but addresses (and document names) is a
	// look-up: the other signals would rank the words of the address.
	if len(content) == 0 && len(res.Addresses) > 0 && slices.ContainsFunc(lists, func(l ranked) bool {
		return l.signal == SignalAddress && len(l.units) > 0
	}) {
		lists = slices.DeleteFunc(lists, func(l ranked) bool { return l.signal != SignalAddress })
	}
	fused := fuse(lists, cfg)
	order := make([]int, 0, len(fused))
	for u := range fused {
		order = append(order, u)
	}
	slices.SortFunc(order, func(a, b int) int {
		if fused[a].score != fused[b].score {
			if fused[a].score > fused[b].score {
				return -1
			}
			return 1
		}
		return strings.Compare(d.units[a].ID, d.units[b].ID)
	})
	order, folded := d.foldRenditions(order)
	for _, u := range order[:min(k, len(order))] {
		h := d.units[u].hit()
		h.Score, h.Ranks, h.Cosine = fused[u].score, fused[u].ranks, cos[u]
		h.Renditions = folded[u]
		if _, ok := cos[u]; !ok && qvec != nil {
			// Found by other signals than the graph's vector index: the
			// cosine from the cache, as over state.
			if v, ok := d.vectors[d.units[u].TextHash]; ok {
				h.Cosine = cosine(qvec, v)
			}
		}
		res.Hits = append(res.Hits, h)
	}
	var weights []float64
	res.Evidence, weights, err = s.evidence(ctx, d, query, content, res, order, fused, &stats)
	if err != nil {
		return nil, err
	}
	for i, u := range order[:len(res.Hits)] {
		res.Hits[i].Match = d.match(u, addressed, defined, content, weights)
	}
	res.Evidence.Definition = subject || res.Evidence.TermShare >= 0.5 && definitionRe().reAsksDefinition.MatchString(query)
	res.Evidence.Strength = cfg.Floor.strength(res.Evidence)
	v := cfg.Floor.judge(res.Evidence)
	switch {
	case v.Declined && !opts.NoFloor:
		res.Declined, res.Reason, res.Hits = true, v.Reason, []Hit{}
	case v.Declined || v.Confidence == ConfidenceLow:
		res.Confidence, res.Reason, res.Missing = ConfidenceLow, v.Reason, res.Evidence.Missing
	default:
		res.Confidence = ConfidenceHigh
	}
	return res, nil
}

// fusedScore is a unit's fused score and its rank per signal.
type fusedScore struct {
	score float64
	ranks map[string]int
}

// fuse is weighted reciprocal rank fusion: a unit ranked r (from 1) by a
// signal of weight w gets w/(k+r), summed over signals, divided by the sum
// of w/(k+1) over the signals that ranked anything.
func fuse(lists []ranked, cfg Config) map[int]fusedScore {
	out := map[int]fusedScore{}
	var best float64
	for _, l := range lists {
		w := cfg.Weights.of(l.signal)
		if l.boost > 0 {
			w *= l.boost
		}
		if w <= 0 || len(l.units) == 0 {
			continue
		}
		best += w / (cfg.RRFK + 1)
		for i, u := range l.units {
			f := out[u]
			if f.ranks == nil {
				f.ranks = map[string]int{}
			}
			if _, dup := f.ranks[l.signal]; dup {
				continue
			}
			f.ranks[l.signal] = i + 1
			f.score += w / (cfg.RRFK + float64(i+1))
			out[u] = f
		}
	}
	if best > 0 {
		for u, f := range out {
			f.score /= best
			out[u] = f
		}
	}
	return out
}

func (u Unit) hit() Hit {
	return Hit{ID: u.ID, Label: u.Label, Property: u.Property, Node: u.Node, Text: u.Text, Context: u.Context, Address: u.Address,
		Elements: u.Elements, Tokens: u.Tokens}
}

// allowed reports which units opts lets through (nil: all).
func (d *corpusData) allowed(opts Options) []bool {
	if opts.Anchor == "" && opts.Attribute == "" {
		return nil
	}
	out := make([]bool, len(d.units))
	for i, u := range d.units {
		if opts.Anchor != "" && u.NodeLabel != opts.Anchor {
			continue
		}
		if opts.Attribute != "" {
			if u.Label == LabelChunk {
				// A long attribute's chunks: "<node>#<attribute>" in the address.
				if !strings.Contains(u.Address, u.Node+"#"+opts.Attribute) {
					continue
				}
			} else if u.Attribute() != opts.Attribute {
				continue
			}
		}
		out[i] = true
	}
	return out
}

func ok(allowed []bool, u int) bool { return allowed == nil || allowed[u] }

// VectorIndexName is the vector index of a row's embeddable attribute
// (pipeline.VectorIndexName).
func VectorIndexName(label, attr string) string {
	return strings.ToLower(label) + "_" + strings.ToLower(attr) + "_embedding"
}

// vectorIndex is the vector index a unit's vector is in.
func (u Unit) vectorIndex() string {
	if u.Label == LabelChunk {
		return ChunkVectorIndex
	}
	return VectorIndexName(u.Label, u.Attribute())
}

// vectorsOf returns the cached vectors of the units, reading the embedding
// cache once for all units on first use.
func (s *Searcher) vectorsOf(ctx context.Context, d *corpusData) (map[uint64][]float32, error) {
	d.vecMu.Lock()
	defer d.vecMu.Unlock()
	if d.vectors != nil {
		return d.vectors, nil
	}
	hashes := make([]uint64, 0, len(d.units))
	for _, u := range d.units {
		hashes = append(hashes, u.TextHash)
	}
	vecs := map[uint64][]float32{}
	for i := 0; i < len(hashes); i += 1000 {
		part, err := s.Store.EmbeddingsGet(ctx, s.Embedder.Model(), hashes[i:min(i+1000, len(hashes))])
		if err != nil {
			return nil, fmt.Errorf("search: embedding cache: %w", err)
		}
		for h, v := range part {
			vecs[h] = v
		}
	}
	d.vectors = vecs
	return vecs, nil
}

// vectorList ranks the allowed units by the signed cosine of their vector
// and the query's: all of them from the embedding cache, or, with a Graph,
// the candidates its vector indexes return, re-scored from the cache (so
// both rank by the same signed cosine; Memgraph's similarity is |cos|).
func (s *Searcher) vectorList(ctx context.Context, d *corpusData, query string, allowed []bool, fetch int) (ranked, map[int]float64, []float32, error) {
	l := ranked{signal: SignalVector}
	vecs, err := s.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return l, nil, nil, fmt.Errorf("search: embed query: %w", err)
	}
	q := vecs[0]
	cache, err := s.vectorsOf(ctx, d)
	if err != nil {
		return l, nil, nil, err
	}
	cos := map[int]float64{}
	var cands []int
	if s.Graph == nil {
		for i := range d.units {
			if ok(allowed, i) {
				cands = append(cands, i)
			}
		}
	} else {
		indexes := map[string]bool{}
		for i, u := range d.units {
			if ok(allowed, i) {
				indexes[u.vectorIndex()] = true
			}
		}
		seen := map[int]bool{}
		for _, name := range sortedKeys(indexes) {
			// Twice the candidates: Memgraph ranks by |cos|, and a vector
			// pointing away from the query must not take the place of
			// one of the signed cosine's first (docs/memgraph.md §4).
			hits, err := s.Graph.VectorSearch(ctx, name, 2*fetch, q)
			if err != nil {
				return l, nil, nil, fmt.Errorf("search: vector index %s: %w", name, err)
			}
			for _, h := range hits {
				for _, i := range d.byID[h.ID] {
					if d.units[i].vectorIndex() == name && ok(allowed, i) && !seen[i] {
						seen[i] = true
						cands = append(cands, i)
						cos[i] = h.Similarity
					}
				}
			}
		}
	}
	for _, i := range cands {
		if v, ok := cache[d.units[i].TextHash]; ok {
			cos[i] = cosine(q, v)
		} else if s.Graph == nil {
			continue
		}
		l.units = append(l.units, i)
	}
	slices.SortStableFunc(l.units, func(a, b int) int {
		if cos[a] != cos[b] {
			if cos[a] > cos[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(d.units[a].ID, d.units[b].ID)
	})
	l.units = l.units[:min(fetch, len(l.units))]
	return l, cos, q, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// BM25 parameters (the usual k1 and b; SQLite FTS5's bm25() uses the same).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// idf is BM25's inverse document frequency, never negative.
func idf(rows, df int) float64 {
	return math.Log(1 + (float64(rows)-float64(df)+0.5)/(float64(df)+0.5))
}

// bm25 ranks a pipeline's lexical rows of kind for words: the BM25 sum
// over the words' distinct terms (their stems in the corpus's languages).
func (s *Searcher) bm25(ctx context.Context, kind string, words []queryWord) ([]state.LexicalMatch, []float64, error) {
	var terms []string
	for _, w := range words {
		terms = append(terms, w.terms...)
	}
	st, ms, err := s.Store.LexicalSearch(ctx, s.Pipeline, kind, terms)
	if err != nil {
		return nil, nil, fmt.Errorf("search: %w", err)
	}
	avg := 1.0
	if st.Rows > 0 && st.TotalLen > 0 {
		avg = float64(st.TotalLen) / float64(st.Rows)
	}
	// Summed over the distinct terms, as a text index's OR query sums
	// them (Tantivy in Memgraph), so both modes rank alike.
	distinct := lexicalTerms(words)
	scores := make([]float64, len(ms))
	for i, m := range ms {
		norm := bm25K1 * (1 - bm25B + bm25B*float64(m.Len)/avg)
		for _, t := range distinct {
			if tf := float64(m.TF[t]); tf > 0 {
				scores[i] += idf(st.Rows, st.DF[t]) * tf * (bm25K1 + 1) / (tf + norm)
			}
		}
	}
	return ms, scores, nil
}

// byScore returns the indexes of scores, best first, ties by key.
func byScore(scores []float64, key func(int) string) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if scores[a] != scores[b] {
			if scores[a] > scores[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(key(a), key(b))
	})
	return idx
}

// lexicalTerms are the terms of words, for a text index query.
func lexicalTerms(words []queryWord) []string {
	var out []string
	for _, w := range words {
		for _, t := range w.terms {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// lexicalList ranks chunks and table rows by BM25: over state's lexical
// index, or with a Graph over its text indexes (chunk_lex and each
// anchor's index).
func (s *Searcher) lexicalList(ctx context.Context, d *corpusData, words []queryWord, allowed []bool, fetch int, warn *[]string) (ranked, error) {
	l := ranked{signal: SignalLexical}
	add := func(id string) {
		for _, i := range d.byID[id] {
			if ok(allowed, i) && !slices.Contains(l.units, i) {
				l.units = append(l.units, i)
			}
		}
	}
	if s.Graph != nil {
		type hit struct {
			id    string
			score float64
		}
		var hits []hit
		indexes := map[string]string{}
		for i, u := range d.units {
			if !ok(allowed, i) {
				continue
			}
			if u.Label == LabelChunk {
				indexes[chunkTextIndex] = propLex
			} else {
				indexes[strings.ToLower(u.Label)+"_lex"] = propRowLex
			}
		}
		terms := lexicalTerms(words)
		var failed error
		for _, name := range sortedKeysOf(indexes) {
			hs, err := s.Graph.TextSearch(ctx, name, indexes[name], terms, fetch)
			if err != nil {
				failed = fmt.Errorf("text index %s: %w", name, err)
				break
			}
			for _, h := range hs {
				hits = append(hits, hit{h.ID, h.Similarity})
			}
		}
		if failed != nil {
			// No text index (analytical mode, Memgraph before 3.6): the
			// lexical index in state answers instead.
			*warn = append(*warn, fmt.Sprintf("lexical search over state: %v", failed))
			return s.stateLexicalList(ctx, d, words, allowed, fetch)
		}
		slices.SortStableFunc(hits, func(a, b hit) int {
			return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(a.id, b.id))
		})
		for _, h := range hits {
			add(h.id)
		}
		l.units = l.units[:min(fetch, len(l.units))]
		return l, nil
	}
	return s.stateLexicalList(ctx, d, words, allowed, fetch)
}

// stateLexicalList is lexicalList over state's lexical index.
func (s *Searcher) stateLexicalList(ctx context.Context, d *corpusData, words []queryWord, allowed []bool, fetch int) (ranked, error) {
	l := ranked{signal: SignalLexical}
	for _, kind := range []string{state.LexicalChunk, state.LexicalNode} {
		ms, scores, err := s.bm25(ctx, kind, words)
		if err != nil {
			return l, err
		}
		for _, i := range byScore(scores, func(i int) string { return ms[i].ID }) {
			for _, u := range d.byID[ms[i].ID] {
				if ok(allowed, u) && !slices.Contains(l.units, u) {
					l.units = append(l.units, u)
				}
			}
		}
	}
	l.units = l.units[:min(fetch, len(l.units))]
	return l, nil
}

func sortedKeysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// elementList ranks elements by BM25 and lists the chunks covering them,
// each at the rank of its best element.
func (s *Searcher) elementList(ctx context.Context, d *corpusData, words []queryWord, allowed []bool, fetch int, warn *[]string) (ranked, error) {
	l := ranked{signal: SignalElement}
	var ids []string
	var hs []memgraph.Hit
	var err error
	if s.Graph != nil {
		if hs, err = s.Graph.TextSearch(ctx, elementTextIndex, propLex, lexicalTerms(words), fetch); err != nil {
			*warn = append(*warn, fmt.Sprintf("element search over state: text index %s: %v", elementTextIndex, err))
		}
	}
	if s.Graph != nil && err == nil {
		for _, h := range hs {
			ids = append(ids, h.ID)
		}
	} else {
		ms, scores, err := s.bm25(ctx, state.LexicalElement, words)
		if err != nil {
			return l, err
		}
		for _, i := range byScore(scores, func(i int) string { return ms[i].ID }) {
			ids = append(ids, ms[i].ID)
		}
	}
	seen := map[int]bool{}
	for _, id := range ids {
		for _, u := range d.coveredBy[id] {
			if ok(allowed, u) && !seen[u] {
				seen[u] = true
				l.units = append(l.units, u)
				break // the chunk that holds the element whole
			}
		}
		if len(l.units) >= fetch {
			break
		}
	}
	return l, nil
}

// termList lists the chunks that define the terms the query names: a term
// whose name's words, stemmed, occur in the query in order. Longer names
// come first. defined gets, for each chunk listed, the defining node.
func (d *corpusData) termList(query string, allowed []bool, defined unitMatches) (ranked, []string) {
	l := ranked{signal: SignalTerm}
	qs := map[string][]string{}
	for _, lang := range append(slices.Clone(d.langs), "") {
		qs[lang] = Terms(query, lang)
	}
	plain := words(query)
	type match struct {
		t Term
		n int
	}
	var ms []match
	for _, t := range d.x.terms {
		doc := d.x.docOf[t.DefinedIn]
		lang := ""
		if doc != nil {
			lang = doc.Lang
		}
		for _, alias := range termAliases(t.Name) {
			name := Terms(alias, lang)
			// A one-word name must be the word itself, not a word of the
			// same stem: "connection" does not name CONNECT.
			if len(name) == 1 && (!slices.Contains(plain, strings.ToLower(strings.TrimSpace(alias))) || capsUnmatched(alias, query)) {
				continue
			}
			if len(name) > 0 && containsRun(qs[lang], name) {
				ms = append(ms, match{t, len(name)})
				break
			}
		}
	}
	slices.SortStableFunc(ms, func(a, b match) int { return b.n - a.n })
	var names []string
	seen := map[int]bool{}
	for _, m := range ms {
		names = append(names, m.t.Name)
		for _, u := range d.chunksOf(m.t.DefinedIn) {
			if ok(allowed, u) && !seen[u] {
				seen[u] = true
				l.units = append(l.units, u)
				defined.add(u, m.t.DefinedIn)
				break
			}
		}
	}
	return l, names
}

// definitionPatterns holds the patterns of definition questions, inline
// definitions and defined terms' names; definitionRe compiles them.
type definitionPatterns struct {
	reAsksDefinition, reDefinition, reParen *regexp.Regexp
}

// definitionRe returns the patterns of definition questions, inline
// definitions and defined terms' names, compiled on first use.
var definitionRe = sync.OnceValue(func() *definitionPatterns {
	return &definitionPatterns{
		// reAsksDefinition is a question asking what a term means.
		reAsksDefinition: regexp.MustCompile(`(?i)\b(?:what (?:is|are|does)\b.*\b(?:mean|stand for)|what (?:is|are) (?:a|an|the)?\s*\S|defin(?:e|es|ed|ition)\b|meaning of\b)|что (?:такое|означает)|что понимается под|определени\p{L}*|что (?:значит|обозначает)|подразумевается под|qu[ée] (?:es|son|significa)\b|qu[ée] se entiende por|definici[óo]n`),
		// reDefinition is an element that defines a term inline, the way
		// regulations and specifications do: "(30) ‘manufacturer’ means …",
		// "\"Артефакты соответствия\" - набор …", "«X» означает …", "«X»: …".
		reDefinition: regexp.MustCompile(`^\s*(?:\(\d+[a-z]?\)\s*|\d+[.)]\s*)?[‘'"“«]([^’'"”»]{2,80})[’'"”»](?:\s*\([^)]{1,40}\))?\s*(?:means\b|shall mean\b|is defined as\b|refers to\b|[-–—:]|означает\b|это\b|significa\b|se entiende\b|désigne\b)`),
		// reParen is a parenthesised part of a term's name: "(SBOM)".
		reParen: regexp.MustCompile(`\s*\(([^()]*)\)`),
	}
})

// inlineDefinitions are the terms the corpus's elements define inline
// that the document's own term list lacks (chunker.Terms finds term lists
// in definition sections; a regulation's "(30) ‘manufacturer’ means …"
// may not be one).
func inlineDefinitions(c *Corpus, x *corpusIndex) []Term {
	have := map[string]bool{}
	for _, t := range x.terms {
		have[t.DefinedIn] = true
	}
	var out []Term
	for _, d := range c.Documents {
		for _, n := range d.Nodes {
			if n.Label != LabelElement || have[n.ID] {
				continue
			}
			m := definitionRe().reDefinition.FindStringSubmatch(n.Text)
			if m == nil {
				continue
			}
			out = append(out, Term{ID: n.ID + "#definition", Name: strings.TrimSpace(m[1]), Definition: n.Text,
				DefinedIn: n.ID, DefinedInLabel: LabelElement})
		}
	}
	return out
}

// termAliases are the names a defined term may be named by: its name, and
// for "Software Bill of Materials (SBOM)" also the name without the
// parenthesis and the parenthesis alone.
func termAliases(name string) []string {
	out := []string{name}
	if m := definitionRe().reParen.FindAllStringSubmatch(name, -1); m != nil {
		out = append(out, strings.TrimSpace(definitionRe().reParen.ReplaceAllString(name, "")))
		for _, p := range m {
			if strings.TrimSpace(p[1]) != "" {
				out = append(out, p[1])
			}
		}
	}
	return out
}

// capsUnmatched reports whether name is one word in capitals ("GET",
// "CVE", "PUT") that query, written in both cases, writes only in lower
// case: in "What do I get back…" get is the verb, not the method. A query
// written all in lower case ("what does cve mean") matches it still.
func capsUnmatched(name, query string) bool {
	name = strings.TrimSpace(name)
	letters := 0
	for _, r := range name {
		if unicode.IsLetter(r) {
			if !unicode.IsUpper(r) {
				return false
			}
			letters++
		}
	}
	if letters < 2 || strings.ToLower(query) == query || strings.ToUpper(query) == query {
		return false
	}
	for _, w := range strings.FieldsFunc(query, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' }) {
		// Written in capitals inside a hyphenated word: "HTTP-GET", "152-ФЗ".
		if w == name || slices.Contains(strings.Split(w, "-"), name) {
			return false
		}
	}
	return true
}

// containsRun reports whether sub occurs in list as a contiguous run.
func containsRun(list, sub []string) bool {
	for i := 0; i+len(sub) <= len(list); i++ {
		if slices.Equal(list[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// chunksOf lists the chunks holding a node: the chunks covering an
// element, or for a section the chunks covering its elements, in
// document order.
func (d *corpusData) chunksOf(id string) []int {
	if l, ok := d.coveredBy[id]; ok {
		return l
	}
	var out []int
	seen := map[int]bool{}
	for _, e := range d.x.leaves(id) {
		for _, u := range d.coveredBy[e] {
			if !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	return out
}

// addressList routes the query's addresses: every node they name, in any
// document (or in the documents the query names), ranked by the documents
// named first, then by how many words of a document's title the query has,
// then by rest, the fused score of the other signals. Each node contributes
// the chunks holding it, its first chunk first; addressed gets, for each
// chunk, the nodes named in it.
func (d *corpusData) addressList(query string, allowed []bool, rest map[int]fusedScore, addressed unitMatches) (ranked, []AddressMatch) {
	l := ranked{signal: SignalAddress}
	addrs := d.queryAddresses(query)
	named := d.namedDocuments(query, addrs)
	type cand struct {
		u     int
		named bool
		title int
		score float64
		order int
	}
	qterms := map[string]bool{}
	for _, lang := range append(slices.Clone(d.langs), "") {
		for _, t := range Terms(query, lang) {
			qterms[t] = true
		}
	}
	titleMatch := map[*Document]int{}
	for _, doc := range d.corpus.Documents {
		seen := map[string]bool{}
		for _, name := range append([]string{doc.Title}, doc.Names...) {
			for _, t := range Terms(name, doc.Lang) {
				if qterms[t] && !seen[t] {
					seen[t] = true
					titleMatch[doc]++
				}
			}
		}
	}
	var matches []AddressMatch
	var cands []cand
	seen := map[int]bool{}
	for _, a := range addrs {
		var docs map[*Document]bool
		switch {
		case a.doc != nil:
			docs = map[*Document]bool{a.doc: true}
		case len(named) > 0:
			docs = named
		}
		nodes := d.addr.resolve(a.citation, docs)
		if len(nodes) == 0 && docs != nil {
			nodes = d.addr.resolve(a.citation, nil)
		}
		m := AddressMatch{Text: a.text, Citation: a.citation, Nodes: []string{}}
		for _, n := range nodes {
			m.Nodes = append(m.Nodes, n.ID)
			for j, u := range d.chunksOf(n.ID) {
				if !ok(allowed, u) {
					continue
				}
				addressed.add(u, n.ID)
				if seen[u] {
					continue
				}
				seen[u] = true
				doc := d.x.docOf[n.ID]
				cands = append(cands, cand{u: u, named: named[doc], title: titleMatch[doc], score: rest[u].score, order: j})
			}
		}
		matches = append(matches, m)
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.named != b.named {
			return boolRank(a.named) - boolRank(b.named)
		}
		// Then the documents whose title words the query has
		// ("Конституции", "the Go specification").
		if a.title != b.title {
			return b.title - a.title
		}
		// The first chunk of each node before the others.
		if (a.order == 0) != (b.order == 0) {
			return boolRank(a.order == 0) - boolRank(b.order == 0)
		}
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return a.order - b.order
	})
	for _, c := range cands {
		l.units = append(l.units, c.u)
	}
	return l, matches
}

// cosine is the cosine similarity of two vectors (0 when either is zero).
func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
