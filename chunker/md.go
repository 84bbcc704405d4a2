package chunker

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"golang.org/x/net/html"
)

// headingNumber finds an explicit clause number at the start of a heading:
// "7.1.1 Description" → "7.1.1", "3.1.1 - Policy" → "3.1.1", "1: Scope" → "1",
// "A.2. Examples" → "A.2". The first component has at most 3 digits so a
// year ("2014 Update") is not taken for a number; a lone capital letter
// needs a ".N" after it so "A Guide" is not numbered.
var headingNumber = regexp.MustCompile(`^(\d{1,3}(?:\.\d+)*|[A-Z](?:\.\d+)+)\.?(?:\s*[:\-–—])?\s+\S`)

// mdParser is goldmark with GitHub tables, built once (goldmark parsers are
// safe for concurrent use).
var mdParser = goldmark.New(goldmark.WithExtensions(extension.Table)).Parser()

// parseMarkdown parses CommonMark with GFM tables. Headings open nested
// sections (address: the heading's leading number, else a slug of its
// title); paragraphs, lists, tables, code blocks, block quotes and HTML
// blocks become leaves. Inline markup is reduced to its text; inline HTML
// (for example `<a name="7.1"></a>` anchors in headings) is dropped.
func parseMarkdown(content []byte) (*Element, error) {
	decoded, _, err := Decode(content)
	if err != nil {
		return nil, err
	}
	src := []byte(decoded)
	doc := mdParser.Parse(text.NewReader(src))
	b := newBuilder()
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		mdBlock(b, n, src)
	}
	return b.root, nil
}

func mdBlock(b *builder, n ast.Node, src []byte) {
	switch n := n.(type) {
	case *ast.Heading:
		title := normalizeSpace(mdInline(n, src))
		b.section(n.Level, sectionAddress(title), title)
	case *ast.Paragraph, *ast.TextBlock:
		withLinks(b.leaf(KindParagraph, normalizeSpace(mdInline(n, src))), n, src)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		b.leaf(KindCode, strings.TrimRight(string(mdLines(n, src)), "\n"))
	case *ast.List:
		withLinks(b.leaf(KindList, mdList(n, src, "")), n, src)
	case *east.Table:
		if el := b.leaf(KindTable, mdTable(n, src)); el != nil {
			el.HeaderRows = 1 // a GFM table always has its header row first
			withLinks(el, n, src)
		}
	case *ast.Blockquote:
		withLinks(b.leaf(KindParagraph, mdFlatten(n, src)), n, src)
	case *ast.HTMLBlock:
		b.leaf(KindParagraph, normalizeSpace(htmlFragmentText(mdLines(n, src))))
	case *ast.ThematicBreak:
	default:
		b.leaf(KindParagraph, mdFlatten(n, src))
	}
}

// withLinks records the links under n (inline and reference-style links;
// autolinks are text) on el; el may be nil.
func withLinks(el *Element, n ast.Node, src []byte) {
	if el == nil {
		return
	}
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if l, ok := c.(*ast.Link); ok && entering {
			el.Links = append(el.Links, Link{Text: normalizeSpace(mdInline(l, src)), Href: string(l.Destination)})
		}
		return ast.WalkContinue, nil
	})
}

// sectionAddress is a heading's leading number or, failing that, its slug.
func sectionAddress(title string) string {
	if m := headingNumber.FindStringSubmatch(title); m != nil {
		return m[1]
	}
	return slug(title)
}

func mdLines(n ast.Node, src []byte) []byte {
	var buf bytes.Buffer
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		buf.Write(seg.Value(src))
	}
	return buf.Bytes()
}

// mdInline is the plain text of n's inline children.
func mdInline(n ast.Node, src []byte) string {
	var sb strings.Builder
	var walk func(ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				sb.Write(c.Segment.Value(src))
				if c.HardLineBreak() {
					sb.WriteByte('\n')
				} else if c.SoftLineBreak() {
					sb.WriteByte(' ')
				}
			case *ast.String:
				sb.Write(c.Value)
			case *ast.RawHTML:
				// Inline tags carry no text of their own; the text between an
				// opening and closing tag is a sibling Text node.
			case *ast.AutoLink:
				sb.Write(c.URL(src))
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return sb.String()
}

// mdFlatten is the text of every block under n, blocks separated by newlines.
func mdFlatten(n ast.Node, src []byte) string {
	if n.Type() != ast.TypeBlock || n.FirstChild() == nil || n.FirstChild().Type() == ast.TypeInline {
		if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 && n.FirstChild() == nil {
			return strings.TrimSpace(string(mdLines(n, src)))
		}
		return normalizeSpace(mdInline(n, src))
	}
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.List:
			parts = append(parts, mdList(c, src, ""))
		case *east.Table:
			parts = append(parts, mdTable(c, src))
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			parts = append(parts, strings.TrimRight(string(mdLines(c, src)), "\n"))
		default:
			if t := mdFlatten(c, src); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// mdList renders a list one item a line ("- item", "3. item"), nested lists
// indented by two spaces.
func mdList(l *ast.List, src []byte, indent string) string {
	var lines []string
	i := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "- "
		if l.IsOrdered() {
			marker = strconv.Itoa(i) + ". "
			i++
		}
		var body []string
		var nested []string
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			if sub, ok := c.(*ast.List); ok {
				nested = append(nested, mdList(sub, src, indent+"  "))
				continue
			}
			if t := mdFlatten(c, src); t != "" {
				body = append(body, t)
			}
		}
		lines = append(lines, indent+marker+strings.Join(body, " "))
		lines = append(lines, nested...)
	}
	return strings.Join(lines, "\n")
}

// mdTable renders a table one row a line, cells joined by " | ", header
// row first.
func mdTable(t *east.Table, src []byte) string {
	var rows []string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var cells []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, normalizeSpace(mdInline(c, src)))
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	return strings.Join(rows, "\n")
}

// htmlFragmentText is the text content of an HTML fragment, tags and
// comments dropped.
func htmlFragmentText(b []byte) string {
	z := html.NewTokenizer(bytes.NewReader(b))
	var sb strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return sb.String()
		case html.TextToken:
			sb.Write(z.Text())
			sb.WriteByte(' ')
		}
	}
}
