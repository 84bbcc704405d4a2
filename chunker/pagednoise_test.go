package chunker_test

import (
	"archive/zip"
	"bytes"
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

// docxRun is a run of a synthetic DOCX paragraph.
type docxRun struct {
	text string
	sup  bool
	size int // half-points
	bold bool
}

// docxPara is a paragraph of a synthetic DOCX; brk is how a page break
// before or after it is written.
type docxPara struct {
	runs []docxRun
	brk  string // "sect" (section break after), "before" (pageBreakBefore), "rendered" (lastRenderedPageBreak first)
}

// docxPackage zips document.xml (and header1.xml when header is set) into
// a .docx.
func docxPackage(t *testing.T, paras []docxPara, header string) []byte {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	var body strings.Builder
	for _, p := range paras {
		body.WriteString("<w:p>")
		switch p.brk {
		case "sect":
			body.WriteString(`<w:pPr><w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr></w:pPr>`)
		case "before":
			body.WriteString(`<w:pPr><w:pageBreakBefore/></w:pPr>`)
		}
		for k, r := range p.runs {
			body.WriteString("<w:r><w:rPr>")
			if r.bold {
				body.WriteString("<w:b/>")
			}
			if r.sup {
				body.WriteString(`<w:vertAlign w:val="superscript"/>`)
			}
			fmt.Fprintf(&body, `<w:sz w:val="%d"/></w:rPr>`, r.size)
			if k == 0 && p.brk == "rendered" {
				body.WriteString("<w:lastRenderedPageBreak/>")
			}
			fmt.Fprintf(&body, `<w:t xml:space="preserve">%s</w:t></w:r>`, esc.Replace(r.text))
		}
		if p.brk == "page" {
			body.WriteString(`<w:r><w:br w:type="page"/></w:r>`)
		}
		body.WriteString("</w:p>")
	}
	const ns = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"word/document.xml":   `<?xml version="1.0" encoding="UTF-8"?><w:document ` + ns + `><w:body>` + body.String() + `</w:body></w:document>`,
	}
	if header != "" {
		files["word/header1.xml"] = `<?xml version="1.0" encoding="UTF-8"?><w:hdr ` + ns + `><w:p><w:r><w:t>` + esc.Replace(header) + `</w:t></w:r></w:p></w:hdr>`
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml", "word/header1.xml"} {
		if c, ok := files[name]; ok {
			w, err := zw.Create(name)
			require.NoError(t, err)
			_, err = w.Write([]byte(c))
			require.NoError(t, err)
		}
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// convertedDocx is guidancePDF's document as PDF-to-DOCX converters write
// it: one paragraph per block, explicit run sizes (body 11 pt, header,
// page number 9 pt, footnotes 8 pt), the running header, page number and
// footnotes as body paragraphs; pages end in each of the ways Word marks
// them (a section break, a page break, Word's last rendered page break,
// pageBreakBefore). The sentence that runs from page 3 onto page 4 is two
// paragraphs, split by the footnote, page number and header between them.
func convertedDocx(t *testing.T) []byte {
	var out []docxPara
	text := func(s string) docxPara { return docxPara{runs: []docxRun{{text: s, size: 22}}} }
	fn := 0
	for p := 1; p <= 6; p++ {
		hdr := docxPara{runs: []docxRun{{text: "MDCG 2099-1 Guidance on the summary of safety", size: 18}}}
		switch p {
		case 4:
			hdr.brk = "rendered"
		case 5:
			hdr.brk = "before"
		}
		out = append(out, hdr)
		rationale := func(s string) { out = append(out, text("Rationale:"), text(s)) }
		switch p {
		case 1:
			out = append(out, docxPara{runs: []docxRun{{text: "Guidance on the summary of safety and performance", size: 32, bold: true}}})
		case 2, 3, 5:
			rationale("The rationale of clause " + itoa(p-1) + " is set out in the lines that follow here.")
		case 4:
			out = append(out, text("on the next page without a break in the text."))
		}
		out = append(out, docxPara{runs: []docxRun{{text: itoa(p) + " Clause title number " + itoa(p), size: 22, bold: true}}})
		var notes []string
		for k := 1; k <= 3; k++ {
			para := docxPara{runs: []docxRun{{text: "Paragraph " + itoa(k) + " of clause " + itoa(p) + " says what the manufacturer", size: 22}}}
			if k == 2 && p != 5 {
				fn++
				para.runs = append(para.runs, docxRun{text: itoa(fn), sup: true, size: 14})
				notes = append(notes, itoa(fn)+" MDR, Article "+itoa(30+fn)+" ("+itoa(fn)+")")
			}
			end := " shall draw up and keep up to date for each device, with the evidence for it."
			if p == 3 && k == 3 {
				end += " This sentence of clause 3 runs to the end of the page and"
			}
			para.runs = append(para.runs, docxRun{text: end, size: 22})
			out = append(out, para)
			if k == 1 && p >= 5 {
				rationale("Closing text of the clause " + itoa(p) + ".")
			}
			if k == 2 && p == 6 {
				rationale("Two more lines of it.")
				rationale("And the last one.")
			}
		}
		for _, n := range notes {
			num, rest, _ := strings.Cut(n, " ")
			if p%2 == 0 {
				out = append(out, docxPara{runs: []docxRun{{text: num, sup: true, size: 10}, {text: rest, size: 16}}})
			} else {
				out = append(out, docxPara{runs: []docxRun{{text: num + " " + rest, size: 16}}})
			}
		}
		num := docxPara{runs: []docxRun{{text: itoa(p), size: 18}}}
		switch p {
		case 1, 5:
			num.brk = "sect"
		case 2:
			num.brk = "page"
		}
		out = append(out, num)
	}
	return docxPackage(t, out, "")
}

// TestDocxPageNoise: the page-noise rules in a DOCX converted from PDF, and
// a Word document's header and footer parts reported as noise.
func TestDocxPageNoise(t *testing.T) {
	root, err := chunker.Parse("docx", convertedDocx(t))
	require.NoError(t, err)
	reasons := map[string]int{}
	for _, n := range root.Noise {
		reasons[n.Reason]++
	}
	// By construction: the header and the page number on all six pages,
	// five footnote calls (every page but the fifth).
	require.Equal(t, map[string]int{"running header or footer": 6, "page number": 6, "footnote call": 5}, reasons, "%v", root.Noise)
	var notes []string
	rationale := 0
	visit(root, "", func(e *chunker.Element, path string) {
		require.NotContains(t, e.Text+e.Title, "MDCG 2099-1", path)
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
		if e.Text == "Rationale:" {
			rationale++
		}
	})
	require.Equal(t, []string{"1 MDR, Article 31 (1)", "2 MDR, Article 32 (2)", "3 MDR, Article 33 (3)", "4 MDR, Article 34 (4)", "5 MDR, Article 35 (5)"}, notes)
	require.Equal(t, 7, rationale, "a paragraph that opens pages but is found as often in the body is text")
	requireLeafContains(t, root, "runs to the end of the page and on the next page without a break in the text.")
	requireLeafContains(t, root, "says what the manufacturer shall draw up")

	// A Word document: the running header is in a header part, not in the
	// body; its text is reported, and a body paragraph is not dropped for
	// merely opening pages.
	var paras []docxPara
	for p := 1; p <= 4; p++ {
		paras = append(paras, docxPara{runs: []docxRun{{text: "Scope of clause " + itoa(p) + " in a sentence.", size: 22}}, brk: map[bool]string{true: "page"}[p < 4]})
	}
	root, err = chunker.Parse("docx", docxPackage(t, paras, "ACME Quality Manual"))
	require.NoError(t, err)
	require.Equal(t, []chunker.Noise{{Text: "ACME Quality Manual", Reason: "running header or footer"}}, root.Noise)
	require.Equal(t, 4, countKind(root, chunker.KindParagraph))
}

// TestCorpusPageNoise: what the PDF and DOCX readers drop from the corpus
// renditions, against what reading the files shows. The OpenChain PDF's
// nine pages carry no running header, footer or page number in their text
// layer (every line lies between 81 and 708 pt of a 792 pt page, all of it
// body); its DOCX has no header or footer part and no page break. The
// Russian DOCX has twelve pages (ten page breaks, Word's rendered breaks)
// and no furniture in its body; its header part holds "Спецификация
// OpenChain 2.0 (проект) rc2", its footer part "2019 a" and "Страница 16
// из 16" (a PAGE field), and its table of contents ten entries.
func TestCorpusPageNoise(t *testing.T) {
	for name, want := range map[string]map[string]int{
		"openchain-security-specification-1.1.pdf":  {},
		"openchain-security-specification-1.1.docx": {},
		"OpenChainSpec-2.0-Translation-ru.docx":     {"running header or footer": 3, "table of contents": 10},
	} {
		root := parseDoc(t, name)
		got := map[string]int{}
		var furniture []string
		for _, n := range root.Noise {
			got[n.Reason]++
			if n.Reason == "running header or footer" {
				furniture = append(furniture, n.Text)
			}
		}
		require.Equal(t, want, got, "%s: %v", name, root.Noise)
		if name == "OpenChainSpec-2.0-Translation-ru.docx" {
			require.Equal(t, []string{"2019 a", "Страница 16 из 16", "Спецификация OpenChain 2.0 (проект) rc2"}, furniture)
		}
	}
}
