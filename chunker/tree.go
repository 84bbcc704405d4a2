package chunker

import (
	"strconv"
	"strings"
	"unicode"
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
	s := &Element{Kind: KindSection, Address: address, Title: title}
	parent.Children = append(parent.Children, s)
	b.stack = append(b.stack, frame{el: s, level: level})
	return s
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

// leaf appends a leaf of kind to the innermost open element. Whitespace-only
// text is dropped. The leaf's address is a kind letter and its 1-based
// ordinal among the parent's leaves ("p1", "t2", "p3"): see leafAddress.
func (b *builder) leaf(kind Kind, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	parent := b.current()
	n := 1
	for _, c := range parent.Children {
		if c.Kind != KindSection {
			n++
		}
	}
	parent.Children = append(parent.Children, &Element{Kind: kind, Address: leafAddress(kind, n), Text: text})
}

// leafAddress names a leaf by its ordinal within its parent, prefixed by a
// letter of its kind (p paragraph, l list, t table, c code). Ordinals, not
// content hashes, are used because they are readable and citable
// ("§6.5.1 p2"); inserting a leaf renumbers only its later siblings under the
// same parent (see Split for how chunk boundaries stay put regardless).
func leafAddress(kind Kind, n int) string {
	prefix := "p"
	switch kind {
	case KindList:
		prefix = "l"
	case KindTable:
		prefix = "t"
	case KindCode:
		prefix = "c"
	}
	return prefix + strconv.Itoa(n)
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
func normalizeSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '\u00a0'
	}), " ")
}

// stripBOM removes a leading UTF-8 byte order mark.
func stripBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}
