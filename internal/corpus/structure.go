package corpus

import (
	"regexp"
	"strconv"
	"strings"
)

// Unit is a numbered unit of a corpus document (an article, a paragraph,
// a clause, an annex, a section heading) as the document cites it, with
// the citation of the unit it belongs to ("" for the document itself).
type Unit struct {
	Kind     string // "article", "paragraph", "clause", "annex", …
	Citation string
	Parent   string
}

// ExpectedUnits reads the numbered units of a corpus document from its raw
// bytes by means independent of the chunker: the publisher's ids (EUR-Lex
// ELI ids), line patterns at column 0 (RFC headings, Russian articles and
// their parts), heading tags, or a list written by reading the file
// (MDCG 2019-9). ok is false for a document without such a list. The
// counts per kind are checked against counts made by hand in the chunker's
// tests (TestStructureOfCorpus); the chunker is measured against them
// (cmd/bench's structure table).
func ExpectedUnits(name string, raw []byte) (units []Unit, ok bool) {
	s := string(raw)
	switch name {
	case "rfc7231.txt", "rfc7239.txt":
		return rfcUnits(s), true
	case "constitutionrf.txt":
		return constitutionUnits(s), true
	case "spdx-2.3-package-information.md":
		return mdNumberedHeadings(s), true
	case "openchain-security-specification-1.1.md", "openchain-security-specification-1.1.docx", "openchain-security-specification-1.1.pdf":
		return openChainUnits(), true
	case "go_spec.html":
		return htmlHeadings(s), true
	case "eu-mdr-2017-745-oj.html":
		return MDRUnits(s), true
	case "OpenChainSpec-2.0-Translation-ru.docx":
		return openChainRuUnits(), true
	case "mdcg-2019-9-rev1-sscp.md":
		return append(mdcgUnits(), mdcgHeadings()...), true
	case "crd-2011-83-consolidated-excerpt.html":
		return crdUnits(), true
	}
	return nil, false
}

var (
	rfcNumbered = regexp.MustCompile(`(?m)^((?:\d+|[A-Z])(?:\.\d+)*)\.  +\S`)
	rfcAppendix = regexp.MustCompile(`(?m)^Appendix ([A-Z])\.  +\S`)
)

// rfcUnits: section headings at column 0 ("6.5.1.  400 Bad Request",
// "Appendix A.  …", "A.1.  …"); the table of contents is indented.
func rfcUnits(s string) []Unit {
	var out []Unit
	type hit struct {
		at   int
		unit Unit
	}
	var hits []hit
	for _, m := range rfcAppendix.FindAllStringSubmatchIndex(s, -1) {
		hits = append(hits, hit{m[0], Unit{"appendix", "Appendix " + s[m[2]:m[3]], ""}})
	}
	for _, m := range rfcNumbered.FindAllStringSubmatchIndex(s, -1) {
		n := s[m[2]:m[3]]
		if !strings.Contains(n, ".") && n[0] >= 'A' && n[0] <= 'Z' {
			continue // "A." alone is not a heading form here
		}
		parent := ""
		if i := strings.LastIndexByte(n, '.'); i > 0 {
			parent = n[:i]
			if len(parent) == 1 && parent[0] >= 'A' && parent[0] <= 'Z' {
				parent = "Appendix " + parent
			}
		}
		hits = append(hits, hit{m[0], Unit{"section", n, parent}})
	}
	for _, h := range hits {
		out = append(out, h.unit)
	}
	return out
}

// constitutionUnits: "РАЗДЕЛ ПЕРВЫЙ", "ГЛАВА N.", "Статья N" lines, and in
// an article the lines opening with "N. " (its parts) and "а) " (its
// points, of the part before them if any).
func constitutionUnits(s string) []Unit {
	var out []Unit
	razdel, glava, art, part := "", "", "", ""
	for _, l := range strings.Split(strings.TrimPrefix(s, "\ufeff"), "\n") {
		l = strings.TrimRight(l, "\r ")
		switch {
		case strings.HasPrefix(l, "РАЗДЕЛ "):
			razdel = "Раздел " + strings.ToLower(strings.Fields(l)[1])
			out = append(out, Unit{"part", razdel, ""})
			art, part = "", ""
		case strings.HasPrefix(l, "ГЛАВА "):
			glava = "Глава " + strings.TrimSuffix(strings.Fields(l)[1], ".")
			out = append(out, Unit{"chapter", glava, razdel})
			art, part = "", ""
		case strings.HasPrefix(l, "Статья "):
			art = "Статья " + strings.TrimSuffix(strings.Fields(l)[1], ".")
			out = append(out, Unit{"article", art, glava})
			part = ""
		case strings.HasPrefix(l, "----"):
			art, part = "", ""
		case art != "":
			if m := partLine.FindStringSubmatch(l); m != nil {
				part = art + " часть " + m[1]
				out = append(out, Unit{"part of article", part, art})
			} else if m := pointLine.FindStringSubmatch(l); m != nil {
				parent := art
				if part != "" {
					parent = part
				}
				out = append(out, Unit{"point", parent + " пункт " + m[1], parent})
			}
		}
	}
	return out
}

var (
	partLine  = regexp.MustCompile(`^(\d+)\. `)
	pointLine = regexp.MustCompile(`^([а-я](?:\.\d)?)\) `)
	mdNumHead = regexp.MustCompile(`(?m)^#+ (\d+(?:\.\d+)*)[ :\-]`)
	htmlHead  = regexp.MustCompile(`<h([2-6])(?: id="[^"]*")?>([^<]*(?:<[^>]+>[^<]*)*?)</h[2-6]>`)
	tagRe     = regexp.MustCompile(`<[^>]+>`)
)

// mdNumberedHeadings: "#… 7.1 Title" headings; the parent is the number
// without its last part.
func mdNumberedHeadings(s string) []Unit {
	var out []Unit
	for _, m := range mdNumHead.FindAllStringSubmatch(s, -1) {
		parent := ""
		if i := strings.LastIndexByte(m[1], '.'); i > 0 {
			parent = m[1][:i]
		}
		out = append(out, Unit{"clause", m[1], parent})
	}
	return out
}

// openChainUnits: the numbered clauses of the OpenChain Security Assurance
// Specification 1.1, the same in its three renditions (MANIFEST): 1, 2
// with 2.1–2.14, 3 with 3.1–3.4 and their leaves.
func openChainUnits() []Unit {
	out := []Unit{{"clause", "1", ""}, {"clause", "2", ""}, {"clause", "3", ""}}
	for i := 1; i <= 14; i++ {
		out = append(out, Unit{"clause", "2." + strconv.Itoa(i), "2"})
	}
	for sub, leaves := range []int{5, 2, 2, 2} {
		n := "3." + strconv.Itoa(sub+1)
		out = append(out, Unit{"clause", n, "3"})
		for k := 1; k <= leaves; k++ {
			out = append(out, Unit{"clause", n + "." + strconv.Itoa(k), n})
		}
	}
	return out
}

// openChainRuUnits: the Russian translation of the OpenChain
// Specification 2.0 read by hand (its document.xml): three Heading 1
// paragraphs numbered 1)–3) by Word (Введение, Определения, Условия);
// under Условия the Heading 2 sections 1.0–6.0, their requirements 1.1–1.5,
// 2.1–2.2, 3.1–3.2, 4.1, 5.1, 6.1–6.2 and the verification materials under
// each (1.1.1–1.1.2, 1.2.1–1.2.3, 1.3.1, 1.4.1, 1.5.1, 2.1.1–2.1.2,
// 2.2.1–2.2.5, 3.1.1–3.1.2, 3.2.1, 4.1.1–4.1.2, 5.1.1–5.1.3, 6.1.1,
// 6.2.1); and Приложение I.
func openChainRuUnits() []Unit {
	out := []Unit{{"section", "1", ""}, {"section", "2", ""}, {"section", "3", ""}}
	reqs := [][]int{{2, 3, 1, 1, 1}, {2, 5}, {2, 1}, {2}, {3}, {1, 1}}
	for i, rs := range reqs {
		top := strconv.Itoa(i+1) + ".0"
		out = append(out, Unit{"clause", top, "3"})
		for j, leaves := range rs {
			req := strconv.Itoa(i+1) + "." + strconv.Itoa(j+1)
			out = append(out, Unit{"clause", req, top})
			for k := 1; k <= leaves; k++ {
				out = append(out, Unit{"clause", req + "." + strconv.Itoa(k), req})
			}
		}
	}
	return append(out, Unit{"annex", "Приложение I", ""})
}

// htmlHeadings: <h2>–<h6>, cited by their titles; the parent is
// the last heading of a higher level.
func htmlHeadings(s string) []Unit {
	var out []Unit
	open := map[int]string{}
	for _, m := range htmlHead.FindAllStringSubmatch(s, -1) {
		level := int(m[1][0] - '0')
		title := strings.Join(strings.Fields(tagRe.ReplaceAllString(m[2], "")), " ")
		parent := ""
		for l := level - 1; l >= 2; l-- {
			if p, ok := open[l]; ok {
				parent = p
				break
			}
		}
		open[level] = title
		for l := level + 1; l <= 6; l++ {
			delete(open, l)
		}
		out = append(out, Unit{"heading", title, parent})
	}
	return out
}

var mdrIDs = regexp.MustCompile(`id="(art_\d+|\d{3}\.\d{3}|rct_\d+|anx_[IVX]+|cpt_[IVX]+(?:\.sct_\d+)?)"`)

// MDRUnits are the numbered units of the MDR read from the Official
// Journal's ELI ids: art_N (Article N, under the chapter or section whose
// id opens last before it), NNN.MMM (paragraph M of article N), rct_N
// (Recital N), anx_X (Annex X), cpt_X (Chapter X), cpt_X.sct_N (Chapter X
// Section N); and the 71 definitions of Article 2, points (1)–(71).
func MDRUnits(raw string) []Unit {
	var out []Unit
	division := ""
	for _, m := range mdrIDs.FindAllStringSubmatch(raw, -1) {
		id := m[1]
		switch {
		case strings.HasPrefix(id, "art_"):
			out = append(out, Unit{"article", "Article " + id[4:], division})
		case strings.HasPrefix(id, "rct_"):
			out = append(out, Unit{"recital", "Recital " + id[4:], ""})
		case strings.HasPrefix(id, "anx_"):
			out = append(out, Unit{"annex", "Annex " + id[4:], ""})
		case strings.HasPrefix(id, "cpt_"):
			chapter, section, hasSection := strings.Cut(id[4:], ".sct_")
			if hasSection {
				division = "Chapter " + chapter + " Section " + section
				out = append(out, Unit{"section", division, "Chapter " + chapter})
			} else {
				division = "Chapter " + chapter
				out = append(out, Unit{"chapter", division, ""})
			}
		default:
			art, _ := strconv.Atoi(id[:3])
			para, _ := strconv.Atoi(id[4:])
			a := "Article " + strconv.Itoa(art)
			out = append(out, Unit{"paragraph", a + "(" + strconv.Itoa(para) + ")", a})
		}
	}
	for i := 1; i <= 71; i++ {
		out = append(out, Unit{"definition", "Article 2(" + strconv.Itoa(i) + ")", "Article 2"})
	}
	return out
}

// mdcgUnits: MDCG 2019-9 read by hand. The guidance numbers sections 1–9
// with 1.1–1.9, 2.1–2.3, 3.1–3.4, 4.1–4.3 and 5.1–5.5 (five of them with a
// footnote mark glued on in the file: "501.5.", "511.6.", "543.3.",
// "795.4.", "855.5."); the Appendix's template repeats that numbering.
func mdcgUnits() []Unit {
	const appendix = "Appendix: Template for the SSCP"
	subs := []int{9, 3, 4, 3, 5, 0, 0, 0, 0}
	var out []Unit
	for _, scope := range []string{"", appendix} {
		for top := 1; top <= 9; top++ {
			n := strconv.Itoa(top)
			kind := "clause"
			if scope != "" {
				kind = "template clause"
			}
			out = append(out, Unit{kind, join(scope, n), scope})
			for k := 1; k <= subs[top-1]; k++ {
				out = append(out, Unit{kind, join(scope, n+"."+strconv.Itoa(k)), join(scope, n)})
			}
		}
	}
	return out
}

// mdcgHeadings: the unnumbered body headings of MDCG 2019-9, read by hand
// (plain-text lines in the file), with the heading each belongs to where
// the text shows it: a heading with no text before the next heading holds
// the headings after it ("Validation and uploading of the SSCP" and the
// four "Validation …"/"Uploading …" headings whose subjects it names);
// headings inside a numbered section belong to it. The four topics after
// "General requirements and recommendations for the SSCP" carry no sign
// of their level in the file and count at the top.
func mdcgHeadings() []Unit {
	const validation = "Validation and uploading of the SSCP"
	var out []Unit
	for _, h := range [][2]string{
		{"Introduction", ""},
		{"Abbreviations", ""},
		{"General requirements and recommendations for the SSCP", ""},
		{"Translations to other EU languages", ""},
		{"Relevant SSCP information for patients", ""},
		{"Readability", ""},
		{"Stylistic recommendations", ""},
		{validation, ""},
		{"Validation of the initial SSCP by the NB", validation},
		{"Validation of updates of the SSCP between certification activities", validation},
		{"Validation of SSCP at certificate renewal", validation},
		{"Uploading of the SSCP in Eudamed", validation},
		{"Guidance for each of the required sections of the SSCP document", ""},
		{"Description of residual risks and undesirable effects", "4.1"},
		{"Quantitative data", "4.1"},
		{"The information on clinical evaluation and PMCF intended for patients, in section 5", "5"},
		{"References", ""},
		{"Appendix: Template for the SSCP", ""},
		{"Summary of safety and clinical performance", "Appendix: Template for the SSCP"},
	} {
		out = append(out, Unit{"heading", h[0], h[1]})
	}
	return out
}

func join(scope, n string) string {
	if scope == "" {
		return n
	}
	return scope + " " + n
}

// crdUnits: the consolidated excerpt of Directive 2011/83/EU read by
// hand: Articles 1–3; Article 2's definitions (1)–(21) with (4a) inserted,
// the points (a)–(d) of definition (8) and (a)–(b) of definition (9);
// Article 3's paragraphs 1, 1a (inserted), 2–6 and the points (a)–(n) of
// paragraph 3.
func crdUnits() []Unit {
	out := []Unit{{"article", "Article 1", ""}, {"article", "Article 2", ""}, {"article", "Article 3", ""}}
	defs := []string{"1", "2", "3", "4", "4a"}
	for i := 5; i <= 21; i++ {
		defs = append(defs, strconv.Itoa(i))
	}
	for _, d := range defs {
		c := "Article 2(" + d + ")"
		out = append(out, Unit{"definition", c, "Article 2"})
		switch d {
		case "8":
			for _, l := range "abcd" {
				out = append(out, Unit{"point", c + "(" + string(l) + ")", c})
			}
		case "9":
			for _, l := range "ab" {
				out = append(out, Unit{"point", c + "(" + string(l) + ")", c})
			}
		}
	}
	for _, n := range []string{"1", "1a", "2", "3", "4", "5", "6"} {
		out = append(out, Unit{"paragraph", "Article 3(" + n + ")", "Article 3"})
	}
	for _, l := range "abcdefghijklmn" {
		out = append(out, Unit{"point", "Article 3(3)(" + string(l) + ")", "Article 3(3)"})
	}
	return out
}
