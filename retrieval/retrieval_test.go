package retrieval_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/corpus"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// testDocs are the corpus documents the tests search: English and Russian,
// numbered sections, articles with parts, tables, defined terms.
var testDocs = []string{"rfc7239.txt", "constitutionrf.txt", "spdx-2.3-package-information.md", "openchain-security-specification-1.1.md"}

type fixture struct {
	p     *pipeline.Pipeline
	store state.Store
}

var (
	fixtureOnce sync.Once
	fixtureDir  string
	shared      *fixture
	sharedErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		_ = shared.store.Close()
	}
	if fixtureDir != "" {
		_ = os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// synced is one pipeline over testDocs, synced once for all the read-only
// tests of the package.
func synced(t *testing.T) *fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureDir, sharedErr = os.MkdirTemp("", "retrieval-test")
		if sharedErr != nil {
			return
		}
		shared, sharedErr = newFixture(t, fixtureDir, testDocs)
	})
	require.NoError(t, sharedErr)
	return shared
}

func newFixture(t testing.TB, dir string, names []string) (*fixture, error) {
	root := filepath.Join(dir, "docs")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(corpus.Docs(t), n))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(root, n), b, 0o644); err != nil {
			return nil, err
		}
	}
	store, err := sqlite.Open(t.Context(), filepath.Join(dir, "state.db"))
	if err != nil {
		return nil, err
	}
	tok, err := chunker.NewTokenizer("cl100k_base")
	if err != nil {
		return nil, err
	}
	src, err := files.New("docs", config.FilesSource{Root: root, Anchor: "Document", MaxFileBytes: 64 << 20}, chunker.Formats(), nil,
		files.WithTextCheck(pipeline.TextCheck))
	if err != nil {
		return nil, err
	}
	p := &pipeline.Pipeline{
		Name: "docs", Sources: []sources.Source{src}, Embedder: hashing.New("hashing-v1", 128), Sink: graphtest.New(),
		Store: store, Chunking: chunker.Options{MaxTokens: 512, OverlapTokens: 64, Tokenizer: tok},
		BatchSize: 8, MaxDeleteRatio: 1, Fingerprint: 1,
	}
	if _, err := p.Run(t.Context(), state.TriggerManual, pipeline.Mode{}); err != nil {
		return nil, err
	}
	return &fixture{p: p, store: store}, nil
}

func search(t *testing.T, s *retrieval.Searcher, q string, opts retrieval.Options) *retrieval.Result {
	t.Helper()
	res, err := s.Search(t.Context(), q, opts)
	require.NoError(t, err)
	return res
}

// holds reports whether a hit covers an element of the node id (or is it).
func holds(h retrieval.Hit, id string) bool {
	for _, e := range h.Elements {
		if e == id || strings.HasPrefix(e, id+" › ") {
			return true
		}
	}
	return false
}

func TestAddressRouting(t *testing.T) {
	t.Parallel()
	f := synced(t)
	s := f.p.Searcher()
	for _, tc := range []struct {
		query, want string
	}{
		// Typed bare, in any spelling the address grammar reads.
		{"Статья 81 часть 3", "docs:constitutionrf.txt › Раздел первый › Глава 4 › Статья 81 › часть 3"},
		{"часть 3 статьи 81", "docs:constitutionrf.txt › Раздел первый › Глава 4 › Статья 81 › часть 3"},
		{"ст. 43", "docs:constitutionrf.txt › Раздел первый › Глава 2 › Статья 43"},
		{"Table 13", "docs:spdx-2.3-package-information.md › 7 › 7.1 › 7.1.1 › Table 13"},
		{"clause 7.25", "docs:spdx-2.3-package-information.md › 7 › 7.25"},
		// With the document named, and inside a question.
		{"RFC 7239 6.3", "docs:rfc7239.txt › 6 › 6.3"},
		{"what does section 5.3 of RFC 7239 say about the host?", "docs:rfc7239.txt › 5 › 5.3"},
	} {
		res := search(t, s, tc.query, retrieval.Options{K: 5})
		require.False(t, res.Declined, "%s: an address never falls below the floor", tc.query)
		require.NotEmpty(t, res.Hits, tc.query)
		require.True(t, holds(res.Hits[0], tc.want), "%s: first hit %s, want %s", tc.query, res.Hits[0].Address, tc.want)
		require.Positive(t, res.Hits[0].Ranks[retrieval.SignalAddress], "%s: found by its address", tc.query)
	}

	// A number several documents have: all of them, ranked by the rest of
	// the query ("3.1" is a section of the OpenChain specification only
	// with its name; RFC 7239 has no 3.1).
	res := search(t, s, "section 3.1 of the OpenChain Security Assurance Specification", retrieval.Options{K: 5})
	require.Len(t, res.Addresses, 1)
	require.True(t, strings.Contains(res.Hits[0].Address, "openchain-security-specification-1.1.md"), res.Hits[0].Address)
}

func TestLexicalFindsStemmedRussian(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	// "избирается … сроком" in the text; the question inflects both.
	res := search(t, s, "На какой срок избирают президента?", retrieval.Options{K: 3, Signals: []string{retrieval.SignalLexical}})
	// Article 96 ("Государственная Дума избирается сроком", its footnote
	// naming "срока полномочий Президента") matches the same three stems
	// and may rank first; the answer must be among the K hits.
	require.NotEmpty(t, res.Hits)
	require.True(t, slices.ContainsFunc(res.Hits, func(h retrieval.Hit) bool {
		return holds(h, "docs:constitutionrf.txt › Раздел первый › Глава 4 › Статья 81")
	}), "first hit %s", res.Hits[0].Address)
}

func TestFusionAndScores(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	res := search(t, s, "which proxies may add the Forwarded header", retrieval.Options{K: 5})
	require.Len(t, res.Hits, 5)
	for i, h := range res.Hits {
		require.Greater(t, h.Score, 0.0)
		require.LessOrEqual(t, h.Score, 1.0+1e-9)
		if i > 0 {
			require.LessOrEqual(t, h.Score, res.Hits[i-1].Score, "best first")
		}
		require.NotEmpty(t, h.Ranks)
	}
	require.True(t, strings.HasPrefix(res.Hits[0].ID, "") && strings.Contains(res.Hits[0].Address, "rfc7239.txt › 4"), res.Hits[0].Address)

	// One signal alone: its first unit scores 1 (the best possible).
	res = search(t, s, "which proxies may add the Forwarded header", retrieval.Options{K: 1, Signals: []string{retrieval.SignalLexical}})
	require.InDelta(t, 1.0, res.Hits[0].Score, 1e-9)
	require.Equal(t, map[string]int{retrieval.SignalLexical: 1}, res.Hits[0].Ranks)
}

func TestTermSignal(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	res := search(t, s, "what is a Software Bill of Materials?", retrieval.Options{K: 5})
	require.Contains(t, res.Terms, "Software Bill of Materials (SBOM)")
	found := false
	for _, h := range res.Hits {
		if h.Ranks[retrieval.SignalTerm] == 1 {
			found = holds(h, "docs:openchain-security-specification-1.1.md › openchain-security-assurance-specification › 2 › 2.12")
		}
	}
	require.True(t, found, "the defining chunk is the term signal's first")
	// A one-word name must be the word itself: "connection" names no
	// CONNECT (RFC 7231 is not loaded here; "Program" is a term of the
	// OpenChain specification and "programs" is not it).
	res = search(t, s, "how many programs may an organization run", retrieval.Options{K: 5, NoFloor: true})
	require.NotContains(t, res.Terms, "Program")
}

func TestFloorDeclines(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	res := search(t, s, "What does the 418 I'm a teapot status code mean?", retrieval.Options{K: 5})
	require.True(t, res.Declined, "%+v", res.Evidence)
	require.Empty(t, res.Hits)
	require.Contains(t, res.Reason, "418")
	require.Contains(t, res.Evidence.Unknown, "teapot")

	// The same query without the floor has hits; an answerable one passes.
	res = search(t, s, "What does the 418 I'm a teapot status code mean?", retrieval.Options{K: 5, NoFloor: true})
	require.NotEmpty(t, res.Hits)
	res = search(t, s, "What does the unknown identifier mean in a Forwarded header?", retrieval.Options{K: 5})
	require.False(t, res.Declined, "%+v", res.Evidence)
	require.GreaterOrEqual(t, res.Evidence.Coverage, 0.9)
}

// TestFloorQueryWithoutWords: a query with no content word has nothing
// the floor can check its hits against; they are answered, marked low,
// not with high confidence.
func TestFloorQueryWithoutWords(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	for _, q := range []string{"x", "what is it", "how to"} {
		res := search(t, s, q, retrieval.Options{K: 3})
		require.False(t, res.Declined, q)
		require.NotEmpty(t, res.Hits, q)
		require.True(t, res.Evidence.NoWords, q)
		require.Equal(t, retrieval.ConfidenceLow, res.Confidence, q)
		require.Contains(t, res.Reason, "no content word", q)
	}
	// An address alone still routes with high confidence.
	res := search(t, s, "6.3", retrieval.Options{K: 3})
	require.Equal(t, retrieval.ConfidenceHigh, res.Confidence, "%+v", res.Evidence)
}

func TestExpandWithinBudget(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	res := search(t, s, "Статья 81 часть 1", retrieval.Options{K: 3})
	require.NotEmpty(t, res.Hits)
	for _, budget := range []int{300, 1200, 5000} {
		c, err := s.ExpandResult(t.Context(), res, budget)
		require.NoError(t, err)
		require.LessOrEqual(t, c.Tokens, budget, "budget %d", budget)
		require.NotEmpty(t, c.Hits, "the first hit is kept even alone")
	}
	// With room, the rest of the article comes with the hit that holds
	// one part of it, each expansion saying why, nothing twice.
	c, err := s.Expand(t.Context(), res.Hits[:1], 5000)
	require.NoError(t, err)
	covered := c.Covered()
	for _, part := range []string{"часть 1", "часть 2", "часть 3", "часть 4"} {
		found := false
		for e := range covered {
			if strings.Contains(e, "Статья 81 › "+part) {
				found = true
			}
		}
		require.True(t, found, "%s of Статья 81 is in the context", part)
	}
	seen := map[string]bool{}
	for _, x := range c.Hits[0].Expansions {
		require.NotEmpty(t, x.Reason)
		for _, e := range x.Covers {
			require.False(t, seen[e], "%s twice", e)
			seen[e] = true
			require.NotContains(t, c.Hits[0].Elements, e)
		}
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	for addr, want := range map[string]string{
		"RFC 7239 5.1": "docs:rfc7239.txt › 5 › 5.1",
		"constitutionrf.txt Статья 81 часть 3":  "docs:constitutionrf.txt › Раздел первый › Глава 4 › Статья 81 › часть 3",
		"spdx-2.3-package-information.md 7.8.1": "docs:spdx-2.3-package-information.md › 7 › 7.8 › 7.8.1",
		"Section 5.2 of RFC 7239":               "docs:rfc7239.txt › 5 › 5.2",
	} {
		res, err := s.Lookup(t.Context(), addr)
		require.NoError(t, err, addr)
		require.Len(t, res, 1, addr)
		require.Equal(t, want, res[0].ID, addr)
		require.NotEmpty(t, res[0].Text, addr)
	}
	_, err := s.Lookup(t.Context(), "RFC 7239 99.9")
	require.ErrorContains(t, err, "has no element with that address")
}

func TestEvalReport(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	golden := `{"id":"a","question":"RFC 7239 6.3","kind":"address","lang":"en","answers":["RFC 7239 6.3"]}
{"id":"b","question":"На какой срок избирается Президент?","kind":"lexical","answers":["constitutionrf.txt Статья 81 часть 1"]}
{"id":"c","question":"What does the 418 I'm a teapot status code mean?","kind":"unanswerable","answers":[]}
{"id":"d","question":"What should the by parameter contain by default?","answers":["RFC 7239 5.1"],"context":["RFC 7239 6.3"]}
{"id":"e","question":"x","kind":"paraphrase","answers":["RFC 7239 77.7"]}`
	qs, err := retrieval.ReadGolden(strings.NewReader(golden), "golden.jsonl")
	require.NoError(t, err)
	require.Equal(t, "ru", qs[1].Lang, "detected when missing")
	require.Equal(t, retrieval.KindLexical, qs[3].Kind, "answers and no kind: lexical")
	rep, err := s.Eval(t.Context(), qs, retrieval.EvalOptions{K: 5, Budget: 2500})
	require.NoError(t, err)
	require.Len(t, rep.Modes, len(retrieval.AllModes))
	h := rep.Mode(retrieval.ModeHybrid)
	require.Equal(t, 4, h.All.Questions)
	require.InDelta(t, 0.75, h.All.Recall5, 1e-9, "a, b, d found; e names no element")
	require.Equal(t, []string{`e: lookup "RFC 7239 77.7": document docs:rfc7239.txt has no element with that address`}, rep.Unresolved)
	x := rep.Mode(retrieval.ModeExpand)
	require.GreaterOrEqual(t, x.All.Sufficiency, 0.75, "d needs 6.3 too: expansion brings the referenced section")
	require.Equal(t, 1, rep.Floor.Unanswerable)
	require.InDelta(t, 1.0, rep.Floor.Declined, 1e-9)
	for _, r := range rep.Results {
		if r.ID == "d" {
			require.True(t, r.Modes[retrieval.ModeExpand].Sufficient, "%+v", r)
			require.False(t, r.Modes[retrieval.ModeVector].Sufficient && r.Modes[retrieval.ModeVector].AtK == 0)
		}
	}
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "hybrid+expand")
	require.Contains(t, b.String(), "flat-bm25")
	require.Contains(t, b.String(), "RFC 7239 77.7")
}

func TestReadGoldenErrors(t *testing.T) {
	t.Parallel()
	_, err := retrieval.ReadGolden(strings.NewReader(`{"question":"a","kind":"lexical"}
not json
{"id":"x","question":"b","kind":"weird","answers":["A 1"]}
# a comment
{"id":"x","query":"c","type":"unanswerable","answer":"A 1"}
`), "g.jsonl")
	require.ErrorContains(t, err, "g.jsonl:1: kind lexical: no answers")
	require.ErrorContains(t, err, "g.jsonl:2: not a JSON object")
	require.ErrorContains(t, err, `g.jsonl:3: kind "weird"`)
	require.ErrorContains(t, err, "g.jsonl:5: kind unanswerable: has answers")
	qs, err := retrieval.ReadGolden(strings.NewReader(`{"query":"c","type":"Address","answer":"RFC 7239 6.3","required_context":["RFC 7239 6"]}`), "g.jsonl")
	require.NoError(t, err)
	require.Equal(t, []retrieval.GoldenQuestion{{ID: "line1", Question: "c", Kind: "address", Lang: "en",
		Answers: []string{"RFC 7239 6.3"}, Context: []string{"RFC 7239 6"}}}, qs)
}

// BenchmarkHybridSearch is one hybrid search (six signals, the floor)
// over the test documents in embedded mode, corpus already loaded.
func BenchmarkHybridSearch(b *testing.B) {
	dir := b.TempDir()
	f, err := newFixture(b, dir, testDocs)
	require.NoError(b, err)
	b.Cleanup(func() { _ = f.store.Close() })
	s := f.p.Searcher()
	queries := []string{"which proxies may add the Forwarded header", "На какой срок избирается Президент?", "Статья 81 часть 3", "Table 13"}
	_, err = s.Search(b.Context(), queries[0], retrieval.Options{K: 5})
	require.NoError(b, err)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Search(b.Context(), queries[i%len(queries)], retrieval.Options{K: 5}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExpandClauseBeforeMentions: with a budget too small for everything,
// every part of the hit's clause comes before the sections the hit names
// in passing, and a leaf section the rest of the clause names ("201
// Created", two paragraphs below the hit) comes before a section of
// sections named by a phrase ("Representation Metadata").
func TestExpandClauseBeforeMentions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs"), 0o755))
	filler := strings.Repeat("The store keeps the state of the resource as it was sent by the client, and nothing else is kept. ", 6)
	var b strings.Builder
	b.WriteString("# 1 Methods\n\n## 1.1 Zebra method\n\nThe zebra method stores the representation metadata of the target, ")
	b.WriteString("as Representation Metadata describes.\n\n")
	for i := range 8 {
		fmt.Fprintf(&b, "Part %d of the zebra method. %s\n\n", i+2, filler)
	}
	b.WriteString("When the zebra method creates a new resource the server answers 201 Created.\n\n")
	b.WriteString("## 1.2 Representation Metadata\n\n### 1.2.1 Media type\n\n" + filler + "\n\n### 1.2.2 Language\n\n" + filler + "\n\n")
	b.WriteString("## 1.3 201 Created\n\nThe 201 Created status code says that a new resource was created.\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "spec.md"), []byte(b.String()), 0o644))
	f, err := newFixture(t, dir, nil)
	require.NoError(t, err)
	s := f.p.Searcher()
	res := search(t, s, "What does the zebra method store?", retrieval.Options{K: 1, NoFloor: true})
	require.NotEmpty(t, res.Hits)
	require.Contains(t, res.Hits[0].Address, "1.1", "%+v", res.Hits[0])

	full, err := s.ExpandResult(t.Context(), res, 20000)
	require.NoError(t, err)
	var clause, parts int
	reasons := map[string]bool{}
	for _, x := range full.Hits[0].Expansions {
		reasons[x.Reason] = true
		if strings.HasPrefix(x.Reason, "same clause") {
			clause, parts = clause+x.Tokens, parts+len(x.Covers)
		}
	}
	require.Greater(t, parts, 1)
	require.True(t, reasons[`names the heading "1.3 201 Created" in the same clause`], "%v", reasons)
	require.True(t, reasons[`names the heading "1.2 Representation Metadata"`], "%v", reasons)

	// Room for the hit, its whole clause and the 201 section, not for the
	// section of sections as well.
	budget := full.Hits[0].Tokens + clause + 60
	c, err := s.ExpandResult(t.Context(), res, budget)
	require.NoError(t, err)
	got := map[string]int{}
	for _, x := range c.Hits[0].Expansions {
		got[x.Reason] = len(x.Covers)
	}
	require.Equal(t, parts, got["same clause as the hit (1.1 Zebra method)"], "every other part of the clause: %v", got)
	require.Contains(t, got, `names the heading "1.3 201 Created" in the same clause`, "%v", got)
	require.NotContains(t, got, `names the heading "1.2 Representation Metadata"`, "%v", got)
}

// TestHitNamesMatchedElement: a packed chunk covers several elements (RFC
// 7239 6.1 to 6.3 in one chunk); a hit names, and its JSON carries, the
// element the query matched — the one its address named, else the covered
// element holding the most of the query's words — not the chunk's first.
func TestHitNamesMatchedElement(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	for _, tc := range []struct {
		query, want, by, text string
	}{
		{"section 6.3 of RFC 7239", "docs:rfc7239.txt › 6 › 6.3", retrieval.MatchAddress, "6.3. Obfuscated Identifier"},
		{"RFC 7239 6.3", "docs:rfc7239.txt › 6 › 6.3", retrieval.MatchAddress, "6.3. Obfuscated Identifier"},
		{"must an obfuscated identifier have a leading underscore?", "docs:rfc7239.txt › 6 › 6.3 › p1", retrieval.MatchWords, "A generated identifier"},
		{"What is the unknown identifier used for?", "docs:rfc7239.txt › 6 › 6.2 › p1", retrieval.MatchWords, "The \"unknown\" identifier"},
	} {
		res := search(t, s, tc.query, retrieval.Options{K: 3})
		i := slices.IndexFunc(res.Hits, func(h retrieval.Hit) bool { return holds(h, tc.want) })
		require.GreaterOrEqual(t, i, 0, "%s: a hit holds %s", tc.query, tc.want)
		h := res.Hits[i]
		require.NotEqual(t, tc.want, h.Address, "%s: the chunk starts elsewhere (the case this tests)", tc.query)
		require.NotNil(t, h.Match, tc.query)
		require.Equal(t, tc.want, h.Match.ID, "%s: the hit names the matched element", tc.query)
		require.Equal(t, tc.by, h.Match.By, tc.query)
		require.True(t, strings.HasPrefix(h.Text[h.Match.Offset:], tc.text), "%s: the match's text starts at its offset: %.60q", tc.query, h.Text[h.Match.Offset:])
		b, err := json.Marshal(h)
		require.NoError(t, err)
		require.Contains(t, string(b), `"match":{"id":"`+tc.want+`"`, tc.query)
	}
	// A chunk's first element still names a hit whose first element is
	// what matched.
	res := search(t, s, "Статья 81 часть 3", retrieval.Options{K: 1})
	require.Equal(t, "docs:constitutionrf.txt › Раздел первый › Глава 4 › Статья 81 › часть 3", res.Hits[0].Match.ID)

	// Found and sufficient count every covered element, the matched one
	// whether or not it starts the chunk; expansion keeps the match.
	qs, err := retrieval.ReadGolden(strings.NewReader(
		`{"id":"a","question":"section 6.3 of RFC 7239","kind":"address","answers":["RFC 7239 6.3"]}
{"id":"b","question":"must an obfuscated identifier have a leading underscore?","kind":"lexical","answers":["RFC 7239 6.3"]}`), "g.jsonl")
	require.NoError(t, err)
	rep, err := s.Eval(t.Context(), qs, retrieval.EvalOptions{K: 5, Budget: 2500, Modes: []string{retrieval.ModeHybrid, retrieval.ModeExpand}})
	require.NoError(t, err)
	for _, mode := range []string{retrieval.ModeHybrid, retrieval.ModeExpand} {
		m := rep.Mode(mode)
		require.InDelta(t, 1.0, m.All.Recall5, 1e-9, mode)
		require.InDelta(t, 1.0, m.All.Sufficiency, 1e-9, mode)
	}
	res = search(t, s, "section 6.3 of RFC 7239", retrieval.Options{K: 2})
	c, err := s.ExpandResult(t.Context(), res, 2500)
	require.NoError(t, err)
	require.Equal(t, "docs:rfc7239.txt › 6 › 6.3", c.Hits[0].Match.ID)
}

// TestFloorQuantityQuestions: a question asking a quantity whose best
// hits have its words but no number near them is answered with low
// confidence (its hits may still be what the user needs); one whose
// answer states the number is answered with high confidence.
func TestFloorQuantityQuestions(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	for _, q := range []string{
		"How many characters may an obfuscated identifier have?",
		"Какой минимальный размер оплаты труда гарантирует государство?",
		// A number near its words, but none of characters or bytes.
		"How long may the package version string be at most?",
	} {
		res := search(t, s, q, retrieval.Options{K: 5})
		require.True(t, res.Evidence.Quantity, q)
		require.False(t, res.Declined, "%s: %+v", q, res.Evidence)
		require.NotEmpty(t, res.Hits, q)
		require.Equal(t, retrieval.ConfidenceLow, res.Confidence, q)
		require.Contains(t, res.Reason, "quantity", q)
	}
	for _, q := range []string{
		"Сколько лет должен постоянно проживать в России кандидат в президенты?",
		"На какой срок избирается Президент?",
	} {
		res := search(t, s, q, retrieval.Options{K: 5})
		require.True(t, res.Evidence.Quantity, q)
		require.False(t, res.Declined, "%s: %s %+v", q, res.Reason, res.Evidence)
		require.Equal(t, retrieval.ConfidenceHigh, res.Confidence, "%s: %s", q, res.Reason)
	}
}

// TestExpandKeepsHits: --expand puts the hits' own text first, as many as
// fit, and only then their context: the clause, references and
// definitions of hit 1 never take the place of hits 2 to k (the answer is
// often hit 2). What the budget left out is listed.
func TestExpandKeepsHits(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	for _, q := range []string{
		"What does the by parameter contain by default?",
		"Какие права имеет гражданин при задержании?",
		"What must the organization do about the competence of program participants?",
	} {
		res := search(t, s, q, retrieval.Options{K: 5, NoFloor: true})
		require.Len(t, res.Hits, 5, q)
		total := 0
		for _, h := range res.Hits {
			total += h.Tokens
		}
		c, err := s.ExpandResult(t.Context(), res, total+40)
		require.NoError(t, err)
		require.Len(t, c.Hits, 5, "%s: every hit fits the budget and is kept", q)
		for i, h := range c.Hits {
			require.Equal(t, res.Hits[i].ID, h.ID, q)
		}
		require.LessOrEqual(t, c.Tokens, total+40, q)

		// A budget for four hits: the fifth is left out, and said so.
		c, err = s.ExpandResult(t.Context(), res, total-res.Hits[4].Tokens)
		require.NoError(t, err)
		require.Len(t, c.Hits, 4, q)
		require.NotEmpty(t, c.Omitted, q)
		require.Equal(t, "hit 5", c.Omitted[0].Reason, q)
	}
}

// TestDefinitionRouting: "what does X mean", "what is meant by X",
// "define X", "qué se entiende por X" go to X's definition (a defined term,
// else the section X heads) first, a document's name in the question
// aside; such a question is answered with high confidence.
func TestDefinitionRouting(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	for q, want := range map[string]string{
		"What does Known Vulnerability mean in the OpenChain Security Assurance Specification?": "2.5",
		"¿Qué se entiende por Newly Discovered Vulnerability?":                                  "2.6",
		"Define Verification Materials.":                                                        "2.14",
		"What is meant by an obfuscated identifier?":                                            "docs:rfc7239.txt › 6 › 6.3",
	} {
		res := search(t, s, q, retrieval.Options{K: 5})
		require.NotEmpty(t, res.Hits, q)
		require.True(t, res.Evidence.Definition, "%s: %+v", q, res.Evidence)
		require.Equal(t, retrieval.ConfidenceHigh, res.Confidence, q)
		require.NotNil(t, res.Hits[0].Match, q)
		require.True(t, strings.HasSuffix(res.Hits[0].Match.ID, want) || strings.Contains(res.Hits[0].Match.ID, want+" "), "%s: %s", q, res.Hits[0].Match.ID)
	}
}

// TestSearchExpandAddsHitsBeyondK: with budget to spare, SearchExpand
// keeps the result's k hits first, in order, and adds the next-ranked
// hits after them (none twice); with a budget the k hits fill, it adds
// none and lists the first left out.
func TestSearchExpandAddsHitsBeyondK(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	q := "How long may a proxy keep an obfuscated identifier for the same client?"
	plain := search(t, s, q, retrieval.Options{K: 3, NoFloor: true})
	require.Len(t, plain.Hits, 3)

	res, c, err := s.SearchExpand(t.Context(), q, retrieval.Options{K: 3, NoFloor: true}, 20000)
	require.NoError(t, err)
	require.Len(t, res.Hits, 3, "the result keeps k hits")
	require.Greater(t, len(c.Hits), 3, "a large budget takes hits beyond k")
	seen := map[string]bool{}
	for i, h := range c.Hits {
		if i < 3 {
			require.Equal(t, plain.Hits[i].ID, h.ID, "the first k are the search's, in order")
		}
		require.False(t, seen[h.ID], "hit %s twice", h.ID)
		seen[h.ID] = true
	}
	require.LessOrEqual(t, c.Tokens, 20000)

	total := 0
	for _, h := range plain.Hits {
		total += h.Tokens
	}
	_, c, err = s.SearchExpand(t.Context(), q, retrieval.Options{K: 3, NoFloor: true}, total)
	require.NoError(t, err)
	require.Len(t, c.Hits, 3, "no budget left for more")
	require.LessOrEqual(t, c.Tokens, total)
}

// TestExpandCutsHitThatDoesNotFit: a hit too long for what is left of the
// budget comes cut to the elements of the part its query matched, rather
// than not at all.
func TestExpandCutsHitThatDoesNotFit(t *testing.T) {
	t.Parallel()
	s := synced(t).p.Searcher()
	cut := 0
	for _, q := range []string{
		"What does the by parameter contain by default?",
		"Какие права имеет гражданин при задержании?",
		"What must the organization do about the competence of program participants?",
		"Which checksum algorithms can be used for a package?",
	} {
		res := search(t, s, q, retrieval.Options{K: 5, NoFloor: true})
		for i, h := range res.Hits {
			if i == 0 || h.Match == nil || !slices.Contains(h.Elements, h.Match.ID) || len(h.Elements) < 2 {
				continue // a hit whose match is one of several elements
			}
			before := 0
			for _, p := range res.Hits[:i] {
				before += p.Tokens
			}
			c, err := s.Expand(t.Context(), res.Hits[:i+1], before+h.Tokens-1)
			require.NoError(t, err)
			if len(c.Hits) <= i || c.Hits[i].ID != h.ID {
				continue // an earlier hit held it, or its part did not fit either
			}
			got := c.Hits[i]
			require.Less(t, got.Tokens, h.Tokens, q)
			require.Contains(t, got.Elements, h.Match.ID, "%s: the matched element is kept", q)
			require.NotNil(t, got.Match, q)
			require.Equal(t, h.Match.ID, got.Match.ID, "%s: still named by its match", q)
			require.Less(t, len(got.Elements), len(h.Elements), q)
			require.LessOrEqual(t, c.Tokens, before+h.Tokens-1, q)
			cut++
			break
		}
	}
	require.Positive(t, cut, "some hit was cut to its matched part")
}

// The proximity signal ranks first the candidate holding the query's words
// together, above one holding them as often but far apart.
func TestProximitySignal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs"), 0o755))
	filler := strings.Repeat("The board keeps its records in the archive and reports to the assembly every year. ", 25)
	doc := "# 1 Rules\n\n## 1.1 Scattered\n\nA quorum is mentioned here. " + filler +
		"\n\nThe council meets in spring. " + filler + "\n\nIts members are elected.\n\n" +
		"## 1.2 Together\n\n" + filler + "\n\nThe quorum of the council is three members.\n\n" + filler + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "rules.md"), []byte(doc), 0o644))
	f, err := newFixture(t, dir, nil)
	require.NoError(t, err)
	s := f.p.Searcher()
	res := search(t, s, "How many members make a quorum of the council?", retrieval.Options{K: 5, NoFloor: true,
		Signals: []string{retrieval.SignalLexical, retrieval.SignalProximity}})
	require.NotEmpty(t, res.Hits)
	var together, scattered int
	for _, h := range res.Hits {
		switch {
		case holds(h, "docs:rules.md › 1 › 1.2"):
			together = max(together, h.Ranks[retrieval.SignalProximity])
		case holds(h, "docs:rules.md › 1 › 1.1"):
			scattered = max(scattered, h.Ranks[retrieval.SignalProximity])
		}
	}
	require.Equal(t, 1, together, "%+v", res.Hits)
	require.Greater(t, scattered, together, "%+v", res.Hits)
}
