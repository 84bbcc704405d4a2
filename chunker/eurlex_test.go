package chunker_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/internal/corpus"
)

// unitWant is a numbered unit the test expects, with its parent.
type unitWant struct{ cite, parent string }

// recall is the share of want found with the right parent; it returns
// the misses for the failure message.
func recall(got map[string]string, want []unitWant) (float64, []string) {
	var miss []string
	for _, w := range want {
		if p, ok := got[w.cite]; !ok || p != w.parent {
			miss = append(miss, w.cite+" (parent "+p+", want "+w.parent+")")
		}
	}
	return 1 - float64(len(miss))/float64(len(want)), miss
}

// mdrUnits are the numbered units of the MDR read from the Official
// Journal's ELI ids, independently of the parser: art_N (Article N, under
// the chapter or section whose id opens last before it), NNN.MMM
// (paragraph M of article N), rct_N (Recital N), anx_X (Annex X), cpt_X
// (Chapter X), cpt_X.sct_N (Chapter X Section N).
func mdrUnits(t *testing.T, raw string) map[string][]unitWant {
	ids := regexp.MustCompile(`id="(art_\d+|\d{3}\.\d{3}|rct_\d+|anx_[IVX]+|cpt_[IVX]+(?:\.sct_\d+)?)"`)
	out := map[string][]unitWant{}
	division := ""
	for _, m := range ids.FindAllStringSubmatch(raw, -1) {
		id := m[1]
		switch {
		case strings.HasPrefix(id, "art_"):
			out["article"] = append(out["article"], unitWant{"Article " + id[4:], division})
		case strings.HasPrefix(id, "rct_"):
			out["recital"] = append(out["recital"], unitWant{"Recital " + id[4:], ""})
		case strings.HasPrefix(id, "anx_"):
			out["annex"] = append(out["annex"], unitWant{"Annex " + id[4:], ""})
		case strings.HasPrefix(id, "cpt_"):
			chapter, section, hasSection := strings.Cut(id[4:], ".sct_")
			if hasSection {
				division = "Chapter " + chapter + " Section " + section
				out["section"] = append(out["section"], unitWant{division, "Chapter " + chapter})
			} else {
				division = "Chapter " + chapter
				out["chapter"] = append(out["chapter"], unitWant{division, ""})
			}
		default:
			art, _ := strconv.Atoi(id[:3])
			para, _ := strconv.Atoi(id[4:])
			a := "Article " + strconv.Itoa(art)
			out["paragraph"] = append(out["paragraph"], unitWant{a + "(" + strconv.Itoa(para) + ")", a})
		}
	}
	return out
}

// TestEURLexMDR: the Medical Devices Regulation as published in the
// Official Journal: MANIFEST counts 123 articles, 531 numbered paragraphs,
// 101 recitals, 17 annexes, 10 chapters (and 5 sections in chapters V and
// VII, counted by hand from the SECTION labels); every one is found with
// its address and parent. Article 2's 71 definitions are points (1)–(71),
// and the journal's page header is noise, in no element.
func TestEURLexMDR(t *testing.T) {
	raw := string(readDoc(t, "eu-mdr-2017-745-oj.html"))
	want := mdrUnits(t, raw)
	for kind, n := range map[string]int{"article": 123, "paragraph": 531, "recital": 101, "annex": 17, "chapter": 10, "section": 5} {
		require.Len(t, want[kind], n, kind)
	}
	root := parseDoc(t, "eu-mdr-2017-745-oj.html")
	got := corpus.CitedParents(root)
	for kind, ws := range want {
		r, miss := recall(got, ws)
		require.Equal(t, 1.0, r, "%s: %v", kind, miss)
	}
	var defs []unitWant
	for i := 1; i <= 71; i++ {
		defs = append(defs, unitWant{"Article 2(" + strconv.Itoa(i) + ")", "Article 2"})
	}
	r, miss := recall(got, defs)
	require.Equal(t, 1.0, r, "%v", miss)
	require.Equal(t, "Article 123(3)(d)", find(got, "Article 123(3)(d)"))
	require.Equal(t, "Annex VI Part A 2", got["Annex VI Part A 2.14"], "annex parts that number afresh carry the part")
	require.Equal(t, "Annex VIII", got["Annex VIII Chapter III"])
	require.Contains(t, root.Title, "REGULATION (EU) 2017/745")
	require.NotEmpty(t, root.Noise)
	visit(root, "", func(e *chunker.Element, path string) {
		require.NotContains(t, e.Text, "L 117/1", path) // the page header: "5.5.2017 EN Official Journal … L 117/1"
		require.NotContains(t, e.Text, "\u00a0", path)
	})
}

func find(m map[string]string, k string) string {
	if _, ok := m[k]; ok {
		return k
	}
	return ""
}

// TestEURLexOlderAndConsolidated: the class names of the OJ before 2015
// ("ti-art", "sti-art", "normal", paragraphs numbered in the text) and of
// consolidated texts ("title-article-norm", "no-parag" numbers, grid
// lists, "▼B" markers) give the same structure as the "oj-" classes.
func TestEURLexOlderAndConsolidated(t *testing.T) {
	read := func(name string) *chunker.Element {
		b, err := os.ReadFile(filepath.Join("testdata", "eurlex", name))
		require.NoError(t, err)
		root, err := chunker.Parse("html", b)
		require.NoError(t, err)
		return root
	}
	root := read("ti-art.html")
	got := corpus.CitedParents(root)
	for _, w := range []unitWant{
		{"Recital 1", ""}, {"Recital 2", ""},
		{"Title I", ""}, {"Chapter 1", "Title I"}, {"Chapter 2", "Title I"},
		{"Article 1", "Chapter 1"}, {"Article 1(1)", "Article 1"}, {"Article 1(2)", "Article 1"},
		{"Article 2", "Chapter 1"}, {"Article 2(1)", "Article 2"}, {"Article 2(2)", "Article 2"},
		{"Article 3", "Chapter 2"}, {"Article 3(2)(a)", "Article 3(2)"}, {"Article 3(2)(b)", "Article 3(2)"},
		{"Annex I", ""}, {"Annex I 1", "Annex I"}, {"Annex I 1.1", "Annex I 1"}, {"Annex I 1.2", "Annex I 1"}, {"Annex I 2", "Annex I"},
		{"Table 1", "Annex I 2"},
	} {
		require.Equal(t, w.parent, got[w.cite], "%s in %v", w.cite, got)
		require.Contains(t, got, w.cite)
	}
	require.Equal(t, "REGULATION (EC) No 9999/2006 OF THE EUROPEAN PARLIAMENT AND OF THE COUNCIL of 18 December 2006 concerning the testing of widgets (WDR)", root.Title)
	// The closing formula is the act's, not its last article's.
	last := root.Children[len(root.Children)-1]
	require.Equal(t, "Annex I", last.Citation)
	closing := root.Children[len(root.Children)-2]
	require.Equal(t, "Done at Brussels, 18 December 2006.", closing.Text)
	// The footnote follows the recital that calls it.
	rec := root.Children[6]
	require.Equal(t, "Recital 1", rec.Citation)
	require.Equal(t, chunker.KindNote, rec.Children[1].Kind)
	require.Equal(t, []chunker.Noise{{Text: "30.12.2006 EN Official Journal of the European Union L 396/1", Reason: "page header or marker"}}, root.Noise)
	refs := chunker.CrossRefs(root)
	res, un := chunker.Resolve(root, refs)
	require.Empty(t, un)
	cites := citations(root)
	var resolved []string
	for i := range refs {
		resolved = append(resolved, refs[i].Text+" → "+cites[res[i]])
	}
	require.Contains(t, resolved, "point (b) of paragraph 1 of Article 1 → Article 1(1)", "no point (b) there: its paragraph")
	require.Contains(t, resolved, "Section 2 of Annex I → Annex I 2")
	require.Contains(t, resolved, "Article 3 → Article 3")

	root = read("consolidated.html")
	got = corpus.CitedParents(root)
	for _, w := range []unitWant{
		{"Chapter I", ""}, {"Article 1", "Chapter I"}, {"Article 1(1)", "Article 1"}, {"Article 1(2)", "Article 1"},
		{"Article 1(2)(a)", "Article 1(2)"}, {"Article 1(2)(b)", "Article 1(2)"}, {"Article 1a", "Chapter I"},
		{"Annex II", ""}, {"Annex II 1", "Annex II"},
	} {
		require.Contains(t, got, w.cite)
		require.Equal(t, w.parent, got[w.cite], w.cite)
	}
	require.Len(t, root.Noise, 3, "the reference line, the ▼B and ▼M1 markers")
	visit(root, "", func(e *chunker.Element, path string) {
		require.NotContains(t, e.Text, "▼", path)
	})
}

// TestEURLexDefinitions: MANIFEST: Article 2 has 71 definitions "(n)
// ‘term’ means …"; each is a term defined in its point; the articles of
// Chapter I ("SCOPE AND DEFINITIONS") are not terms.
func TestEURLexDefinitions(t *testing.T) {
	root := parseDoc(t, "eu-mdr-2017-745-oj.html")
	cites := citations(root)
	points := map[string]bool{}
	names := map[string]string{}
	for _, tm := range chunker.Terms(root) {
		require.NotContains(t, tm.Name, "Article ", "an article is no term")
		p := tm.Address
		for p != "" && !strings.HasPrefix(cites[p], "Article 2(") {
			p = p[:max(strings.LastIndex(p, chunker.PathSep), 0)]
		}
		if p != "" {
			points[cites[p]] = true
			names[tm.Name] = cites[p]
		}
	}
	require.Len(t, points, 71)
	require.Equal(t, "Article 2(1)", names["medical device"])
	require.Equal(t, "Article 2(15)", names["UDI"], "the abbreviation in brackets is a term too")
	require.Equal(t, "Article 2(71)", names["common specifications"])
}

// TestConsolidatedMarkersAndShortTitle: in a consolidated text, amendment
// markers standing alone, in a grid list or inside a sentence ("►M2 …
// ◄"), and the reference line ("02099R0001 — EN — 01.01.2100 — 001.001 —
// 2") are in no element and no chunk; a definition whose quoted term is
// followed by more words before "means" is a term; the act is also named
// by the short title its title gives in brackets, and its initials.
func TestConsolidatedMarkersAndShortTitle(t *testing.T) {
	root, err := chunker.Parse("html", consolidatedWithMarkers(t))
	require.NoError(t, err)
	chunks, err := chunker.Split("consolidated-markers.html", root, testOpts)
	require.NoError(t, err)
	var all []string
	for _, c := range chunks {
		all = append(all, c.Text, c.Context)
	}
	visit(root, "", func(e *chunker.Element, _ string) { all = append(all, e.Title, e.Text) })
	joined := strings.Join(all, "\n")
	for _, f := range []string{"▼", "►", "◄", "02099R0001", "001.001"} {
		require.NotContains(t, joined, f)
	}
	require.Contains(t, joined, "Member States shall report on gadgets every year.")
	var noise []string
	for _, n := range root.Noise {
		noise = append(noise, n.Text)
	}
	require.Contains(t, noise, "02099R0001 — EN — 01.01.2100 — 001.001 — 2")
	require.Contains(t, noise, "▼M2")
	var terms []string
	for _, tm := range chunker.Terms(root) {
		terms = append(terms, tm.Name)
	}
	require.Contains(t, terms, "gadget")
	ids := chunker.DocumentIDs(root, "consolidated-markers.html")
	require.Contains(t, ids, "Regulation (EU) 2099/1")
	require.Contains(t, ids, "General Gadget Safety Regulation")
	require.Contains(t, ids, "GGSR")
}

// consolidatedWithMarkers is testdata/eurlex/consolidated.html with what
// a later consolidation adds: a short title in brackets closing the title
// and "(Text with EEA relevance)", an amendment marker inside a sentence
// and one in a grid list, a reference line with its page number.
func consolidatedWithMarkers(t *testing.T) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "eurlex", "consolidated.html"))
	require.NoError(t, err)
	s := string(b)
	for _, r := range [][2]string{
		{`<p class="title-doc-last">on the safety of gadgets</p>`, `<p class="title-doc-last">on the safety of gadgets and repealing Directive 2090/1/EU (General Gadget Safety Regulation)</p>
<p class="title-doc-oj-reference">(Text with EEA relevance)</p>`},
		{`<p class="norm">Article 1(2) applies from 2100.</p>`, `<p class="norm">Article 1(2) applies from 2100.</p>
<p class="norm">►M2 Member States shall report on gadgets every year. ◄</p>
<div class="grid-container grid-list"><div class="list grid-list-column-1"><span>(a)</span></div><div class="grid-list-column-2"><p class="modref"><a title="32101R0002: INSERTED">▼M2</a> </p><p class="norm">‘gadget’ of a household means a small device.</p></div></div>
<p class="reference">02099R0001 — EN — 01.01.2100 — 001.001 — 2</p>`},
	} {
		require.Equal(t, 1, strings.Count(s, r[0]), r[0])
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return []byte(s)
}
