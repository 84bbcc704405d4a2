package chunker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// TestUnmarkedPageFurniture: in conversions from PDF that kept no page
// markers (testdata/unmarked-*.md are written in the layouts such
// converters produce), the running lines — an availability notice with
// its DOI, the document number over a page label ("CHAPTER ONE PAGE 2"),
// the document's title as a heading or text, alone or glued to the
// section's name, the section's name itself — are in no chunk's text or
// context line, no section title and no term; drop caps are joined to
// their words; the sections stay.
func TestUnmarkedPageFurniture(t *testing.T) {
	for name, tc := range map[string]struct {
		furniture []string
		sections  int
		words     []string
	}{
		"unmarked-pdf2md.md": {
			furniture: []string{"available free of charge", "doi.org", "GUIDE TO WIDGET SECURITY", "PAGE 4", "CHAPTER"},
			sections:  15, // Guide, Abstract, Keywords, 1–1.3, 2–2.4, 3–3.2
			words:     []string{"This chapter introduces", "An organization that operates", "Widgets differ"},
		},
		"unmarked-running-title.md": {
			furniture: []string{"SI-3", "SI-5"},
			sections:  11, // the title, Introducción, 3 Secciones of 2 clauses
			words:     []string{"Los edificios se deben", "Para calcular la ocupación"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", name))
			require.NoError(t, err)
			root, err := chunker.Parse("md", b)
			require.NoError(t, err)
			chunks, err := chunker.Split(name, root, testOpts)
			require.NoError(t, err)
			var all []string
			for _, c := range chunks {
				all = append(all, c.Text, c.Context)
			}
			titles := map[string]int{}
			visit(root, "", func(e *chunker.Element, _ string) {
				all = append(all, e.Title)
				titles[e.Title]++
			})
			for _, tm := range chunker.Terms(root) {
				all = append(all, tm.Name, tm.Definition)
			}
			joined := strings.Join(all, "\n")
			for _, f := range tc.furniture {
				require.NotContains(t, joined, f)
			}
			if name == "unmarked-running-title.md" {
				// The title and each Sección's name are a heading once, and
				// nowhere else.
				require.Equal(t, 1, titles["Documento Básico SI Seguridad en caso de incendio"])
				for _, s := range []string{"Documento Básico SI Seguridad en caso de incendio", "Sección SI 1 Propagación interior", "Sección SI 2 Propagación exterior", "Sección SI 3 Evacuación de ocupantes"} {
					if strings.HasPrefix(s, "Sección") {
						require.Equal(t, 1, titles[s], s)
					}
					n := 0
					visit(root, "", func(e *chunker.Element, _ string) {
						if strings.Contains(e.Text, s) {
							n++
						}
					})
					require.Zero(t, n, "%s as text", s)
				}
			}
			for _, w := range tc.words {
				require.Contains(t, joined, w)
			}
			require.Equal(t, tc.sections, countKind(root, chunker.KindSection))
		})
	}
}

// TestUnmarkedKeepsRepeatedText: without furniture to stand beside, a
// heading every section repeats ("Discussion") and a repeated sentence
// are text, never noise.
func TestUnmarkedKeepsRepeatedText(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Control catalogue\n\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&b, "## %d Control number %d\n\nThe organization shall do the thing that control %d asks for, in the way its owner records.\n\n", i, i, i)
		b.WriteString("### Discussion\n\nThis control supports the others in this family.\n\n")
		fmt.Fprintf(&b, "Further guidance for control %d is given in the implementation notes of the family it belongs to.\n\n", i)
	}
	root, err := chunker.Parse("md", []byte(b.String()))
	require.NoError(t, err)
	require.Empty(t, root.Noise)
	n := 0
	visit(root, "", func(e *chunker.Element, _ string) {
		if e.Title == "Discussion" {
			n++
		}
	})
	require.Equal(t, 6, n)
}

// TestUnmarkedIndexLettersStay: the letters of an index ("C" over an
// entry set deeper, "   cacheable  24") are no drop caps: the entries
// keep their words and no letter is dropped.
func TestUnmarkedIndexLettersStay(t *testing.T) {
	doc := "# Index\n\n   A\n      Accept header field  38\n\n   C\n      cacheable  24\n      compress (content coding)  11\n\n" +
		"   I\n      idempotent  23\n\n   S\n      safe  22\n"
	root, err := chunker.Parse("md", []byte(doc))
	require.NoError(t, err)
	for _, n := range root.Noise {
		require.NotEqual(t, "drop cap", n.Reason, n.Text)
	}
	var text []string
	visit(root, "", func(e *chunker.Element, _ string) { text = append(text, e.Text) })
	joined := strings.Join(text, "\n")
	for _, w := range []string{"cacheable", "idempotent", "safe"} {
		require.Contains(t, joined, w)
	}
	require.NotContains(t, joined, "Ccacheable")
}

// TestUnmarkedKeepsRepeatedSentenceEnd: a wrapped sentence's last line
// that recurs at page-like intervals ("implementations to reject the
// request." closing the same sentence of four methods, as in RFC 7231)
// ends the sentence above it: it is text, never a running line.
func TestUnmarkedKeepsRepeatedSentenceEnd(t *testing.T) {
	var b strings.Builder
	for _, m := range []string{"GET", "HEAD", "DELETE", "CONNECT"} {
		fmt.Fprintf(&b, "## The %s method\n\nThe %s method asks the server for a thing it holds, as described in the section on methods.\n\n", m, m)
		fmt.Fprintf(&b, "A payload within a %s request message has no defined semantics;\nsending a payload body on a %s request might cause some existing\nimplementations to reject the request.\n\n", m, m)
		for i := 0; i < 6; i++ {
			fmt.Fprintf(&b, "Filler sentence %d about %s, long enough to keep the methods apart.\n\n", i, m)
		}
	}
	root, err := chunker.Parse("md", []byte(b.String()))
	require.NoError(t, err)
	require.Empty(t, root.Noise)
	n := 0
	visit(root, "", func(e *chunker.Element, _ string) {
		n += strings.Count(e.Text, "implementations to reject the request.")
	})
	require.Equal(t, 4, n)
}

// TestUnmarkedDropCapSetClear: a converter that keeps the layout sets the
// rest of a dropped word clear of the letter ("T" over "     his chapter
// …"): it is joined all the same; the index letters of
// TestUnmarkedIndexLettersStay differ in that their entries start with
// the letter again.
func TestUnmarkedDropCapSetClear(t *testing.T) {
	doc := "# Introduction\n\nT\n     his chapter describes the protocol and how a client uses\n     it to reach a server across the network.\n" +
		"The third line of the paragraph is back at the margin here.\n\nW\n   hen a request arrives, the server reads its header fields first.\n"
	root, err := chunker.Parse("md", []byte(doc))
	require.NoError(t, err)
	var text []string
	visit(root, "", func(e *chunker.Element, _ string) { text = append(text, e.Text) })
	joined := strings.Join(text, "\n")
	require.Contains(t, joined, "This chapter describes")
	require.Contains(t, joined, "When a request arrives")
}
