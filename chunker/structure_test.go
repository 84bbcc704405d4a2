package chunker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/internal/corpus"
)

// handCounts are the numbered units of each corpus document by kind,
// counted by hand (or, where a grep can count them, by a grep checked by
// eye), so that the independent extraction in internal/corpus is itself
// checked before the parser is measured against it.
var handCounts = map[string]map[string]int{
	// grep -cE '^[0-9]+(\.[0-9]+)*\.  +\S' = 140; Appendix A–D; A.1–A.6.
	"rfc7231.txt": {"section": 146, "appendix": 4},
	// 1.–10.2. = 28 headings; Appendix A.
	"rfc7239.txt": {"section": 28, "appendix": 1},
	// MANIFEST: РАЗДЕЛ ×2, ГЛАВА 1–9, 142 articles; parts "N. " and points
	// "а) " inside articles counted by line: 331 and 124.
	"constitutionrf.txt": {"part": 2, "chapter": 9, "article": 142, "part of article": 331, "point": 124},
	// MANIFEST: headings 1 / 27 / 81, all numbered.
	"spdx-2.3-package-information.md": {"clause": 109},
	// MANIFEST: 1, 2 (2.1–2.14), 3 (3.1–3.4, leaves 3.1.1–3.1.5,
	// 3.2.1–3.2.2, 3.3.1–3.3.2, 3.4.1–3.4.2).
	"openchain-security-specification-1.1.md":   {"clause": 32},
	"openchain-security-specification-1.1.docx": {"clause": 32},
	"openchain-security-specification-1.1.pdf":  {"clause": 32},
	// Read by hand (document.xml): Heading 1 ×3, Heading 2 1.0–6.0, 13
	// requirements, 25 verification materials, one annex.
	"OpenChainSpec-2.0-Translation-ru.docx": {"section": 3, "clause": 44, "annex": 1},
	// MANIFEST: h2/h3/h4 = 19/108/38.
	"go_spec.html": {"heading": 165},
	// MANIFEST: 123 articles, 531 paragraphs, 101 recitals, 17 annexes, 10
	// chapters, 71 definitions; 5 sections (V: 2, VII: 3).
	"eu-mdr-2017-745-oj.html": {"article": 123, "paragraph": 531, "recital": 101, "annex": 17, "chapter": 10, "section": 5, "definition": 71},
	// Read by hand: 9 sections and 24 sub-clauses, twice; 19 unnumbered
	// headings (16 in the body, References, the Appendix and the
	// template's title).
	"mdcg-2019-9-rev1-sscp.md": {"clause": 33, "template clause": 33, "heading": 19},
	// Read by hand: Articles 1–3; definitions (1)–(21) and the inserted
	// (4a); points 8(a)–(d), 9(a)–(b), 3(3)(a)–(n); paragraphs 1, 1a, 2–6
	// of Article 3.
	"crd-2011-83-consolidated-excerpt.html": {"article": 3, "definition": 22, "point": 20, "paragraph": 7},
}

// TestStructureOfCorpus: on every corpus document with numbered units,
// at least 95 % are found with their address and their parent.
func TestStructureOfCorpus(t *testing.T) {
	for name, counts := range handCounts {
		t.Run(name, func(t *testing.T) {
			want, ok := corpus.ExpectedUnits(name, readDoc(t, name))
			require.True(t, ok)
			byKind := map[string]int{}
			for _, u := range want {
				byKind[u.Kind]++
			}
			require.Equal(t, counts, byKind, "the independent extraction agrees with the hand counts")
			got := corpus.CitedParents(parseDoc(t, name))
			var ws []unitWant
			for _, u := range want {
				ws = append(ws, unitWant{u.Citation, u.Parent})
			}
			r, miss := recall(got, ws)
			t.Logf("%s: %.1f%% of %d units with address and parent", name, 100*r, len(ws))
			require.GreaterOrEqual(t, r, 0.95, "%v", miss)
			// And of each kind: a kind that is a small share of the
			// document (the points of an article) is not hidden by the
			// others.
			perKind := map[string][]unitWant{}
			for _, u := range want {
				perKind[u.Kind] = append(perKind[u.Kind], unitWant{u.Citation, u.Parent})
			}
			for kind, ws := range perKind {
				r, miss := recall(got, ws)
				require.GreaterOrEqual(t, r, 0.95, "%s: %d %s units: %v", name, len(ws), kind, miss)
			}
		})
	}
	_ = chunker.Version
}
