package chunker

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Parser turns the bytes of one document into its element tree. The root it
// returns has Kind KindDocument; sections nest by heading level and carry
// their text in Children; paragraphs, lists, tables and code blocks are
// leaves with Text. Parse returns an error for input the format cannot hold
// (for example bytes that are not UTF-8).
type Parser interface {
	Parse(content []byte) (*Element, error)
}

// ParserFunc adapts a function to Parser.
type ParserFunc func(content []byte) (*Element, error)

// Parse calls f(content).
func (f ParserFunc) Parse(content []byte) (*Element, error) { return f(content) }

// registry maps formats to parsers and file extensions to formats. It is
// built in its var initializer, so importing chunker has no init side
// effects and other packages extend it only through Register.
type registry struct {
	mu      sync.RWMutex
	parsers map[string]Parser // format → parser
	exts    map[string]string // ".md" → "md"
}

var formats = &registry{
	parsers: map[string]Parser{
		"txt":  ParserFunc(parseTxt),
		"md":   markdownParser{},
		"html": ParserFunc(parseHTML),
		"docx": ParserFunc(parseDocx),
		"pdf":  ParserFunc(parsePDF),
	},
	exts: map[string]string{
		".txt":      "txt",
		".md":       "md",
		".markdown": "md",
		".html":     "html",
		".htm":      "html",
		".docx":     "docx",
		".pdf":      "pdf",
	},
}

// Register adds (or replaces) the parser of format and maps each extension
// in exts (with or without the leading dot, compared case-insensitively) to
// it. It returns an error when format is empty, p is nil, or an extension is
// already mapped to another format; nothing is changed then.
func Register(format string, exts []string, p Parser) error {
	if format == "" {
		return fmt.Errorf("register format: empty format name")
	}
	if p == nil {
		return fmt.Errorf("register format %q: nil parser", format)
	}
	norm := make([]string, 0, len(exts))
	for _, e := range exts {
		e = normExt(e)
		if e == "." {
			return fmt.Errorf("register format %q: empty extension", format)
		}
		norm = append(norm, e)
	}
	formats.mu.Lock()
	defer formats.mu.Unlock()
	for _, e := range norm {
		if old, ok := formats.exts[e]; ok && old != format {
			return fmt.Errorf("register format %q: extension %q already belongs to format %q", format, e, old)
		}
	}
	formats.parsers[format] = p
	for _, e := range norm {
		formats.exts[e] = format
	}
	return nil
}

func normExt(e string) string {
	e = strings.ToLower(strings.TrimSpace(e))
	if !strings.HasPrefix(e, ".") {
		e = "." + e
	}
	return e
}

// FormatForPath returns the format registered for path's extension
// (case-insensitive: "Spec.MD" → "md"); ok is false for an unknown or
// missing extension.
func FormatForPath(path string) (format string, ok bool) {
	ext := filepath.Ext(path)
	if ext == "" {
		return "", false
	}
	formats.mu.RLock()
	defer formats.mu.RUnlock()
	format, ok = formats.exts[strings.ToLower(ext)]
	return format, ok
}

// Formats returns a copy of the extension → format map, extensions with
// their leading dot (".md" → "md").
func Formats() map[string]string {
	formats.mu.RLock()
	defer formats.mu.RUnlock()
	out := make(map[string]string, len(formats.exts))
	for e, f := range formats.exts {
		out[e] = f
	}
	return out
}

// Parse parses content in the named format into its element tree and
// returns the KindDocument root. Sibling addresses are made unique (a
// repeated address gets a "~2", "~3" suffix) so that every element has a
// distinct address path, and every element gets its Citation. It returns an error for an unknown format (the
// message lists the known ones) or content the parser rejects, including
// the limits of limits.go (ErrTooComplex, ErrBinary).
func Parse(format string, content []byte) (*Element, error) {
	return parse(nil, format, content)
}

// markdownParser is the md format's ContextParser.
type markdownParser struct{}

func (markdownParser) Parse(content []byte) (*Element, error) { return parseMarkdown(content) }

func (markdownParser) ParseContext(ctx context.Context, content []byte) (*Element, error) {
	return parseMarkdownContext(ctx, content)
}

// parse is Parse with ParseContext's ctx (nil: none).
func parse(ctx context.Context, format string, content []byte) (*Element, error) {
	formats.mu.RLock()
	p, ok := formats.parsers[format]
	known := make([]string, 0, len(formats.parsers))
	for f := range formats.parsers {
		known = append(known, f)
	}
	formats.mu.RUnlock()
	if !ok {
		sort.Strings(known)
		return nil, fmt.Errorf("parse: unknown format %q (known: %s)", format, strings.Join(known, ", "))
	}
	var root *Element
	var err error
	if cp, ok := p.(ContextParser); ok && ctx != nil {
		root, err = cp.ParseContext(ctx, content)
	} else {
		root, err = p.Parse(content)
	}
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", format, err)
	}
	if root == nil || root.Kind != KindDocument {
		return nil, fmt.Errorf("parse %s: parser returned no document root", format)
	}
	if err := checkExpansion(root, len(content)); err != nil {
		return nil, fmt.Errorf("parse %s: %w", format, err)
	}
	collapseClauses(root)
	emptySections(root)
	attachCaptions(root)
	structureParts(root)
	assignLeafAddresses(root)
	dedupeAddresses(root)
	assignCitations(root)
	return root, nil
}

// checkUTF8 reports the byte offset of the first invalid UTF-8 sequence.
func checkUTF8(content []byte) error {
	if utf8.Valid(content) {
		return nil
	}
	for i := 0; i < len(content); {
		r, n := utf8.DecodeRune(content[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Errorf("invalid UTF-8 at byte %d", i)
		}
		i += n
	}
	return fmt.Errorf("invalid UTF-8")
}
