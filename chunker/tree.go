package chunker

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// builder assembles an element tree from a flat stream of headings and
// leaves: a heading of level L closes every open section of level >= L and
// opens a child of the innermost remaining one.
type builder struct {
	root  *Element
	stack []frame
}

type frame struct {
	el    *Element
	level int
}

func newBuilder() *builder {
	root := &Element{Kind: KindDocument}
	return &builder{root: root, stack: []frame{{el: root, level: 0}}}
}

// section opens a section of level (1 = top) and returns it.
func (b *builder) section(level int, address, title string) *Element {
	if level < 1 {
		level = 1
	}
	for len(b.stack) > 1 && b.stack[len(b.stack)-1].level >= level {
		b.stack = b.stack[:len(b.stack)-1]
	}
	parent := b.stack[len(b.stack)-1].el
	s := &Element{Kind: KindSection, Address: address, Title: stripControls(title)}
	parent.Children = append(parent.Children, s)
	b.stack = append(b.stack, frame{el: s, level: level})
	return s
}

// clause opens a numbered clause of level that holds the paragraphs,
// points and notes after it (a container of kind KindClause with no title;
// see collapseClauses) and returns it.
func (b *builder) clause(level int, address string) *Element {
	s := b.section(level, address, "")
	s.Kind = KindClause
	return s
}

// push opens an element of kind under the innermost open element without
// closing anything (points of a list, paragraphs of an article); the
// caller closes it by truncating b.stack.
func (b *builder) push(kind Kind, address string) *Element {
	parent := b.current()
	el := &Element{Kind: kind, Address: address}
	parent.Children = append(parent.Children, el)
	b.stack = append(b.stack, frame{el: el, level: b.stack[len(b.stack)-1].level + 1})
	return el
}

// current is the innermost open element (the root before any heading).
func (b *builder) current() *Element { return b.stack[len(b.stack)-1].el }

// openAddresses are the addresses of the open sections, outermost first.
func (b *builder) openAddresses() []string {
	out := make([]string, 0, len(b.stack)-1)
	for _, f := range b.stack[1:] {
		out = append(out, f.el.Address)
	}
	return out
}

// annex opens an annex of level, like section.
func (b *builder) annex(level int, address, title string) *Element {
	s := b.section(level, address, title)
	s.Kind = KindAnnex
	return s
}

// leaf appends a leaf of kind to the innermost open element and returns it
// (nil for whitespace-only text, which is dropped). A leaf without an
// address of its own is named after parsing (assignLeafAddresses). A paragraph that is a figure caption
// ("Figure 3 — Flow", "Рисунок 2") becomes a KindCaption addressed by the
// figure; a table right after a table caption paragraph ("Table 13 — …",
// "Таблица 7.1") takes the caption as its Title and its label as its
// Address, and the caption paragraph is removed.
func (b *builder) leaf(kind Kind, text string) *Element {
	text = stripControls(text)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	parent := b.current()
	el := &Element{Kind: kind, Text: text}
	if kind == KindParagraph {
		if label, ok := captionLabel(text, unitFigure); ok {
			el.Kind, el.Address = KindCaption, label
		}
	}
	if kind == KindTable && len(parent.Children) > 0 {
		last := parent.Children[len(parent.Children)-1]
		if last.Kind == KindParagraph {
			if label, ok := captionLabel(last.Text, unitTable); ok {
				parent.Children = parent.Children[:len(parent.Children)-1]
				el.Address, el.Title = label, normalizeSpace(last.Text)
			}
		}
	}
	parent.Children = append(parent.Children, el)
	return el
}

// captionLabel returns the label of a caption line ("Table 13 — Metadata
// …" → "Table 13", "Tabla 1.1 Condiciones …" → "Tabla 1.1", "ТАБЛИЦА 7.1"
// → "Таблица 7.1", "Figure 3: Flow" → "Figure 3") when the line starts
// with a table (kind unitTable) or figure (unitFigure) label; captions
// are short.
func captionLabel(text string, kind unitKind) (string, bool) {
	if len(text) > 4096 { // no caption is that long, however spaced
		return "", false
	}
	// Every caption keyword starts with one of these.
	if !captionStart(strings.TrimLeft(text, " \t")) {
		return "", false
	}
	t := normalizeSpace(text)
	if utf8.RuneCountInString(t) > 200 || t == "" {
		return "", false
	}
	c, ok := parseComp(t, 0)
	if !ok || len(c.units) != 1 || c.units[0].kind != kind || c.plural {
		return "", false
	}
	rest := strings.TrimSpace(t[c.end:])
	if rest != "" {
		r, _ := utf8.DecodeRuneInString(rest)
		// "Table 1 shows …" is a sentence about the table, not its caption.
		if !(strings.ContainsRune(".:—–-", r) || unicode.IsUpper(r)) || c.end < len(t) && t[c.end] != ' ' && t[c.end] != ':' && t[c.end] != '.' {
			return "", false
		}
	}
	return c.units[0].String(), true
}

// captionStart reports whether s starts like a caption keyword ("Table",
// "Tabla", "Fig.", "Abbildung", "Таблица", "Рисунок").
func captionStart(s string) bool {
	n := 0
	var b [3]rune
	for _, r := range s {
		if n == 3 {
			break
		}
		b[n] = unicode.ToLower(r)
		n++
	}
	if n < 3 {
		return false
	}
	switch string(b[:]) {
	case "tab", "fig", "abb", "таб", "рис":
		return true
	}
	return false
}

// attachCaptions gives a table without a caption the caption paragraph
// right after it ("Table 1: Initial Assignments" under an RFC's table),
// when no table follows that paragraph (then it is that table's caption).
func attachCaptions(e *Element) {
	out := e.Children[:0]
	for i, c := range e.Children {
		if len(c.Children) > 0 {
			attachCaptions(c)
		}
		if c.Kind == KindParagraph && len(out) > 0 {
			prev := out[len(out)-1]
			nextTable := i+1 < len(e.Children) && e.Children[i+1].Kind == KindTable
			if prev.Kind == KindTable && prev.Title == "" && !nextTable {
				if label, ok := captionLabel(c.Text, unitTable); ok {
					prev.Address, prev.Title = label, normalizeSpace(c.Text)
					continue
				}
			}
		}
		out = append(out, c)
	}
	e.Children = out
}

// openLevel returns the level of the innermost open section whose address
// is addr.
func (b *builder) openLevel(addr string) (int, bool) {
	for i := len(b.stack) - 1; i >= 1; i-- {
		if b.stack[i].el.Address == addr {
			return b.stack[i].level, true
		}
	}
	return 0, false
}

// maxOrdinalLeaves is the most leaves a parent may have for them to be
// named by ordinal (see assignLeafAddresses).
const maxOrdinalLeaves = 16

// assignLeafAddresses names the leaves that have no address of their own
// (paragraphs, lists, unlabelled tables, code). Under a parent with at most
// maxOrdinalLeaves leaves, a leaf is named by a letter of its kind (p
// paragraph, l list, t table, c code, n note, k clause, f caption) and its
// 1-based ordinal among the parent's leaves ("p1", "t2", "p3"): readable,
// and stable when a paragraph is edited; inserting one renumbers only the
// later leaves of that one small parent. Under a larger parent (a long
// section, or a text without headings, where an ordinal would renumber
// every later leaf of the document) a leaf is named by its kind letter and
// a hash of the start of its text (leafAddress, "p-3fa2c1"), so that
// inserting or deleting a leaf renames no other leaf and the element ids,
// chunk ids and chunk properties of the rest of the document stay as they
// were.
func assignLeafAddresses(e *Element) {
	leaves := 0
	for _, c := range e.Children {
		if !isContainer(c.Kind) && len(c.Children) == 0 {
			leaves++
		}
	}
	n := 0
	for _, c := range e.Children {
		if isContainer(c.Kind) || len(c.Children) > 0 {
			if c.Address == "" && !isContainer(c.Kind) {
				c.Address = leafAddress(c.Kind, firstText(c))
			}
			assignLeafAddresses(c)
			continue
		}
		n++
		if c.Address != "" {
			continue
		}
		if leaves <= maxOrdinalLeaves {
			c.Address = string(kindLetter(c.Kind)) + strconv.Itoa(n)
		} else {
			c.Address = leafAddress(c.Kind, c.Text)
		}
	}
}

func kindLetter(kind Kind) byte {
	switch kind {
	case KindNote:
		return 'n'
	case KindClause:
		return 'k'
	case KindCaption:
		return 'f'
	case KindList:
		return 'l'
	case KindTable:
		return 't'
	case KindCode:
		return 'c'
	}
	return 'p'
}

// leafAddress is a content key for a leaf: its kind letter and six hex
// digits of the xxhash64 of the start of its text (white space collapsed,
// the first leafKeyBytes bytes), "p-3fa2c1". Only the start, so that an
// edit further into a paragraph keeps its key. Leaves that start alike
// under one parent are told apart by dedupeAddresses ("~2").
func leafAddress(kind Kind, text string) string {
	const hexdigits = "0123456789abcdef"
	h := xxhash.Sum64String(textKey(text, leafKeyBytes))
	var b [8]byte
	b[0], b[1] = kindLetter(kind), '-'
	for i := 0; i < 6; i++ {
		b[2+i] = hexdigits[(h>>(60-4*uint(i)))&0xf]
	}
	return string(b[:])
}

// leafKeyBytes is how much of a leaf's text its key hashes.
const leafKeyBytes = 96

// textKey is the first n bytes of s with white space collapsed (as
// normalizeSpace does), cut at a character boundary; it reads no more of
// s than it needs.
func textKey(s string, n int) string {
	var sb strings.Builder
	sb.Grow(min(n, len(s)))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || r == '\u00a0' {
			space = sb.Len() > 0
			continue
		}
		if space {
			if sb.Len()+1 > n {
				break
			}
			sb.WriteByte(' ')
			space = false
		}
		if sb.Len()+utf8.RuneLen(r) > n {
			break
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// dedupeAddresses makes sibling addresses unique: the second and later
// siblings with an address already used get "~2", "~3", … appended. Empty
// section addresses become "s<ordinal>".
func dedupeAddresses(e *Element) {
	seen := make(map[string]int, len(e.Children))
	for i, c := range e.Children {
		if c.Address == "" {
			c.Address = "s" + strconv.Itoa(i+1)
		}
		seen[c.Address]++
		if n := seen[c.Address]; n > 1 {
			base := c.Address
			for {
				cand := base + "~" + strconv.Itoa(n)
				if seen[cand] == 0 {
					c.Address = cand
					seen[cand] = 1
					break
				}
				n++
			}
		}
		dedupeAddresses(c)
	}
}

// slug turns a heading title into an address: lower case letters and digits
// (any script) joined by single hyphens, e.g. "Method sets" → "method-sets",
// "Статья о правах" → "статья-о-правах". It returns "" for a title without
// letters or digits.
func slug(title string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && sb.Len() > 0 {
				sb.WriteByte('-')
			}
			dash = false
			sb.WriteRune(r)
			continue
		}
		if r == '\'' || r == '’' {
			continue
		}
		dash = true
	}
	return sb.String()
}

// normalizeSpace collapses every run of white space (including newlines and
// no-break spaces) to one space and trims the ends.
//
// It makes one pass and one allocation of at most len(s) bytes (none when
// s is already normal): a paragraph of megabytes costs its size, not a
// slice header per word.
func normalizeSpace(s string) string {
	if isNormalSpace(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	pending := false
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			i++
			if asciiSpace[c] {
				pending = b.Len() > 0
				continue
			}
			if pending {
				b.WriteByte(' ')
				pending = false
			}
			b.WriteByte(c)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isSpaceRune(r) {
			pending = b.Len() > 0
		} else {
			if pending {
				b.WriteByte(' ')
				pending = false
			}
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// asciiSpace are the ASCII runes unicode.IsSpace reports.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// isSpaceRune is the white space normalizeSpace collapses.
func isSpaceRune(r rune) bool { return unicode.IsSpace(r) || r == '\u00a0' }

// isNormalSpace reports whether normalizeSpace(s) == s: no white space at
// the ends, only single ' ' between words.
func isNormalSpace(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "  ") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' {
			if asciiSpace[c] {
				return false
			}
		} else if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if isSpaceRune(r) {
				return false // never ' '
			}
			i += size - 1
		}
	}
	return true
}

// collapseClauses turns a clause that holds nothing but its own paragraph
// into a leaf clause with that text, and drops clauses left empty.
func collapseClauses(e *Element) {
	out := e.Children[:0]
	for _, c := range e.Children {
		collapseClauses(c)
		if c.Kind == KindClause && len(c.Children) == 1 && c.Text == "" {
			only := c.Children[0]
			if only.Kind == KindParagraph && len(only.Children) == 0 {
				c.Text, c.Links, c.Children = only.Text, only.Links, nil
			}
		}
		if c.Kind == KindClause && len(c.Children) == 0 && strings.TrimSpace(c.Text) == "" {
			continue
		}
		out = append(out, c)
	}
	e.Children = out
}

// emptySections turns a section or annex without children into a leaf
// holding its heading (a numbered clause for a numbered heading, else a
// paragraph), so that its words are in a chunk: "1.2. Manufacturer's
// name and address" under "1." is an item, not a section.
func emptySections(e *Element) {
	for _, c := range e.Children {
		if len(c.Children) > 0 {
			emptySections(c)
			continue
		}
		if (c.Kind == KindSection || c.Kind == KindAnnex) && c.Title != "" {
			if _, ok := unitOf(c.Address); ok {
				c.Kind = KindClause
			} else {
				c.Kind, c.Address = KindParagraph, ""
			}
			c.Text, c.Title = c.Title, ""
		}
	}
}
