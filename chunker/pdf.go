package chunker

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// PDF text extraction uses github.com/ledongthuc/pdf, a pure-Go reader
// (a maintained fork of rsc.io/pdf) that gives every glyph with its font
// name, font size and position. It was chosen over
// github.com/klippa-app/go-pdfium in WebAssembly mode, whose module (v1.21.4)
// embeds a 5.8 MB pdfium.wasm (a 3.5 MB module download) and needs the
// wazero runtime to compile it at start-up: far more weight than this
// parser needs, since untagged PDFs carry no structure either library could
// recover and headings must be guessed from numbering and font size anyway.
// The pure-Go reader handles the common Word/Quartz/LaTeX outputs; PDFs it
// cannot read give an error, never a panic.

// Limits on PDF work, against hostile files; package variables read on
// every Parse.
var (
	// MaxPDFBytes caps the size of a PDF the parser accepts, 64 MiB by default.
	MaxPDFBytes = 64 << 20
	// MaxPDFPages caps the number of pages read, 5000 by default.
	MaxPDFPages = 5000
)

// ErrNoTextLayer is returned (wrapped) for a PDF whose pages hold no text,
// typically a scan.
var ErrNoTextLayer = errors.New("no text layer (scanned PDF?)")

type pdfLine struct {
	text string
	y    float64
	size float64 // dominant font size, points
	bold bool    // every non-space glyph is in a bold font
	page int
	band bool   // in the top or bottom tenth of the page
	sups []span // superscript runs of digits in text (footnote calls)
}

// parsePDF extracts text lines in reading order (top to bottom, left to
// right within a line; multi-column layouts are read row by row), drops
// running headers, footers and page numbers (lines in the top or bottom
// 10% of the page that recur on at least half the pages, digits ignored, or
// that are bare page numbers), and rebuilds structure:
//
//   - A short line that starts with a clause number ("1: Scope", "3.1.1 -
//     Policy", "2.1 Terms") in a bold or larger font, and whose number fits
//     the open sections (as in plain text), is a heading of the number's
//     depth. A short line set in a font at least 1.2 times the body size, or
//     wholly bold, is an unnumbered heading one level below the innermost
//     numbered section.
//   - A line starting with a clause number one level deeper than the
//     innermost numbered section is a KindClause ("3.1.1.1: A documented
//     policy;").
//   - Lines starting with a bullet or list marker are list items; other
//     lines join into paragraphs, which end at a vertical gap over 1.45 line
//     heights or a line ending a sentence followed by a shorter one.
//
// A PDF without any text gives ErrNoTextLayer.
func parsePDF(content []byte) (root *Element, err error) {
	if len(content) > MaxPDFBytes {
		return nil, fmt.Errorf("pdf of %d bytes is over the limit of %d (MaxPDFBytes)", len(content), MaxPDFBytes)
	}
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("read pdf: malformed file: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return nil, fmt.Errorf("read pdf: %w", err)
	}
	leaves, err := pdfPages(r)
	if err != nil {
		return nil, err
	}
	var pages [][]pdfLine
	glyphs := 0
	for i, v := range leaves {
		lines, _, g := pdfPageLines(pdf.Page{V: v}, i+1)
		glyphs += g
		pages = append(pages, lines)
	}
	if glyphs == 0 {
		return nil, ErrNoTextLayer
	}
	lines, notes, noise := pdfNoise(pages)
	pb := &pdfBuilder{b: newBuilder(), notes: notes}
	pb.run(lines)
	pb.b.root.Noise = noise
	return pb.b.root, nil
}

// maxPDFTreeDepth bounds the page tree depth and the Parent chains of
// pages: a cyclic page tree (a Kids or Parent entry pointing back up) would
// otherwise make the reader loop for ever.
const maxPDFTreeDepth = 32

// pdfPages walks the page tree from the catalog and returns the page
// objects in order. It errors on a tree deeper than maxPDFTreeDepth (which
// catches cycles), on more than MaxPDFPages pages, and on a page whose
// Parent chain is deeper than maxPDFTreeDepth (the reader follows Parent
// links to find inherited resources).
func pdfPages(r *pdf.Reader) ([]pdf.Value, error) {
	var out []pdf.Value
	nodes := 0
	var walk func(v pdf.Value, depth int) error
	walk = func(v pdf.Value, depth int) error {
		if depth > maxPDFTreeDepth {
			return errors.New("read pdf: page tree too deep or cyclic")
		}
		nodes++
		if nodes > 4*MaxPDFPages+16 {
			return fmt.Errorf("read pdf: page tree has over %d nodes", 4*MaxPDFPages+16)
		}
		kids := v.Key("Kids")
		if v.Key("Type").Name() == "Page" || (kids.IsNull() && v.Key("Contents").Kind() != pdf.Null) {
			if len(out) >= MaxPDFPages {
				return fmt.Errorf("pdf has over %d pages (MaxPDFPages)", MaxPDFPages)
			}
			p := v
			for d := 0; !p.IsNull(); d++ {
				if d > maxPDFTreeDepth {
					return errors.New("read pdf: page parent chain too deep or cyclic")
				}
				p = p.Key("Parent")
			}
			out = append(out, v)
			return nil
		}
		for i := 0; i < kids.Len(); i++ {
			if err := walk(kids.Index(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(r.Trailer().Key("Root").Key("Pages"), 0); err != nil {
		return nil, err
	}
	return out, nil
}

// pdfPageLines groups a page's glyphs into lines; it returns them top to
// bottom, the page height and the number of non-space glyphs. A glyph set
// smaller than its line and raised above its baseline (text rise or its
// own position) is a superscript: it stays in the line at its place, and
// a run of superscript digits is recorded as a possible footnote call.
func pdfPageLines(p pdf.Page, num int) ([]pdfLine, float64, int) {
	height := 792.0
	if mb := p.V.Key("MediaBox"); mb.Len() == 4 {
		if h := mb.Index(3).Float64() - mb.Index(1).Float64(); h > 0 {
			height = h
		}
	}
	texts := p.Content().Text
	type bucket struct {
		y     float64
		glyph []pdf.Text
		size  float64 // dominant size of the bucket's glyphs
		n     int     // non-space glyphs
	}
	var buckets []*bucket
	count := 0
	for _, t := range texts {
		if t.S == "" || t.S == "\ufffd" {
			continue
		}
		if strings.TrimSpace(t.S) != "" {
			count++
		}
		var b *bucket
		for k := len(buckets) - 1; k >= 0 && k >= len(buckets)-4; k-- {
			if math.Abs(buckets[k].y-t.Y) <= math.Max(2, t.FontSize*0.3) {
				b = buckets[k]
				break
			}
		}
		if b == nil {
			b = &bucket{y: t.Y}
			buckets = append(buckets, b)
		}
		b.glyph = append(b.glyph, t)
	}
	for _, b := range buckets {
		sizes := map[float64]int{}
		for _, g := range b.glyph {
			if strings.TrimSpace(g.S) != "" {
				sizes[math.Round(g.FontSize*2)/2]++
				b.n++
			}
		}
		b.size = modeSize(sizes)
	}
	sort.SliceStable(buckets, func(i, j int) bool { return buckets[i].y > buckets[j].y })
	// A short bucket of small glyphs a little above a line is that line's
	// superscript.
	merged := buckets[:0]
	for k := 0; k < len(buckets); k++ {
		b := buckets[k]
		if k+1 < len(buckets) && b.n > 0 && b.n <= 8 {
			nx := buckets[k+1]
			if rise := b.y - nx.y; rise > 0 && rise <= 0.6*nx.size && b.size <= 0.85*nx.size {
				nx.glyph = append(nx.glyph, b.glyph...)
				continue
			}
		}
		merged = append(merged, b)
	}
	buckets = merged
	var out []pdfLine
	for _, b := range buckets {
		sort.SliceStable(b.glyph, func(i, j int) bool { return b.glyph[i].X < b.glyph[j].X })
		// The baseline and size of the line's own glyphs.
		sizes := map[float64]int{}
		for _, g := range b.glyph {
			if strings.TrimSpace(g.S) != "" {
				sizes[math.Round(g.FontSize*2)/2]++
			}
		}
		size := modeSize(sizes)
		base := b.y
		for _, g := range b.glyph {
			if math.Round(g.FontSize*2)/2 == size {
				base = g.Y
				break
			}
		}
		isSup := func(g pdf.Text) bool { return g.FontSize <= 0.85*size && g.Y-base > 0.15*size }
		var w textWriter
		var sups []span
		supAt := -1
		bold := true
		var prevEnd float64
		for k, g := range b.glyph {
			sup := isSup(g) && strings.TrimSpace(g.S) != ""
			if k > 0 && g.X-prevEnd > 0.25*g.FontSize && g.S != " " {
				w.space()
			}
			if supAt >= 0 && !sup {
				sups = append(sups, span{supAt, w.Len()})
				supAt = -1
				if sups[len(sups)-1].start == 0 {
					w.space() // a footnote's own number before its text
				}
			}
			if sup && supAt < 0 && isDigits(g.S) {
				supAt = w.Offset()
			}
			if sup && !isDigits(g.S) && g.S != "," && supAt >= 0 {
				supAt = -1 // not a run of numbers
			}
			w.write(g.S)
			prevEnd = g.X + g.W
			if strings.TrimSpace(g.S) != "" && !sup {
				bold = bold && strings.Contains(strings.ToLower(g.Font), "bold")
			}
		}
		if supAt >= 0 {
			sups = append(sups, span{supAt, w.Len()})
		}
		text := w.String()
		if text == "" {
			continue
		}
		out = append(out, pdfLine{text: text, y: b.y, size: size, bold: bold, page: num, band: b.y > height*0.9 || b.y < height*0.1, sups: sups})
	}
	return out, height, count
}

// textWriter builds text with white space collapsed as it is written (as
// normalizeSpace would leave it), so that offsets taken while writing
// stay valid.
type textWriter struct {
	sb      strings.Builder
	pending bool // a space is due before the next text
}

// space asks for a space before the next text.
func (w *textWriter) space() { w.pending = w.sb.Len() > 0 }

// write appends s, its white space collapsed.
func (w *textWriter) write(s string) {
	for _, r := range s {
		if isSpaceRune(r) {
			w.pending = w.sb.Len() > 0
			continue
		}
		if w.pending {
			w.sb.WriteByte(' ')
			w.pending = false
		}
		w.sb.WriteRune(r)
	}
}

// Len is the length of the text written so far.
func (w *textWriter) Len() int { return w.sb.Len() }

// Offset is where the next text will start.
func (w *textWriter) Offset() int {
	if w.pending {
		return w.sb.Len() + 1
	}
	return w.sb.Len()
}

func (w *textWriter) String() string { return w.sb.String() }

func modeSize(sizes map[float64]int) float64 {
	best, n := 0.0, -1
	for s, c := range sizes {
		if c > n || (c == n && s > best) {
			best, n = s, c
		}
	}
	return best
}

// pdfNoise applies the page-noise rules (pagenoise.go) to a PDF's pages,
// with what the layout tells: lines in a page's top or bottom tenth are at
// its edge, lines in the body's font size are no footnotes, superscript
// digits are footnote calls. It returns the kept lines in order, the
// footnotes each of them calls (by index in the kept lines) and what it
// dropped.
func pdfNoise(pages [][]pdfLine) ([]pdfLine, map[int][]string, []Noise) {
	var all []pdfLine
	var pgs []page
	sizes := map[float64]int{}
	for _, pg := range pages {
		start := len(all)
		for _, l := range pg {
			all = append(all, l)
			sizes[l.size] += utf8.RuneCountInString(l.text)
		}
		pgs = append(pgs, page{start, len(all)})
	}
	body := modeSize(sizes)
	pt := &pagedText{
		units: make([]string, len(all)), drop: make([]string, len(all)), pages: pgs,
		band: make([]bool, len(all)), bodySize: make([]bool, len(all)), sups: make([][]span, len(all)),
	}
	for i, l := range all {
		pt.units[i] = l.text
		pt.band[i] = l.band
		pt.bodySize[i] = l.size >= body*0.95
		pt.sups[i] = l.sups
	}
	calls, callNoise := pt.run()
	var out []pdfLine
	var noise []Noise
	notes := map[int][]string{}
	for i, l := range all {
		switch pt.drop[i] {
		case "":
			if pt.units[i] != l.text {
				l.text = pt.units[i]
				l.sups = nil
			}
			if cs := calls[i]; len(cs) > 0 {
				notes[len(out)] = cs
			}
			out = append(out, l)
		case "footnote":
		default:
			noise = append(noise, Noise{Text: l.text, Reason: pt.drop[i]})
		}
	}
	return out, notes, append(noise, callNoise...)
}

// pdfPatterns holds the PDF parser's line patterns; pdfRe compiles them.
type pdfPatterns struct {
	pdfNumbered, pdfBullet *regexp.Regexp
}

// pdfRe returns the PDF parser's line patterns, compiled on first use.
var pdfRe = sync.OnceValue(func() *pdfPatterns {
	return &pdfPatterns{
		pdfNumbered: regexp.MustCompile(`^(\d{1,3}(?:\.\d{1,3})*)\.?(?:\s*[:\-–—]\s*|\s+)(\S.*)$`),
		pdfBullet:   regexp.MustCompile(`^(?:[•●▪◦·\-–*]|\x{F0B7}|[a-zа-я]\)|\(?[ivx]{1,4}\)|\d{1,2}[.)])\s*\S`),
	}
})

type pdfBuilder struct {
	b       *builder
	para    []string
	paraK   Kind
	list    []string
	lastTop int
	notes   map[int][]string // line → footnotes it calls
	pending []string         // footnotes called in the open paragraph or list
}

// writeNotes adds the footnotes called so far after the element just
// written.
func (pb *pdfBuilder) writeNotes() {
	for _, n := range pb.pending {
		pb.b.leaf(KindNote, n)
	}
	pb.pending = nil
}

func (pb *pdfBuilder) flushPara() {
	if len(pb.para) > 0 {
		text := strings.Join(pb.para, " ")
		if pb.paraK == KindClause {
			if m := pdfRe().pdfNumbered.FindStringSubmatch(text); m != nil {
				pb.b.leaf(KindClause, text).Address = m[1]
			}
		} else {
			pb.b.leaf(KindParagraph, text)
		}
		pb.writeNotes()
	}
	pb.para, pb.paraK = nil, ""
}

func (pb *pdfBuilder) flushList() {
	if len(pb.list) > 0 {
		pb.b.leaf(KindList, strings.Join(pb.list, "\n"))
		pb.writeNotes()
	}
	pb.list = nil
}

func (pb *pdfBuilder) flush() { pb.flushPara(); pb.flushList() }

// innerNumbered is the innermost open numbered section and its level.
func (pb *pdfBuilder) innerNumbered() (string, int) {
	for i := len(pb.b.stack) - 1; i >= 1; i-- {
		if a := pb.b.stack[i].el.Address; isNumberAddress(a) {
			return a, pb.b.stack[i].level
		}
	}
	return "", 0
}

// fits reports whether a heading numbered n fits the open sections.
func (pb *pdfBuilder) fits(n string) bool {
	parts := strings.Split(n, ".")
	if len(parts) == 1 {
		v, err := strconv.Atoi(n)
		return err == nil && v > pb.lastTop
	}
	_, ok := pb.b.openLevel(strings.Join(parts[:len(parts)-1], "."))
	return ok
}

func (pb *pdfBuilder) run(lines []pdfLine) {
	sizes := map[float64]int{}
	for _, l := range lines {
		sizes[l.size] += utf8.RuneCountInString(l.text)
	}
	body := modeSize(sizes)
	for i, l := range lines {
		ns := pb.notes[i]
		short := utf8.RuneCountInString(l.text) <= maxHeadingRunes
		emph := l.bold || l.size >= body*1.1
		if m := pdfRe().pdfNumbered.FindStringSubmatch(l.text); m != nil && short && emph && hasLetter(m[2]) && pb.fits(m[1]) {
			pb.flush()
			depth := strings.Count(m[1], ".") + 1
			if depth == 1 {
				pb.lastTop, _ = strconv.Atoi(m[1])
			}
			pb.b.section(depth+1, m[1], l.text) // level 1 is kept for the document title
			pb.pending = ns
			pb.writeNotes()
			continue
		}
		if short && utf8.RuneCountInString(l.text) <= 60 && (l.size >= body*1.2 || (l.bold && l.size >= body)) && hasLetter(l.text) {
			pb.flush()
			_, lv := pb.innerNumbered()
			if a, ok := annexAddress(l.text); ok {
				pb.b.annex(max(lv, 1), a, l.text)
			} else {
				pb.b.section(lv+1, sectionAddress(l.text), l.text)
			}
			pb.pending = ns
			pb.writeNotes()
			continue
		}
		if m := pdfRe().pdfNumbered.FindStringSubmatch(strings.TrimLeft(l.text, "•●▪◦·\uf0b7 ")); m != nil {
			if inner, _ := pb.innerNumbered(); inner != "" && strings.HasPrefix(m[1], inner+".") && strings.Count(m[1], ".") == strings.Count(inner, ".")+1 {
				pb.flush()
				pb.para, pb.paraK = []string{strings.TrimLeft(l.text, "•●▪◦·\uf0b7 ")}, KindClause
				pb.pending = append(pb.pending, ns...)
				continue
			}
		}
		if pdfRe().pdfBullet.MatchString(l.text) {
			pb.flushPara()
			pb.list = append(pb.list, l.text)
			pb.pending = append(pb.pending, ns...)
			continue
		}
		cont := false // the line continues the open paragraph or list item
		if i > 0 {
			prev := lines[i-1]
			if prev.page == l.page {
				gap := prev.y - l.y
				cont = gap > 0 && gap <= 1.45*1.2*math.Max(l.size, 1)
			} else {
				cont = !strings.ContainsAny(prev.text[len(prev.text)-1:], ".:;!?")
			}
		}
		switch {
		case cont && len(pb.para) > 0:
			pb.para = append(pb.para, l.text)
		case cont && len(pb.list) > 0:
			pb.list[len(pb.list)-1] += " " + l.text
		default:
			pb.flush()
			pb.para, pb.paraK = []string{l.text}, KindParagraph
		}
		pb.pending = append(pb.pending, ns...)
	}
	pb.flush()
	pb.writeNotes()
}
