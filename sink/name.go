package sink

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameBytes is the longest identifier ValidName accepts, in bytes.
const MaxNameBytes = 256

// ValidName reports whether s may be used as a label, relationship type,
// property name or index name. It must be non-empty, valid UTF-8, at most
// MaxNameBytes bytes, and contain no control character (NUL, newline, tab,
// …; Unicode category Cc), no line or paragraph separator (U+2028, U+2029),
// no ';' and no quote character (' or ").
//
// Those rules come from CYPHERL loading, not from Cypher: a file holds one
// statement per line, and mgconsole splits it on ';' outside '…' or "…"
// quotes without treating backticks as quotes, so a ';' inside a
// backtick-quoted name cuts the statement in two and a quote inside one
// opens a string that swallows the rest of the file (docs/memgraph.md §7;
// mgconsole ParseLine). Everything else, backticks included, is made safe
// by QuoteName. The error names the identifier (quoted with %q) and the
// rule it breaks.
func ValidName(s string) error {
	if plainASCIIName(s) {
		return nil
	}
	switch {
	case s == "":
		return errors.New("invalid name \"\": empty")
	case !utf8.ValidString(s):
		return fmt.Errorf("invalid name %q: not valid UTF-8", s)
	case len(s) > MaxNameBytes:
		return fmt.Errorf("invalid name %q: %d bytes, at most %d allowed", s, len(s), MaxNameBytes)
	}
	for i, r := range s {
		switch {
		case r == ';' || r == '\'' || r == '"':
			return fmt.Errorf("invalid name %q: %q at byte %d breaks CYPHERL files", s, r, i)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			return fmt.Errorf("invalid name %q: control or line-break character %U at byte %d", s, r, i)
		}
	}
	return nil
}

// plainASCIIName reports whether s is a non-empty name of at most
// MaxNameBytes printable ASCII bytes, none of them a semicolon or a quote
// character: valid UTF-8 without a control character (in ASCII, the bytes
// below 0x20 and 0x7f), so ValidName accepts it without decoding runes.
func plainASCIIName(s string) bool {
	if s == "" || len(s) > MaxNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == ';', c == '\'', c == '"':
			return false
		}
	}
	return true
}

// QuoteName returns s as a backtick-quoted Cypher symbolic name, with each
// literal backtick doubled:
//
//	QuoteName("a`b") == "`a``b`"
//
// Memgraph's lexer reads backtick-delimited runs and joins adjacent runs
// with a backtick, and its DUMP quotes every name this way (docs/memgraph.md
// §6), so the result is always exactly one identifier token whatever s
// holds. QuoteName does not validate; call ValidName first.
func QuoteName(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
