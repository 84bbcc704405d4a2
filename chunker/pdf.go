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
	var heights []float64
	glyphs := 0
	for i, v := range leaves {
		lines, h, g := pdfPageLines(pdf.Page{V: v}, i+1)
		glyphs += g
		pages = append(pages, lines)
		heights = append(heights, h)
	}
	if glyphs == 0 {
		return nil, ErrNoTextLayer
	}
	lines, noise := dropPDFFurniture(pages, heights)
	pb := &pdfBuilder{b: newBuilder()}
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
// bottom, the page height and the number of non-space glyphs.
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
	sort.SliceStable(buckets, func(i, j int) bool { return buckets[i].y > buckets[j].y })
	var out []pdfLine
	for _, b := range buckets {
		sort.SliceStable(b.glyph, func(i, j int) bool { return b.glyph[i].X < b.glyph[j].X })
		var sb strings.Builder
		sizes := map[float64]int{}
		bold := true
		var prevEnd float64
		for k, g := range b.glyph {
			if k > 0 && g.X-prevEnd > 0.25*g.FontSize && !strings.HasSuffix(sb.String(), " ") && g.S != " " {
				sb.WriteByte(' ')
			}
			sb.WriteString(g.S)
			prevEnd = g.X + g.W
			if strings.TrimSpace(g.S) != "" {
				sizes[math.Round(g.FontSize*2)/2]++
				bold = bold && strings.Contains(strings.ToLower(g.Font), "bold")
			}
		}
		text := normalizeSpace(sb.String())
		if text == "" {
			continue
		}
		out = append(out, pdfLine{text: text, y: b.y, size: modeSize(sizes), bold: bold, page: num})
	}
	return out, height, count
}

func modeSize(sizes map[float64]int) float64 {
	best, n := 0.0, -1
	for s, c := range sizes {
		if c > n || (c == n && s > best) {
			best, n = s, c
		}
	}
	return best
}

var pageNumberLine = regexp.MustCompile(`(?i)^(?:page\s+)?#(?:\s*(?:of|/|из)\s*#)?$|^[-–—]\s*#\s*[-–—]$`)

// dropPDFFurniture removes running headers, footers and page numbers and
// returns the remaining lines in order, and what it removed.
func dropPDFFurniture(pages [][]pdfLine, heights []float64) ([]pdfLine, []Noise) {
	var noise []Noise
	band := func(l pdfLine, h float64) bool { return l.y > h*0.9 || l.y < h*0.1 }
	sig := func(s string) string { return digitRun.ReplaceAllString(s, "#") }
	counts := map[string]int{}
	for i, pg := range pages {
		seen := map[string]bool{}
		for _, l := range pg {
			if band(l, heights[i]) && !seen[sig(l.text)] {
				seen[sig(l.text)] = true
				counts[sig(l.text)]++
			}
		}
	}
	min := max(2, (len(pages)+1)/2)
	var out []pdfLine
	for i, pg := range pages {
		for _, l := range pg {
			if band(l, heights[i]) && counts[sig(l.text)] >= min {
				noise = append(noise, Noise{Text: l.text, Reason: "running header or footer"})
				continue
			}
			if band(l, heights[i]) && pageNumberLine.MatchString(sig(l.text)) {
				noise = append(noise, Noise{Text: l.text, Reason: "page number"})
				continue
			}
			out = append(out, l)
		}
	}
	return out, noise
}

var (
	pdfNumbered = regexp.MustCompile(`^(\d{1,3}(?:\.\d{1,3})*)\.?(?:\s*[:\-–—]\s*|\s+)(\S.*)$`)
	pdfBullet   = regexp.MustCompile(`^(?:[•●▪◦·\-–*]|\x{F0B7}|[a-zа-я]\)|\(?[ivx]{1,4}\)|\d{1,2}[.)])\s*\S`)
)

type pdfBuilder struct {
	b       *builder
	para    []string
	paraK   Kind
	list    []string
	lastTop int
}

func (pb *pdfBuilder) flushPara() {
	if len(pb.para) > 0 {
		text := strings.Join(pb.para, " ")
		if pb.paraK == KindClause {
			if m := pdfNumbered.FindStringSubmatch(text); m != nil {
				pb.b.leaf(KindClause, text).Address = m[1]
			}
		} else {
			pb.b.leaf(KindParagraph, text)
		}
	}
	pb.para, pb.paraK = nil, ""
}

func (pb *pdfBuilder) flushList() {
	if len(pb.list) > 0 {
		pb.b.leaf(KindList, strings.Join(pb.list, "\n"))
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
		short := utf8.RuneCountInString(l.text) <= maxHeadingRunes
		emph := l.bold || l.size >= body*1.1
		if m := pdfNumbered.FindStringSubmatch(l.text); m != nil && short && emph && hasLetter(m[2]) && pb.fits(m[1]) {
			pb.flush()
			depth := strings.Count(m[1], ".") + 1
			if depth == 1 {
				pb.lastTop, _ = strconv.Atoi(m[1])
			}
			pb.b.section(depth+1, m[1], l.text) // level 1 is kept for the document title
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
			continue
		}
		if m := pdfNumbered.FindStringSubmatch(strings.TrimLeft(l.text, "•●▪◦·\uf0b7 ")); m != nil {
			if inner, _ := pb.innerNumbered(); inner != "" && strings.HasPrefix(m[1], inner+".") && strings.Count(m[1], ".") == strings.Count(inner, ".")+1 {
				pb.flush()
				pb.para, pb.paraK = []string{strings.TrimLeft(l.text, "•●▪◦·\uf0b7 ")}, KindClause
				continue
			}
		}
		if pdfBullet.MatchString(l.text) {
			pb.flushPara()
			pb.list = append(pb.list, l.text)
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
	}
	pb.flush()
}
