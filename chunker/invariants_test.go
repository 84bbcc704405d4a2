package chunker_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// pageFurniture are the noise reasons of page furniture: what repeats on
// printed pages and is no part of the text.
var pageFurniture = map[string]bool{
	"running header or footer": true, "running header": true, "page number": true,
	"page marker": true, "page header or marker": true,
}

// wantFurniture are the furniture lines of corpus documents counted by
// reading them: crd-2011-83-consolidated-excerpt.html has its reference
// line ("02011L0083 — EN — 28.05.2022 — 002.001") and 18 amendment
// markers (8 ▼B, 9 ▼M2, 1 ▼M1), each a paragraph of its own.
var wantFurniture = map[string]int{
	"crd-2011-83-consolidated-excerpt.html": 19,
}

// TestNoFurnitureInChunks: on every corpus document, no running header or
// footer, page number or page marker the parser dropped is in any chunk's
// text or context line, any element's title or any term, and no page comment ("<!-- page=7 -->") or form
// feed is either. Furniture shorter than three words is checked only
// where it stands as a line of its own (it may be a phrase of the text).
func TestNoFurnitureInChunks(t *testing.T) {
	for _, name := range corpusDocs {
		t.Run(name, func(t *testing.T) {
			root := parseDoc(t, name)
			chunks, err := chunker.Split(name, root, testOpts)
			require.NoError(t, err)
			var texts []string
			for _, c := range chunks {
				texts = append(texts, c.Text, c.Context)
			}
			// Headings and sections (element titles) and terms too.
			visit(root, "", func(e *chunker.Element, _ string) {
				if e.Title != "" {
					texts = append(texts, e.Title)
				}
			})
			for _, tm := range chunker.Terms(root) {
				texts = append(texts, tm.Name, tm.Definition)
			}
			for _, s := range texts {
				require.NotContains(t, s, "<!--", "page comment in a chunk")
				require.NotContains(t, s, "\f", "form feed in a chunk")
			}
			n := 0
			for _, nz := range root.Noise {
				if !pageFurniture[nz.Reason] || strings.HasPrefix(nz.Text, "<!--") || strings.TrimSpace(nz.Text) == "" {
					continue
				}
				n++
				f := strings.Join(strings.Fields(nz.Text), " ")
				long := len(strings.Fields(f)) >= 3
				for _, s := range texts {
					if long {
						require.NotContains(t, strings.Join(strings.Fields(s), " "), f, "%s %q in a chunk", nz.Reason, f)
						continue
					}
					for _, l := range strings.Split(s, "\n") {
						require.NotEqual(t, f, strings.TrimSpace(l), "%s %q as a line of a chunk", nz.Reason, f)
					}
				}
			}
			if want, ok := wantFurniture[name]; ok {
				require.Equal(t, want, n, "furniture lines found")
			}
			t.Logf("%s: %d furniture lines, none in %d chunks", name, n, len(chunks))
		})
	}
}

// TestEditLocalityCorpus: one-sentence edits change one or two chunks on
// every corpus document in a text format (TestEditLocality measures the
// two longest plain texts with more edits; TestHeadinglessInsertLocality
// a text without headings).
func TestEditLocalityCorpus(t *testing.T) {
	for _, name := range []string{"rfc7239.txt", "spdx-2.3-package-information.md", "openchain-security-specification-1.1.md", "go_spec.html", "eu-mdr-2017-745-oj.html", "mdcg-2019-9-rev1-sscp.md"} {
		t.Run(name, func(t *testing.T) {
			r := measureLocality(t, name, 4)
			for k, n := range r.structural {
				require.GreaterOrEqual(t, n, 1, "edit %d changed no chunk", k)
				require.LessOrEqual(t, n, 2, "edit %d changed %d chunks", k, n)
			}
		})
	}
}
