package chunker

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Limits on what the docx parser reads, against zip bombs: a .docx of a few
// kilobytes can claim gigabytes of XML. They are package variables so a
// program can raise them before parsing; they are read on every Parse.
var (
	// MaxDocxBytes caps the total uncompressed bytes read from one .docx
	// (all parts together), 64 MiB by default.
	MaxDocxBytes int64 = 64 << 20
	// MaxDocxEntries caps the number of entries in one .docx archive.
	MaxDocxEntries = 10000
)

// DOCX (WordprocessingML) parsing, with archive/zip and encoding/xml only.
//
//   - Headings: a paragraph whose style (followed through w:basedOn) has a
//     w:outlineLvl, or whose style name is "heading N" / "Title" (names, not
//     ids, so localized style ids such as "Заголовок1" work). The heading
//     level is outlineLvl+1 (Title is 1). The address is the heading's
//     number: Word auto-numbering rendered as Word shows it ("1)" → "1"),
//     else a number written in the text ("3.1.1 - Policy" → "3.1.1"), else
//     an annex label ("Приложение I", "Annex A"), else the title's slug.
//   - Numbered paragraphs that are not heading-styled but read like clause
//     headings (short, a number such as "1.2" or rendered "1.1" that fits
//     under an open section, a letter after it, no final punctuation) open
//     a section one level below the section they fit under. Table of
//     contents paragraphs (styles "toc N", "TOC Heading") are dropped.
//   - A list paragraph (w:numPr) or a paragraph whose text starts with a
//     number one level deeper than the innermost numbered section
//     ("1.1.1 документированная политика …" under 1.1) is a KindClause
//     addressed by that number; other consecutive list paragraphs form one
//     KindList, one item a line prefixed by its rendered number or "-".
//   - Tables (w:tbl) are KindTable, one row a line, cells joined by " | ";
//     rows marked w:tblHeader, else the first row, are header rows.
//   - Footnotes and endnotes: the reference becomes "[n]" in the text and
//     the note a KindNote right after the paragraph.
//   - Hyperlinks keep their text; their targets (relationship targets or
//     "#bookmark") are recorded in Element.Links.
func parseDocx(content []byte) (*Element, error) {
	zr, err := zip.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return nil, fmt.Errorf("open docx archive: %w", err)
	}
	if len(zr.File) > MaxDocxEntries {
		return nil, fmt.Errorf("docx archive has %d entries, over the limit of %d", len(zr.File), MaxDocxEntries)
	}
	d := &docx{files: map[string]*zip.File{}, budget: MaxDocxBytes}
	for _, f := range zr.File {
		d.files[strings.TrimPrefix(f.Name, "/")] = f
	}
	main := "word/document.xml"
	if _, ok := d.files[main]; !ok {
		return nil, fmt.Errorf("docx part %s missing (not a Word document?)", main)
	}
	if err := d.loadStyles(); err != nil {
		return nil, err
	}
	if err := d.loadNumbering(); err != nil {
		return nil, err
	}
	d.rels = d.loadRels("word/_rels/document.xml.rels")
	d.notes = map[string]string{}
	for _, part := range []string{"word/footnotes.xml", "word/endnotes.xml"} {
		if err := d.loadNotes(part); err != nil {
			return nil, err
		}
	}
	raw, err := d.read(main)
	if err != nil {
		return nil, err
	}
	blocks, err := d.body(raw)
	if err != nil {
		return nil, fmt.Errorf("docx part %s: %w", main, err)
	}
	noise, err := d.pageNoise(blocks)
	if err != nil {
		return nil, err
	}
	d.b = newBuilder()
	d.b.root.Noise = noise
	for _, bl := range blocks {
		if !bl.drop {
			d.emit(bl)
		}
	}
	d.flushList()
	return d.b.root, nil
}

// docxPatterns holds the DOCX parser's patterns; docxRe compiles them.
type docxPatterns struct {
	headerFooterPart, headingStyleName, headingStyleID, clauseHead *regexp.Regexp
	annexHead, numberAddress                                       *regexp.Regexp
}

// docxRe returns the DOCX parser's patterns, compiled on first use.
var docxRe = sync.OnceValue(func() *docxPatterns {
	return &docxPatterns{
		headerFooterPart: regexp.MustCompile(`^word/(?:header|footer)\d*\.xml$`),
		headingStyleName: regexp.MustCompile(`^heading ([1-9])$`),
		headingStyleID:   regexp.MustCompile(`^(?:Heading|heading)([1-9])$`),
		// clauseHead is a clause number at the start of a paragraph: "1.2
		// Компетенция", "1.4Объем Программы", "3.1.1.1: A documented …".
		clauseHead: regexp.MustCompile(`^(\d{1,3}(?:\.\d{1,3})+)\.?(?:\s*[:\-–—]\s*|\s*)(\S.*)$`),
		// annexHead is an annex heading: "Annex A", "Appendix B", "Приложение I",
		// "ПРИЛОЖЕНИЕ А".
		annexHead:     regexp.MustCompile(`^(Annex|ANNEX|Appendix|APPENDIX|Приложение|ПРИЛОЖЕНИЕ)\s+([A-ZА-ЯЁ]|[IVX]{1,5}|\d{1,2})\b`),
		numberAddress: regexp.MustCompile(`^\d{1,3}(?:\.\d{1,3})*$`),
	}
})

// pageNoise applies the page-noise rules (pagenoise.go) to the body's
// blocks, pages divided by page breaks (w:br w:type="page", Word's
// w:lastRenderedPageBreak, w:pageBreakBefore) and section breaks: what
// converters from PDF leave in the body (running headers and footers,
// page numbers, footnote blocks at page ends — notes of the paragraph
// whose superscript calls them) is dropped or moved. The header and
// footer parts are not body text: their lines are reported as noise and
// are running headers wherever the body repeats them.
func (d *docx) pageNoise(blocks []docxBlock) ([]Noise, error) {
	var noise []Noise
	known := map[string]bool{}
	var parts []string
	for name := range d.files {
		if docxRe().headerFooterPart.MatchString(name) {
			parts = append(parts, name)
		}
	}
	sort.Strings(parts)
	for _, name := range parts {
		raw, err := d.read(name)
		if err != nil {
			return nil, err
		}
		hb, err := d.body(raw)
		if err != nil {
			return nil, fmt.Errorf("docx part %s: %w", name, err)
		}
		for _, bl := range hb {
			text := bl.text
			if bl.table != nil {
				text = tableText(bl.table)
			}
			if text = normalizeSpace(text); text != "" {
				noise = append(noise, Noise{Text: text, Reason: "running header or footer"})
				known[lineSig(text)] = true
			}
		}
	}
	pt := &pagedText{units: make([]string, len(blocks)), drop: make([]string, len(blocks)), sups: make([][]span, len(blocks)), known: known}
	sizes := map[int]int{}
	start := 0
	for i, bl := range blocks {
		if bl.pageBefore && i > start {
			pt.pages = append(pt.pages, page{start, i})
			start = i
		}
		if bl.table != nil {
			pt.units[i] = normalizeSpace(tableText(bl.table))
		} else {
			pt.units[i] = bl.text
			pt.sups[i] = bl.sups
			if bl.size > 0 {
				sizes[bl.size] += utf8.RuneCountInString(bl.text)
			}
		}
		if bl.pageAfter {
			pt.pages = append(pt.pages, page{start, i + 1})
			start = i + 1
		}
	}
	if start < len(blocks) || len(pt.pages) == 0 {
		pt.pages = append(pt.pages, page{start, len(blocks)})
	}
	if len(sizes) > 0 {
		body, best := 0, -1
		for sz, n := range sizes {
			if n > best || n == best && sz > body {
				body, best = sz, n
			}
		}
		pt.bodySize = make([]bool, len(blocks))
		for i, bl := range blocks {
			pt.bodySize[i] = bl.size > 0 && float64(bl.size) >= 0.95*float64(body)
		}
	}
	notes, callNoise := pt.run()
	for i := range blocks {
		bl := &blocks[i]
		switch pt.drop[i] {
		case "":
			if bl.table == nil && pt.units[i] != bl.text {
				bl.text = pt.units[i]
			}
			bl.notes = append(bl.notes, notes[i]...)
		case "footnote":
			bl.drop = true
		default:
			bl.drop = true
			noise = append(noise, Noise{Text: pt.units[i], Reason: pt.drop[i]})
		}
	}
	// A paragraph a page break cut (the converter's page ended mid-sentence)
	// is one paragraph again.
	for p := 0; p+1 < len(pt.pages); p++ {
		prev, next := -1, -1
		for j := pt.pages[p].end - 1; j >= pt.pages[p].start && prev < 0; j-- {
			if !blocks[j].drop && strings.TrimSpace(blocks[j].text) != "" {
				prev = j
			}
		}
		for j := pt.pages[p+1].start; j < pt.pages[p+1].end && next < 0; j++ {
			if !blocks[j].drop && strings.TrimSpace(blocks[j].text) != "" {
				next = j
			}
		}
		if prev < 0 || next < 0 || !d.plain(blocks[prev]) || !d.plain(blocks[next]) {
			continue
		}
		a, b := &blocks[prev], &blocks[next]
		if r, _ := utf8.DecodeRuneInString(b.text); !unicode.IsLower(r) || strings.ContainsAny(a.text[len(a.text)-1:], ".!?:;") {
			continue
		}
		a.text += " " + b.text
		a.notes = append(a.notes, b.notes...)
		a.links = append(a.links, b.links...)
		b.drop = true
	}
	return append(noise, callNoise...), nil
}

// plain reports whether a block is a body paragraph: not a table, heading,
// table of contents entry or numbered paragraph.
func (d *docx) plain(bl docxBlock) bool {
	if bl.table != nil || bl.hasNum {
		return false
	}
	level, toc, numID, _ := d.styleInfo(bl.style)
	return level == 0 && !toc && numID == ""
}

type docx struct {
	files  map[string]*zip.File
	budget int64 // uncompressed bytes still allowed
	styles map[string]*docxStyle
	nums   map[string]*docxNum // numId → instance
	abs    map[string]*docxAbstract
	rels   map[string]string // relationship id → target
	notes  map[string]string // "f12" / "e3" → text
	noteN  int
	b      *builder
	list   []string // pending list items
	links  []Link   // links of the pending list
}

// read returns the uncompressed bytes of part, charged to the budget.
func (d *docx) read(part string) ([]byte, error) {
	f, ok := d.files[part]
	if !ok {
		return nil, nil
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("docx part %s: %w", part, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, d.budget+1))
	if err != nil {
		return nil, fmt.Errorf("docx part %s: %w", part, err)
	}
	if int64(len(b)) > d.budget {
		return nil, fmt.Errorf("docx part %s: uncompressed size exceeds the limit of %d bytes (MaxDocxBytes)", part, MaxDocxBytes)
	}
	d.budget -= int64(len(b))
	return b, nil
}

// xmlAttr returns the attribute with local name key.
func xmlAttr(se xml.StartElement, key string) string {
	for _, a := range se.Attr {
		if a.Name.Local == key {
			return a.Value
		}
	}
	return ""
}

func newXMLDecoder(b []byte) *xml.Decoder {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = false
	dec.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		if strings.EqualFold(label, "utf-8") || strings.EqualFold(label, "utf8") {
			return r, nil
		}
		return nil, fmt.Errorf("unsupported xml encoding %q", label)
	}
	return dec
}

// Styles.

type docxStyle struct {
	id, name, basedOn string
	outline           int // -1 when unset
	numID, ilvl       string
	sup               bool // the style sets superscript (w:vertAlign)
}

func (d *docx) loadStyles() error {
	d.styles = map[string]*docxStyle{}
	raw, err := d.read("word/styles.xml")
	if err != nil || raw == nil {
		return err
	}
	dec := newXMLDecoder(raw)
	var cur *docxStyle
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("docx part word/styles.xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "style":
				cur = &docxStyle{id: xmlAttr(t, "styleId"), outline: -1}
				d.styles[cur.id] = cur
			case "name":
				if cur != nil {
					cur.name = strings.ToLower(xmlAttr(t, "val"))
				}
			case "basedOn":
				if cur != nil {
					cur.basedOn = xmlAttr(t, "val")
				}
			case "outlineLvl":
				if cur != nil {
					if n, err := strconv.Atoi(xmlAttr(t, "val")); err == nil {
						cur.outline = n
					}
				}
			case "numId":
				if cur != nil {
					cur.numID = xmlAttr(t, "val")
				}
			case "ilvl":
				if cur != nil {
					cur.ilvl = xmlAttr(t, "val")
				}
			case "vertAlign":
				if cur != nil {
					cur.sup = xmlAttr(t, "val") == "superscript"
				}
			}
		case xml.EndElement:
			if t.Name.Local == "style" {
				cur = nil
			}
		}
	}
}

// styleInfo follows styleID's basedOn chain (at most 16 steps) and returns
// its heading level (0 for none), whether it is a table-of-contents style,
// and the numbering it inherits.
func (d *docx) styleInfo(styleID string) (level int, toc bool, numID, ilvl string) {
	id := styleID
	for i := 0; i < 16 && id != ""; i++ {
		s := d.styles[id]
		if s == nil {
			break
		}
		if i == 0 || level == 0 {
			if s.outline >= 0 && s.outline < 9 && level == 0 {
				level = s.outline + 1
			} else if m := docxRe().headingStyleName.FindStringSubmatch(s.name); m != nil && level == 0 {
				level = int(m[1][0] - '0')
			} else if (s.name == "title" || s.id == "Title") && level == 0 {
				level = 1
			}
		}
		if strings.HasPrefix(s.name, "toc ") || s.name == "toc heading" || strings.HasPrefix(s.id, "TOC") {
			toc = true
		}
		if numID == "" && s.numID != "" {
			numID, ilvl = s.numID, s.ilvl
		}
		id = s.basedOn
	}
	if level == 0 {
		// Style ids such as "Heading2" without a styles part.
		if m := docxRe().headingStyleID.FindStringSubmatch(styleID); m != nil {
			level = int(m[1][0] - '0')
		}
	}
	return level, toc, numID, ilvl
}

// Numbering.

type docxLevel struct {
	start   int
	format  string
	text    string
	started bool
}

type docxAbstract struct {
	levels   [9]docxLevel
	counters [9]int
	used     [9]bool
}

type docxNum struct {
	abstract  string
	overrides map[int]int // ilvl → start override
	applied   bool
}

func (d *docx) loadNumbering() error {
	d.nums, d.abs = map[string]*docxNum{}, map[string]*docxAbstract{}
	raw, err := d.read("word/numbering.xml")
	if err != nil || raw == nil {
		return err
	}
	dec := newXMLDecoder(raw)
	var ab *docxAbstract
	var num *docxNum
	lvl, ovr := -1, -1
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("docx part word/numbering.xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			val := xmlAttr(t, "val")
			switch t.Name.Local {
			case "abstractNum":
				ab = &docxAbstract{}
				for i := range ab.levels {
					ab.levels[i] = docxLevel{start: 1, format: "decimal"}
				}
				d.abs[xmlAttr(t, "abstractNumId")] = ab
			case "num":
				num = &docxNum{overrides: map[int]int{}}
				d.nums[xmlAttr(t, "numId")] = num
			case "abstractNumId":
				if num != nil {
					num.abstract = val
				}
			case "lvl":
				lvl = -1
				if n, err := strconv.Atoi(xmlAttr(t, "ilvl")); err == nil && n >= 0 && n < 9 {
					lvl = n
				}
			case "lvlOverride":
				ovr = -1
				if n, err := strconv.Atoi(xmlAttr(t, "ilvl")); err == nil && n >= 0 && n < 9 {
					ovr = n
				}
			case "startOverride":
				if num != nil && ovr >= 0 {
					if n, err := strconv.Atoi(val); err == nil {
						num.overrides[ovr] = n
					}
				}
			case "start":
				if ab != nil && lvl >= 0 && num == nil {
					if n, err := strconv.Atoi(val); err == nil {
						ab.levels[lvl].start = n
					}
				}
			case "numFmt":
				if ab != nil && lvl >= 0 && num == nil {
					ab.levels[lvl].format = val
				}
			case "lvlText":
				if ab != nil && lvl >= 0 && num == nil {
					ab.levels[lvl].text = val
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "abstractNum":
				ab = nil
			case "num":
				num = nil
			case "lvl":
				lvl = -1
			}
		}
	}
}

// render advances the counter of (numID, ilvl) and returns the number Word
// shows ("1.1", "a)"); "" for bullets, unknown lists and numId 0.
func (d *docx) render(numID, ilvlS string) (label string, bullet bool) {
	num := d.nums[numID]
	if num == nil || numID == "0" {
		return "", false
	}
	ab := d.abs[num.abstract]
	if ab == nil {
		return "", false
	}
	ilvl, _ := strconv.Atoi(ilvlS)
	if ilvl < 0 || ilvl > 8 {
		ilvl = 0
	}
	if !num.applied {
		num.applied = true
		for l, v := range num.overrides {
			ab.levels[l].start = v
			ab.used[l] = false
		}
	}
	lv := ab.levels[ilvl]
	if lv.format == "bullet" {
		return "", true
	}
	if lv.format == "none" {
		return "", false
	}
	if ab.used[ilvl] {
		ab.counters[ilvl]++
	} else {
		ab.counters[ilvl], ab.used[ilvl] = lv.start, true
	}
	for l := ilvl + 1; l < 9; l++ {
		ab.used[l] = false
	}
	text := lv.text
	for l := 0; l <= ilvl; l++ {
		c := ab.counters[l]
		if !ab.used[l] {
			c = ab.levels[l].start
		}
		text = strings.ReplaceAll(text, "%"+strconv.Itoa(l+1), formatNumber(c, ab.levels[l].format))
	}
	return strings.TrimSpace(text), false
}

// formatNumber renders n in a Word number format (decimal for formats it
// does not know).
func formatNumber(n int, format string) string {
	switch format {
	case "lowerLetter", "upperLetter", "russianLower", "russianUpper":
		alpha := "abcdefghijklmnopqrstuvwxyz"
		if strings.HasPrefix(format, "russian") {
			alpha = "абвгдежзиклмнопрстуфхцчшщэюя"
		}
		rs := []rune(alpha)
		if n < 1 {
			return strconv.Itoa(n)
		}
		r := rs[(n-1)%len(rs)]
		s := strings.Repeat(string(r), (n-1)/len(rs)+1)
		if strings.HasSuffix(format, "Upper") || format == "upperLetter" {
			s = strings.ToUpper(s)
		}
		return s
	case "lowerRoman", "upperRoman":
		s := roman(n)
		if format == "lowerRoman" {
			s = strings.ToLower(s)
		}
		return s
	case "decimalZero":
		if n < 10 {
			return "0" + strconv.Itoa(n)
		}
	}
	return strconv.Itoa(n)
}

func roman(n int) string {
	if n <= 0 || n >= 4000 {
		return strconv.Itoa(n)
	}
	vals := []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
	syms := []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}
	var sb strings.Builder
	for i, v := range vals {
		for n >= v {
			sb.WriteString(syms[i])
			n -= v
		}
	}
	return sb.String()
}

// Relationships and notes.

func (d *docx) loadRels(part string) map[string]string {
	out := map[string]string{}
	raw, err := d.read(part)
	if err != nil || raw == nil {
		return out
	}
	dec := newXMLDecoder(raw)
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Relationship" {
			out[xmlAttr(se, "Id")] = xmlAttr(se, "Target")
		}
	}
}

func (d *docx) loadNotes(part string) error {
	raw, err := d.read(part)
	if err != nil || raw == nil {
		return err
	}
	prefix := "f"
	if strings.Contains(part, "endnotes") {
		prefix = "e"
	}
	dec := newXMLDecoder(raw)
	var id string
	var sb strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("docx part %s: %w", part, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "footnote", "endnote":
				id = xmlAttr(t, "id")
				sb.Reset()
			case "p":
				if sb.Len() > 0 {
					sb.WriteByte(' ')
				}
			case "tab":
				sb.WriteByte(' ')
			case "t":
				var s string
				if err := dec.DecodeElement(&s, &t); err != nil {
					return fmt.Errorf("docx part %s: %w", part, err)
				}
				sb.WriteString(s)
			}
		case xml.EndElement:
			if t.Name.Local == "footnote" || t.Name.Local == "endnote" {
				if txt := normalizeSpace(sb.String()); txt != "" {
					d.notes[prefix+id] = txt
				}
			}
		}
	}
}

// Body.

// docxBlock is one paragraph or table of the body in document order.
type docxBlock struct {
	table    [][]string
	header   int // table header rows (tblHeader)
	style    string
	numID    string
	ilvl     string
	hasNum   bool // numPr present on the paragraph itself
	text     string
	links    []Link
	notes    []string // note texts referenced, in order, with their markers
	rendered string   // Word's auto number ("1.1", "a)"), "" for none
	bullet   bool
	// Layout, for the page-noise rules.
	sups       []span // superscript runs of digits in text (footnote calls)
	size       int    // dominant run size in half-points, 0 where unset
	pageBefore bool   // a page or section break comes before the text
	pageAfter  bool   // a page or section break ends the paragraph
	drop       bool   // page noise (recorded as Noise)
}

// body decodes document.xml into blocks. Tables nested in table cells are
// flattened into their cell's text.
func (d *docx) body(raw []byte) ([]docxBlock, error) {
	dec := newXMLDecoder(raw)
	var out []docxBlock
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "p":
			p, err := d.paragraph(dec)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		case "tbl":
			t, err := d.table(dec, 0)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
}

// paragraph reads a w:p whose start tag was consumed. Its text is
// written with white space collapsed, so the offsets of superscript runs
// stay valid.
func (d *docx) paragraph(dec *xml.Decoder) (docxBlock, error) {
	var p docxBlock
	var w textWriter
	var linkHref string
	linkStart := -1
	depth, inPPr, inRPr, inRun, inSect := 1, 0, 0, 0, 0
	runSup, runSize := false, 0
	supAtStart := false // the text so far is one superscript number
	sizes := map[int]int{}
	pageBreak := func() {
		if strings.TrimSpace(w.String()) == "" {
			p.pageBefore = true
		} else {
			p.pageAfter = true
		}
	}
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return p, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch t.Name.Local {
			case "pPr":
				inPPr = depth
			case "rPr":
				inRPr = depth
			case "r":
				if inRun == 0 {
					inRun, runSup, runSize = depth, false, 0
				}
			case "vertAlign":
				if inRun > 0 && inRPr > 0 {
					runSup = xmlAttr(t, "val") == "superscript"
				}
			case "position":
				if inRun > 0 && inRPr > 0 {
					if v, err := strconv.Atoi(xmlAttr(t, "val")); err == nil && v > 0 {
						runSup = true
					}
				}
			case "rStyle":
				if inRun > 0 && inRPr > 0 && d.styleSup(xmlAttr(t, "val")) {
					runSup = true
				}
			case "sz":
				if inRun > 0 && inRPr > 0 {
					runSize, _ = strconv.Atoi(xmlAttr(t, "val"))
				}
			case "pStyle":
				if inPPr > 0 && inRPr == 0 {
					p.style = xmlAttr(t, "val")
				}
			case "pageBreakBefore":
				if inPPr > 0 && inRPr == 0 {
					if v := xmlAttr(t, "val"); v != "0" && v != "false" && v != "off" {
						p.pageBefore = true
					}
				}
			case "sectPr":
				if inPPr > 0 {
					inSect = depth
					p.pageAfter = true // a section break starts a new page
				}
			case "type":
				if inSect > 0 && xmlAttr(t, "val") == "continuous" {
					p.pageAfter = false
				}
			case "numId":
				if inPPr > 0 {
					p.numID, p.hasNum = xmlAttr(t, "val"), true
				}
			case "ilvl":
				if inPPr > 0 {
					p.ilvl = xmlAttr(t, "val")
				}
			case "t":
				var s string
				if err := dec.DecodeElement(&s, &t); err != nil {
					return p, err
				}
				depth--
				if strings.TrimSpace(s) == "" {
					w.write(s)
					continue
				}
				sup := runSup && inRun > 0 && supNumber(s)
				if supAtStart && !sup {
					w.space() // a footnote's own number before its text
				}
				supAtStart = sup && (supAtStart || strings.TrimSpace(w.String()) == "")
				start := w.Offset()
				w.write(s)
				if sup {
					if n := len(p.sups); n > 0 && p.sups[n-1].end == start {
						p.sups[n-1].end = w.Len()
					} else {
						p.sups = append(p.sups, span{start, w.Len()})
					}
				} else {
					sizes[runSize] += utf8.RuneCountInString(s)
				}
			case "delText", "instrText":
				if err := dec.Skip(); err != nil {
					return p, err
				}
				depth--
			case "tab":
				if inPPr == 0 {
					w.space()
				}
			case "br", "cr":
				if xmlAttr(t, "type") == "page" {
					pageBreak()
				}
				w.space()
			case "lastRenderedPageBreak":
				pageBreak()
			case "noBreakHyphen":
				w.write("-")
			case "hyperlink":
				linkHref = d.rels[xmlAttr(t, "id")]
				if a := xmlAttr(t, "anchor"); a != "" {
					linkHref += "#" + a
				}
				linkStart = w.Len()
			case "footnoteReference", "endnoteReference":
				prefix := "f"
				if t.Name.Local == "endnoteReference" {
					prefix = "e"
				}
				if note, ok := d.notes[prefix+xmlAttr(t, "id")]; ok {
					d.noteN++
					marker := "[" + strconv.Itoa(d.noteN) + "]"
					w.write(marker)
					p.notes = append(p.notes, marker+" "+note)
				}
			case "tbl":
				t, err := d.table(dec, 1)
				if err != nil {
					return p, err
				}
				depth--
				w.space()
				w.write(tableText(t.table))
			}
		case xml.EndElement:
			if depth == inPPr {
				inPPr = 0
			}
			if depth == inRPr {
				inRPr = 0
			}
			if depth == inRun {
				inRun = 0
			}
			if depth == inSect {
				inSect = 0
			}
			if t.Name.Local == "hyperlink" && linkStart >= 0 {
				if linkHref != "" && linkStart <= w.Len() {
					p.links = append(p.links, Link{Text: normalizeSpace(w.String()[linkStart:]), Href: linkHref})
				}
				linkStart = -1
			}
			depth--
		}
	}
	p.text = w.String()
	best := -1
	for sz, n := range sizes {
		if n > best || n == best && sz > p.size {
			p.size, best = sz, n
		}
	}
	return p, nil
}

// supNumber reports whether a superscript run's text can be footnote
// numbers: digits, commas and spaces.
func supNumber(s string) bool {
	digits := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = true
		case c == ',' || c == ' ':
		default:
			return false
		}
	}
	return digits
}

// styleSup reports whether a character style sets superscript (following
// basedOn, at most 16 steps).
func (d *docx) styleSup(id string) bool {
	for i := 0; i < 16 && id != ""; i++ {
		s := d.styles[id]
		if s == nil {
			return false
		}
		if s.sup {
			return true
		}
		id = s.basedOn
	}
	return false
}

// table reads a w:tbl whose start tag was consumed; nested > 0 inside a cell.
func (d *docx) table(dec *xml.Decoder, nested int) (docxBlock, error) {
	var t docxBlock
	var row []string
	var cell []string
	headerRow, body := false, false
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return t, err
		}
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "tr":
				row, headerRow = nil, false
			case "tblHeader":
				if v := xmlAttr(e, "val"); v == "" || v == "1" || v == "true" || v == "on" {
					headerRow = true
				}
			case "tc":
				cell = nil
			case "p":
				p, err := d.paragraph(dec)
				if err != nil {
					return t, err
				}
				cell = append(cell, normalizeSpace(p.text))
			case "tbl":
				if nested > 8 {
					return t, errors.New("tables nested too deep")
				}
				in, err := d.table(dec, nested+1)
				if err != nil {
					return t, err
				}
				cell = append(cell, normalizeSpace(tableText(in.table)))
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "tc":
				row = append(row, normalizeSpace(strings.Join(cell, " ")))
			case "tr":
				t.table = append(t.table, row)
				if headerRow && !body {
					t.header++
				} else {
					body = true
				}
			case "tbl":
				return t, nil
			}
		}
	}
}

func tableText(rows [][]string) string {
	lines := make([]string, 0, len(rows))
	for _, r := range rows {
		lines = append(lines, strings.Join(r, " | "))
	}
	return strings.Join(lines, "\n")
}

// maxClauseHeadRunes bounds a clause heading written as a plain paragraph.
const maxClauseHeadRunes = 80

// annexAddress returns "Annex A" / "Приложение I" for an annex heading.
func annexAddress(title string) (string, bool) {
	m := docxRe().annexHead.FindStringSubmatch(title)
	if m == nil {
		return "", false
	}
	kw := []rune(strings.ToLower(m[1]))
	kw[0] = []rune(strings.ToUpper(string(kw[0])))[0]
	return string(kw) + " " + m[2], true
}

// innerNumbered is the address and level of the innermost open section
// with a numeric address.
func (d *docx) innerNumbered() (string, int) {
	for i := len(d.b.stack) - 1; i >= 1; i-- {
		a := d.b.stack[i].el.Address
		if isNumberAddress(a) {
			return a, d.b.stack[i].level
		}
	}
	return "", 0
}

func isNumberAddress(a string) bool { return docxRe().numberAddress.MatchString(a) }

// fitsUnder returns the level of an open section that clause number n
// (with at least two parts) belongs under: its parent number ("1.2" → "1"),
// the parent written with ".0" ("1.0"), or a sibling ("1.1" open: "1.2"
// goes under the sibling's parent).
func (d *docx) fitsUnder(n string) (int, bool) {
	parts := strings.Split(n, ".")
	parent := strings.Join(parts[:len(parts)-1], ".")
	for i := len(d.b.stack) - 1; i >= 1; i-- {
		a := d.b.stack[i].el.Address
		switch {
		case a == parent || a == parent+".0":
			return d.b.stack[i].level, true
		case strings.Count(a, ".") == strings.Count(n, ".") && strings.HasPrefix(a, parent+".") && a != n:
			return d.b.stack[i].level - 1, true
		}
	}
	return 0, false
}

func (d *docx) flushList() {
	if len(d.list) > 0 {
		if el := d.b.leaf(KindList, strings.Join(d.list, "\n")); el != nil {
			el.Links = d.links
		}
	}
	d.list, d.links = nil, nil
}

// emit adds one block to the tree (see parseDocx).
func (d *docx) emit(bl docxBlock) {
	if bl.table != nil {
		d.flushList()
		if el := d.b.leaf(KindTable, tableText(bl.table)); el != nil {
			el.HeaderRows = bl.header
			if el.HeaderRows == 0 && len(bl.table) > 1 {
				el.HeaderRows = 1
			}
		}
		return
	}
	level, toc, sNum, sLvl := d.styleInfo(bl.style)
	numID, ilvl := bl.numID, bl.ilvl
	if !bl.hasNum {
		numID, ilvl = sNum, sLvl
	}
	rendered, bullet := "", false
	if numID != "" {
		rendered, bullet = d.render(numID, ilvl)
	}
	text := normalizeSpace(bl.text)
	if toc && text != "" {
		d.b.root.Noise = append(d.b.root.Noise, Noise{Text: text, Reason: "table of contents"})
		return
	}
	if text == "" {
		return
	}
	full := text
	if rendered != "" {
		full = rendered + " " + text
	}
	if level > 0 && utf8.RuneCountInString(text) <= 2*maxHeadingRunes {
		d.flushList()
		addr := strings.TrimRight(rendered, ".)")
		if !isNumberAddress(addr) {
			addr = ""
		}
		if addr == "" {
			if a, ok := annexAddress(text); ok {
				d.b.annex(level, a, full)
				d.notesAfter(bl)
				return
			}
			addr = sectionAddress(text)
		}
		d.b.section(level, addr, full)
		d.notesAfter(bl)
		return
	}
	if m := docxRe().clauseHead.FindStringSubmatch(full); m != nil {
		rest := m[2]
		short := utf8.RuneCountInString(full) <= maxClauseHeadRunes && !strings.ContainsAny(rest[len(rest)-1:], ".,;:")
		if short && hasLetter(rest[:min(len(rest), 4)]) {
			if lv, ok := d.fitsUnder(m[1]); ok {
				d.flushList()
				d.b.section(lv+1, m[1], full)
				d.notesAfter(bl)
				return
			}
		}
		if inner, _ := d.innerNumbered(); inner != "" && strings.HasPrefix(m[1], inner+".") && strings.Count(m[1], ".") == strings.Count(inner, ".")+1 {
			d.flushList()
			d.b.leaf(KindClause, full).Address = m[1]
			d.notesAfter(bl)
			return
		}
	}
	if rendered != "" || bullet || bl.hasNum {
		marker := "-"
		if rendered != "" {
			marker = rendered
		}
		d.list = append(d.list, marker+" "+text)
		d.links = append(d.links, bl.links...)
		if len(bl.notes) > 0 {
			d.flushList()
			d.notesAfter(bl)
		}
		return
	}
	d.flushList()
	if el := d.b.leaf(KindParagraph, full); el != nil {
		el.Links = bl.links
	}
	d.notesAfter(bl)
}

func (d *docx) notesAfter(bl docxBlock) {
	for _, n := range bl.notes {
		d.b.leaf(KindNote, n)
	}
}
