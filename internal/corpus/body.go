package corpus

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Words splits text into words: maximal runs of letters and digits, a
// run of digits glued to letters ("1617The", "32nd") taken apart.
func Words(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		start := 0
		prevDigit := false
		for i, r := range f {
			d := unicode.IsDigit(r)
			if i > 0 && d != prevDigit {
				out = append(out, f[start:i])
				start = i
			}
			prevDigit = d
		}
		out = append(out, f[start:])
	}
	return out
}

// BodyWords returns the words of a document's text as a reader sees it,
// read without the chunker: plain text as it is; Markdown without its
// syntax (link destinations and reference labels, HTML tags and
// comments, fence info strings); HTML's text outside script, style, head and other non-text
// elements; DOCX's w:t runs of the document, its footnotes and endnotes,
// and its header and footer parts.
// ok is false for formats it cannot read (PDF). The words of what a parser
// reports as noise are to be taken out by the caller.
func BodyWords(name string, raw []byte) (words []string, ok bool) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".txt":
		return Words(strings.TrimPrefix(string(raw), "\ufeff")), true
	case ".md", ".markdown":
		return Words(markdownText(string(raw))), true
	case ".html", ".htm":
		return htmlWords(raw), true
	case ".docx":
		w, err := docxWords(raw)
		return w, err == nil
	}
	return nil, false
}

var (
	mdLinkDest = regexp.MustCompile(`\]\([^)]*\)|\]\[[^\]]+\]`)
	mdComment  = regexp.MustCompile(`(?s)<!--.*?-->`)
	mdTag      = regexp.MustCompile(`</?[a-zA-Z][^>]*>`)
)

func markdownText(s string) string {
	s = mdComment.ReplaceAllString(s, " ")
	lines := strings.Split(s, "\n")
	fence := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			lines[i] = "" // a fence and its info string ("```text") are no text
			continue
		}
		if fence {
			continue // code keeps its tags and brackets
		}
		// Outside inline code spans only.
		parts := strings.Split(l, "`")
		for k := 0; k < len(parts); k += 2 {
			p := mdLinkDest.ReplaceAllString(parts[k], "] ")
			parts[k] = mdTag.ReplaceAllString(p, " ")
		}
		lines[i] = strings.Join(parts, "`")
	}
	return strings.Join(lines, "\n")
}

// inlineTags do not separate words ("x<sub>i</sub>" is one).
var inlineTags = map[atom.Atom]bool{atom.A: true, atom.B: true, atom.I: true, atom.Em: true, atom.Strong: true, atom.Code: true,
	atom.Span: true, atom.Sub: true, atom.Sup: true, atom.Var: true, atom.Small: true, atom.U: true, atom.Abbr: true}

func htmlWords(raw []byte) []string {
	z := html.NewTokenizer(bytes.NewReader(raw))
	skip := 0
	var out []string
	var text strings.Builder
	flush := func() {
		out = append(out, Words(text.String())...)
		text.Reset()
	}
	for {
		tt := z.Next()
		var a atom.Atom
		if tt == html.StartTagToken || tt == html.EndTagToken || tt == html.SelfClosingTagToken {
			name, _ := z.TagName()
			a = atom.Lookup(name)
			if !inlineTags[a] {
				flush()
			}
		}
		nonText := a == atom.Script || a == atom.Style || a == atom.Head || a == atom.Title || a == atom.Noscript ||
			a == atom.Template || a == atom.Svg || a == atom.Button
		switch tt {
		case html.ErrorToken:
			flush()
			return out
		case html.StartTagToken:
			if nonText {
				skip++
			}
		case html.EndTagToken:
			if nonText && skip > 0 {
				skip--
			}
		case html.TextToken:
			if skip == 0 {
				text.Write(z.Text())
			}
		}
	}
}

var headerFooter = regexp.MustCompile(`^word/(?:header|footer)\d*\.xml$`)

func docxWords(raw []byte) ([]string, error) {
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, err
	}
	var out []string
	parts := []string{"word/document.xml", "word/footnotes.xml", "word/endnotes.xml"}
	var hf []string
	for _, f := range zr.File {
		if headerFooter.MatchString(f.Name) {
			hf = append(hf, f.Name)
		}
	}
	sort.Strings(hf)
	for _, part := range append(parts, hf...) {
		for _, f := range zr.File {
			if f.Name != part {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
			dec := xml.NewDecoder(bytes.NewReader(b))
			dec.Strict = false
			inT := false
			var para strings.Builder
			for {
				tok, err := dec.Token()
				if err != nil {
					break
				}
				switch t := tok.(type) {
				case xml.StartElement:
					switch t.Name.Local {
					case "t":
						inT = true
					case "tab", "br":
						para.WriteByte(' ')
					}
				case xml.EndElement:
					switch t.Name.Local {
					case "t":
						inT = false
					case "p":
						out = append(out, Words(para.String())...)
						para.Reset()
					}
				case xml.CharData:
					if inT {
						para.Write(t)
					}
				}
			}
			out = append(out, Words(para.String())...)
		}
	}
	return out, nil
}
