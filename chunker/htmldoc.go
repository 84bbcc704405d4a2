package chunker

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// parseHTML parses an HTML document or fragment (no <html>/<body> needed;
// comments such as a leading <!--{json}--> metadata block are ignored).
// h1…h6 open nested sections whose address is the heading's id attribute,
// else a slug of its text; p, pre, ul, ol, dl, table and blockquote become
// leaves; div, section, article, main and other containers are walked
// through; script, style, nav, head and template are skipped. Text is
// whitespace-normalised except in pre, which keeps its lines.
func parseHTML(content []byte) (*Element, error) {
	decoded, _, err := Decode(content)
	if err != nil {
		return nil, err
	}
	doc, err := html.Parse(strings.NewReader(decoded))
	if err != nil {
		return nil, fmt.Errorf("read html: %w", err)
	}
	b := newBuilder()
	h := &htmlWalker{b: b}
	h.walk(doc)
	h.flush()
	return b.root, nil
}

type htmlWalker struct {
	b *builder
	// loose collects text and inline elements that sit directly in a
	// container, outside any block; it becomes a paragraph at the next block.
	loose      strings.Builder
	looseLinks []Link
}

func (h *htmlWalker) flush() {
	if el := h.b.leaf(KindParagraph, normalizeSpace(h.loose.String())); el != nil {
		el.Links = h.looseLinks
	}
	h.loose.Reset()
	h.looseLinks = nil
}

// htmlLinks are the a[href] elements under n (n included).
func htmlLinks(n *html.Node) []Link {
	var out []Link
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.A {
			if href := attr(n, "href"); href != "" {
				out = append(out, Link{Text: normalizeSpace(nodeText(n)), Href: href})
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// linked records n's links on el, which may be nil.
func linked(el *Element, n *html.Node) {
	if el != nil {
		el.Links = htmlLinks(n)
	}
}

func (h *htmlWalker) walk(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			h.loose.WriteString(c.Data)
			continue
		case html.ElementNode:
		default:
			if c.Type == html.DocumentNode {
				h.walk(c)
			}
			continue
		}
		switch c.DataAtom {
		case atom.Script, atom.Style, atom.Nav, atom.Head, atom.Template, atom.Noscript:
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			h.flush()
			level := int(c.Data[1] - '0')
			title := normalizeSpace(nodeText(c))
			addr := attr(c, "id")
			if addr == "" {
				addr = slug(title)
			}
			h.b.section(level, addr, title)
		case atom.P, atom.Blockquote, atom.Figure, atom.Address:
			h.flush()
			linked(h.b.leaf(KindParagraph, normalizeSpace(nodeText(c))), c)
		case atom.Pre:
			h.flush()
			linked(h.b.leaf(KindCode, strings.Trim(nodeText(c), "\n")), c)
		case atom.Ul, atom.Ol:
			h.flush()
			linked(h.b.leaf(KindList, htmlList(c, "")), c)
		case atom.Dl:
			h.flush()
			linked(h.b.leaf(KindList, htmlDefList(c)), c)
		case atom.Table:
			h.flush()
			text, headers, caption := htmlTable(c)
			if caption != "" {
				h.b.leaf(KindParagraph, caption)
			}
			if el := h.b.leaf(KindTable, text); el != nil {
				el.HeaderRows = headers
				linked(el, c)
			}
		case atom.Html, atom.Body, atom.Div, atom.Section, atom.Article, atom.Main,
			atom.Header, atom.Footer, atom.Aside, atom.Details, atom.Center, atom.Form:
			h.flush()
			h.walk(c)
			h.flush()
		case atom.Br, atom.Hr:
			h.flush()
		default:
			// Inline element (a, i, code, span, …) outside a block.
			h.loose.WriteString(nodeText(c))
			h.looseLinks = append(h.looseLinks, htmlLinks(c)...)
		}
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.TrimSpace(a.Val)
		}
	}
	return ""
}

// nodeText is the raw text under n (<br> as a newline), white space as in
// the source.
func nodeText(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				sb.WriteString(c.Data)
			case c.Type == html.ElementNode && (c.DataAtom == atom.Script || c.DataAtom == atom.Style):
			case c.Type == html.ElementNode && c.DataAtom == atom.Br:
				sb.WriteByte('\n')
			case c.Type == html.ElementNode:
				walk(c)
			}
		}
	}
	walk(n)
	return sb.String()
}

// htmlList renders li items one a line ("- text"), nested lists indented.
func htmlList(n *html.Node, indent string) string {
	var lines []string
	for li := n.FirstChild; li != nil; li = li.NextSibling {
		if li.Type != html.ElementNode || li.DataAtom != atom.Li {
			continue
		}
		var own strings.Builder
		var nested []string
		for c := li.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == atom.Ul || c.DataAtom == atom.Ol) {
				nested = append(nested, htmlList(c, indent+"  "))
				continue
			}
			if c.Type == html.TextNode {
				own.WriteString(c.Data)
			} else {
				own.WriteString(nodeText(c))
			}
		}
		lines = append(lines, indent+"- "+normalizeSpace(own.String()))
		lines = append(lines, nested...)
	}
	return strings.Join(lines, "\n")
}

// htmlDefList renders dt lines as they are and dd lines indented by two.
func htmlDefList(n *html.Node) string {
	var lines []string
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		t := normalizeSpace(nodeText(c))
		if c.DataAtom == atom.Dd {
			t = "  " + t
		}
		lines = append(lines, t)
	}
	return strings.Join(lines, "\n")
}

// htmlTable renders every tr one a line, th/td cells joined by " | ". It
// also returns how many leading rows are header rows (in thead, or made of
// th cells only) and the caption text. A caption that names the table
// ("Table 2 — …") becomes the table's Title and Address in the builder.
func htmlTable(n *html.Node) (text string, headerRows int, caption string) {
	var rows []string
	body := false // a non-header row was seen
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Tr:
				var cells []string
				allTh := true
				for td := c.FirstChild; td != nil; td = td.NextSibling {
					if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) {
						cells = append(cells, normalizeSpace(nodeText(td)))
						allTh = allTh && td.DataAtom == atom.Th
					}
				}
				inHead := c.Parent != nil && c.Parent.DataAtom == atom.Thead
				if !body && len(cells) > 0 && (allTh || inHead) {
					headerRows++
				} else {
					body = true
				}
				rows = append(rows, strings.Join(cells, " | "))
			case atom.Caption:
				if caption == "" {
					caption = normalizeSpace(nodeText(c))
				} else {
					rows = append(rows, normalizeSpace(nodeText(c)))
				}
			case atom.Table:
				// A nested table's rows are rendered in place.
				walk(c)
			default:
				walk(c)
			}
		}
	}
	walk(n)
	if headerRows >= len(rows) {
		headerRows = 0
	}
	return strings.Join(rows, "\n"), headerRows, caption
}
