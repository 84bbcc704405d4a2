package chunker_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/internal/corpus"
)

// TestMDCGConversion: MDCG 2019-9, a PDF converted to Markdown by an
// in-house extractor (MANIFEST). Read by hand: the body numbers sections
// 1–9 and 24 sub-clauses (1.1–1.9, 2.1–2.3, 3.1–3.4, 4.1–4.3, 5.1–5.5; five
// of them with a footnote mark glued on, "501.5.", "543.3.", "795.4."),
// all body headings are plain lines, and the Appendix's template repeats
// the numbering (1–9 and the same 24). Page markers and front matter are
// noise; the 24 footnote blocks become notes of the paragraph that calls
// them.
func TestMDCGConversion(t *testing.T) {
	root := parseDoc(t, "mdcg-2019-9-rev1-sscp.md")
	got := corpus.CitedParents(root)
	subs := map[string]int{"1": 9, "2": 3, "3": 4, "4": 3, "5": 5}
	var body, template []unitWant
	for top := 1; top <= 9; top++ {
		n := itoa(top)
		body = append(body, unitWant{n, ""})
		template = append(template, unitWant{"Appendix: Template for the SSCP " + n, "Appendix: Template for the SSCP"})
		for k := 1; k <= subs[n]; k++ {
			sub := n + "." + itoa(k)
			body = append(body, unitWant{sub, n})
			template = append(template, unitWant{"Appendix: Template for the SSCP " + sub, "Appendix: Template for the SSCP " + n})
		}
	}
	require.Len(t, body, 33)
	r, miss := recall(got, body)
	require.Equal(t, 1.0, r, "%v", miss)
	r, miss = recall(got, template)
	require.GreaterOrEqual(t, r, 0.95, "%v", miss)

	markers, front := 0, 0
	for _, n := range root.Noise {
		switch n.Reason {
		case "page marker":
			markers++
		case "front matter":
			front++
		}
	}
	require.Equal(t, 24, markers) // MANIFEST: 24 <!-- page=N --> markers
	require.Equal(t, 14, front)   // lines 1–14
	var notes []string
	callers := map[string]string{}
	visit(root, "", func(e *chunker.Element, path string) {
		require.NotContains(t, e.Text, "<!--", path)
		require.NotContains(t, e.Title, "<!--", path)
		require.NotRegexp(t, `^\d{2,4}[A-Z][a-z]`, e.Text, "a footnote mark glued on at %s", path)
		for i, c := range e.Children {
			if c.Kind == chunker.KindNote {
				notes = append(notes, c.Text)
				if i > 0 {
					callers[c.Text] = e.Children[i-1].Text
				}
			}
		}
	})
	// 90 footnotes in all (the last is "90nd MDR, Article 52 (4) 2 paragraph").
	require.Len(t, notes, 90)
	require.Contains(t, callers["16 MDR, Article 29 (4) and Annex VI Part A 2.14"], "The SSCP shall be kept updated in Eudamed.")
	// The sentence a page marker cut is one paragraph again.
	requireLeafContains(t, root, "validated by the NB. The manufacturer should ensure, through their quality management system, that the translations are correct.")
	// References to the MDR name it by the abbreviation the text defines.
	mdr := 0
	for _, ref := range chunker.CrossRefs(root) {
		if ref.Doc == "MDR" {
			mdr++
		}
	}
	require.GreaterOrEqual(t, mdr, 81) // MANIFEST: 81 "Article N" and 27 "Annex" references to the MDR
}

// TestPageNoiseShapes: the page noise of other converters, in synthetic
// pages of the shapes they write: a running header and footer with page
// numbers, a heading repeated at every page top, a page-number line, a
// marker mid-sentence.
func TestPageNoiseShapes(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("# Documento Básico SI Seguridad en caso de incendio\n\n## Sección SI 1 Propagación interior\n\n")
	for p := 1; p <= 6; p++ {
		if p > 1 {
			sb.WriteString("Documento Básico SI Seguridad en caso de incendio\n\n## Sección SI 1 Propagación interior\n\n")
		}
		sb.WriteString("### " + itoa(p) + " Cláusula número " + itoa(p) + "\n\n")
		for k := 1; k <= 8; k++ {
			sb.WriteString("Párrafo " + itoa(k) + " de la cláusula " + itoa(p) + ", con su propio texto.\n\n")
		}
		sb.WriteString("El texto de la cláusula " + itoa(p) + " sigue aquí y continúa en la línea\n\n")
		sb.WriteString("<!-- page=" + itoa(p) + " -->\n\nsiguiente de la página " + itoa(p+1) + ".\n\n")
		for k := 1; k <= 8; k++ {
			sb.WriteString("Otro párrafo " + itoa(k) + " de la página " + itoa(p+1) + ".\n\n")
		}
		sb.WriteString("SI 1 - " + itoa(p) + "\n\n")
		sb.WriteString("<!-- PageBreak -->\n\n")
	}
	root, err := chunker.Parse("md", []byte(sb.String()))
	require.NoError(t, err)
	var sections []string
	visit(root, "", func(e *chunker.Element, path string) {
		if e.Kind == chunker.KindSection {
			sections = append(sections, e.Citation)
		}
		require.NotRegexp(t, regexp.MustCompile(`SI 1 - \d`), e.Text, path)
		require.NotEqual(t, "Documento Básico SI Seguridad en caso de incendio", e.Text, path)
	})
	require.Equal(t, 1, strings.Count(strings.Join(sections, "|"), "Sección SI 1"), "the repeated heading is one section: %v", sections)
	requireLeafContains(t, root, "continúa en la línea siguiente de la página 4.")
	reasons := map[string]int{}
	for _, n := range root.Noise {
		reasons[n.Reason]++
	}
	require.Equal(t, 12, reasons["page marker"])
	// The header line on pages 2–6, the repeated heading on 2–6 (its first
	// occurrence stays), the footer "SI 1 - N" on all six.
	require.Equal(t, 5+5+6, reasons["running header or footer"]+reasons["page number"], "%v", root.Noise)
}

// TestConvertedHeadingLevels: in a hard-wrapped conversion whose headings
// are plain lines, a heading with no text before the next heading holds
// the headings after it, up to the next such heading; numbered sections
// after one nest below it and a "References" heading after them stands at
// the top again; a heading wrapped over two lines is one heading; an
// abbreviation list's entries are no headings.
func TestConvertedHeadingLevels(t *testing.T) {
	body := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString("the text of this part goes on over a full line of the printed page and\n")
		}
		b.WriteString("ends here with a full stop.\n")
		return b.String()
	}
	doc := "Introduction\nThis guide says what the summary holds and how it is checked by the\n" + body(8) +
		"Abbreviations\nCIV ID clinical investigation identification number, given by the database for\nclinical investigations under the directives\nNB notified body\nPSUR periodic safety update report\nTD technical documentation\n" +
		"General requirements for the summary\nThe summary is written for the public and kept up to date by the maker\n" + body(8) +
		"Validation and uploading of the summary\nValidation of the first summary\nThe first summary is validated by the notified body before the maker\n" + body(8) +
		"Uploading of the summary\nThe summary is uploaded by the notified body once it has validated it\n" + body(8) +
		"Guidance for each section of the summary\n1. The identification of the device\nThe first section identifies the device and the maker of the device and\n" + body(8) +
		"2. The intended purpose of the device\nThe second section says what the device is for and who it is for and\n" + body(4) +
		"The information for patients on the intended purpose, in\nsection 2\nThe part for patients says the same in plain words for lay persons who\n" + body(4) +
		"References\nThe documents this guide cites are listed here with where to find them\n" + body(8) +
		"The device shall be:\nSterile when sold\nLabelled in the language of the user\nThe maker keeps the records of both for ten years after the last device and\n" + body(8)
	root, err := chunker.Parse("md", []byte(doc))
	require.NoError(t, err)
	got := corpus.CitedParents(root)
	for cite, parent := range map[string]string{
		"Introduction":                                                       "",
		"Abbreviations":                                                      "",
		"General requirements for the summary":                               "",
		"Validation and uploading of the summary":                            "",
		"Validation of the first summary":                                    "Validation and uploading of the summary",
		"Uploading of the summary":                                           "Validation and uploading of the summary",
		"Guidance for each section of the summary":                           "",
		"The information for patients on the intended purpose, in section 2": "2",
		"References": "",
	} {
		p, ok := got[cite]
		require.True(t, ok, "%q is a heading: %v", cite, got)
		require.Equal(t, parent, p, cite)
	}
	require.Equal(t, "", got["1"])
	for _, c := range root.Children {
		if c.Citation == "Guidance for each section of the summary" {
			require.Len(t, c.Children, 2, "sections 1 and 2 under the heading of headings")
		}
	}
	for _, entry := range []string{"PSUR periodic safety update report", "TD technical documentation", "Labelled in the language of the user"} {
		_, ok := got[entry]
		require.False(t, ok, "%q is an abbreviation or a list item, not a heading", entry)
	}
}
