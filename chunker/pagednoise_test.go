package chunker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// pdfSeg is a run of text on a PDF line; sup sets it as a superscript
// (smaller, raised with the Ts text rise operator).
type pdfSeg struct {
	text string
	sup  bool
}

// pdfTextLine is one line of a synthetic PDF page.
type pdfTextLine struct {
	y    float64
	size float64
	bold bool
	segs []pdfSeg
}

func pl(y, size float64, text string) pdfTextLine {
	return pdfTextLine{y: y, size: size, segs: []pdfSeg{{text: text}}}
}

// pagedPDF builds an A4 PDF (595 × 842 pt) with one page per entry, set in
// Helvetica and Helvetica-Bold with a width table, as word processors
// write them: one BT … ET per line, superscripts by text rise.
func pagedPDF(pages [][]pdfTextLine) []byte {
	esc := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	widths := make([]string, 95)
	for i := range widths {
		switch c := rune(32 + i); {
		case c == ' ' || c == 'i' || c == 'l' || c == 'j' || c == '.' || c == ',' || c == ':' || c == ';' || c == '(' || c == ')':
			widths[i] = "278"
		case c >= 'A' && c <= 'Z':
			widths[i] = "667"
		default:
			widths[i] = "556"
		}
	}
	font := func(name string) string {
		return "<< /Type /Font /Subtype /Type1 /BaseFont /" + name + " /Encoding /WinAnsiEncoding /FirstChar 32 /LastChar 126 /Widths [" + strings.Join(widths, " ") + "] >>"
	}
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", font("Helvetica"), font("Helvetica-Bold")}
	var kids []string
	for _, pg := range pages {
		var cs strings.Builder
		for _, l := range pg {
			f := "/F1"
			if l.bold {
				f = "/F2"
			}
			fmt.Fprintf(&cs, "BT %s %g Tf 72 %g Td ", f, l.size, l.y)
			for _, s := range l.segs {
				if s.sup {
					fmt.Fprintf(&cs, "%s %g Tf %g Ts (%s) Tj %s %g Tf 0 Ts ", f, l.size*0.6, l.size*0.35, esc.Replace(s.text), f, l.size)
				} else {
					fmt.Fprintf(&cs, "(%s) Tj ", esc.Replace(s.text))
				}
			}
			cs.WriteString("ET\n")
		}
		content := cs.String()
		page := len(objs) + 1
		kids = append(kids, itoa(page)+" 0 R")
		objs = append(objs,
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents "+itoa(page+1)+" 0 R /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> >>",
			"<< /Length "+itoa(len(content))+" >>\nstream\n"+content+"\nendstream")
	}
	objs[1] = "<< /Type /Pages /Kids [" + strings.Join(kids, " ") + "] /Count " + itoa(len(pages)) + " >>"
	var sb strings.Builder
	sb.WriteString("%PDF-1.4\n")
	var offs []int
	for i, o := range objs {
		offs = append(offs, sb.Len())
		sb.WriteString(itoa(i+1) + " 0 obj\n" + o + "\nendobj\n")
	}
	xref := sb.Len()
	sb.WriteString("xref\n0 " + itoa(len(objs)+1) + "\n0000000000 65535 f \n")
	for _, o := range offs {
		fmt.Fprintf(&sb, "%010d 00000 n \n", o)
	}
	sb.WriteString("trailer\n<< /Size " + itoa(len(objs)+1) + " /Root 1 0 R >>\nstartxref\n" + itoa(xref) + "\n%%EOF\n")
	return []byte(sb.String())
}

// guidancePDF is a six-page guidance document in the shape of the EU's
// PDFs: a running header and a "Page N of 6" footer on every page, bold
// numbered headings, footnotes in 8 pt above the footer (their numbers
// superscript on even pages), called by superscript numbers in the body;
// a sentence runs from page 3 onto page 4 across that page's footnote
// block and furniture; "Rationale:" opens three pages and four more
// paragraphs inside pages (text, not a header).
func guidancePDF() []byte {
	var pages [][]pdfTextLine
	fn := 0
	for p := 1; p <= 6; p++ {
		pg := []pdfTextLine{pl(812, 9, "MDCG 2099-1 Guidance on the summary of safety")}
		y := 760.0
		line := func(l pdfTextLine) {
			l.y = y
			pg = append(pg, l)
			y -= 14
		}
		gap := func() { y -= 12 }
		rationale := func(text string) {
			line(pl(0, 11, "Rationale:"))
			line(pl(0, 11, text))
			gap()
		}
		switch p {
		case 1:
			pg = append(pg, pdfTextLine{y: 780, size: 16, bold: true, segs: []pdfSeg{{text: "Guidance on the summary of safety and performance"}}})
			y = 740
		case 2, 3, 5:
			rationale("The rationale of clause " + itoa(p-1) + " is set out in the lines that follow here.")
		case 4:
			line(pl(0, 11, "on the next page without a break in the text."))
			gap()
		}
		line(pdfTextLine{size: 11, bold: true, segs: []pdfSeg{{text: itoa(p) + " Clause title number " + itoa(p)}}})
		var notes []string
		for k := 1; k <= 3; k++ {
			first := pdfTextLine{size: 11, segs: []pdfSeg{{text: "Paragraph " + itoa(k) + " of clause " + itoa(p) + " says what the manufacturer"}}}
			if k == 2 && p != 5 {
				fn++
				first.segs = append(first.segs, pdfSeg{text: itoa(fn), sup: true})
				notes = append(notes, itoa(fn)+" MDR, Article "+itoa(30+fn)+" ("+itoa(fn)+")")
			}
			first.segs = append(first.segs, pdfSeg{text: " shall draw up and keep"})
			line(first)
			line(pl(0, 11, "up to date for each device, with the evidence for it."))
			if p == 3 && k == 3 {
				line(pl(0, 11, "This sentence of clause 3 runs to the end of the page and"))
				continue
			}
			gap()
			if k == 1 && p >= 5 {
				rationale("Closing text of the clause " + itoa(p) + ".")
			}
			if k == 2 && p == 6 {
				rationale("Two more lines of it.")
				rationale("And the last one.")
			}
		}
		fy := 90.0
		for _, n := range notes {
			num, rest, _ := strings.Cut(n, " ")
			pg = append(pg, pdfTextLine{y: fy, size: 8, segs: []pdfSeg{{text: num, sup: p%2 == 0}, {text: " " + rest}}})
			fy -= 10
		}
		pg = append(pg, pl(30, 9, "Page "+itoa(p)+" of 6"))
		pages = append(pages, pg)
	}
	return pagedPDF(pages)
}

// TestPDFPageNoise: the same page-noise rules as for PDF conversions,
// with the PDF's own page boundaries and layout.
func TestPDFPageNoise(t *testing.T) {
	root, err := chunker.Parse("pdf", guidancePDF())
	require.NoError(t, err)
	reasons := map[string]int{}
	for _, n := range root.Noise {
		reasons[n.Reason]++
		if n.Reason == "footnote call" {
			require.Regexp(t, `^\d$`, n.Text)
		}
	}
	// By construction: the header on all six pages, the footer on all six,
	// five footnote calls (on every page but the fifth).
	require.Equal(t, map[string]int{"running header or footer": 6, "page number": 6, "footnote call": 5}, reasons, "%v", root.Noise)
	var notes []string
	rationale := 0
	visit(root, "", func(e *chunker.Element, path string) {
		require.NotContains(t, e.Text+e.Title, "MDCG 2099-1", path)
		require.NotContains(t, e.Text, "Page ", path)
		if e.Kind != chunker.KindNote {
			require.NotContains(t, e.Text, "MDR, Article", "footnotes stay out of the text (%s)", path)
		}
		require.NotRegexp(t, `manufacturer\d`, e.Text, path)
		for i, c := range e.Children {
			if c.Kind == chunker.KindNote {
				notes = append(notes, c.Text)
				require.Positive(t, i, path)
				require.Contains(t, e.Children[i-1].Text, "Paragraph 2 of clause", "a note follows the paragraph that calls it (%s)", path)
			}
		}
		if e.Text == "Rationale:" || strings.HasPrefix(e.Text, "Rationale: ") {
			rationale++
		}
	})
	require.Equal(t, []string{"1 MDR, Article 31 (1)", "2 MDR, Article 32 (2)", "3 MDR, Article 33 (3)", "4 MDR, Article 34 (4)", "5 MDR, Article 35 (5)"}, notes)
	require.Equal(t, 7, rationale, "a line that opens pages but is found as often in the body is text")
	requireLeafContains(t, root, "runs to the end of the page and on the next page without a break in the text.")
	requireLeafContains(t, root, "says what the manufacturer shall draw up")
	var cited []string
	visit(root, "", func(e *chunker.Element, _ string) {
		if e.Kind == chunker.KindSection {
			cited = append(cited, e.Citation)
		}
	})
	for p := 1; p <= 6; p++ {
		require.Contains(t, cited, itoa(p))
	}
}
