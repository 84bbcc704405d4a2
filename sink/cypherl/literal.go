package cypherl

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgsync/kgsync/sink"
)

// Inline returns st.Query with every $name parameter replaced by the Cypher
// literal of st.Params[name] (Literal), so the statement runs without
// parameters. Parameters are recognised only outside backtick-quoted names
// and string literals. Errors: a parameter missing from st.Params, or a value
// Literal cannot write.
func Inline(st sink.Statement) (string, error) {
	var w literalWriter
	b, err := w.appendInline(nil, st)
	return string(b), err
}

// appendInline appends Inline(st) to dst.
func (w *literalWriter) appendInline(dst []byte, st sink.Statement) ([]byte, error) {
	q := st.Query
	for i := 0; i < len(q); {
		switch c := q[i]; c {
		case '`', '"', '\'':
			end := closing(q, i)
			if end < 0 {
				return dst, fmt.Errorf("inline %s %q: unterminated %c at byte %d", st.Kind, st.Target, c, i)
			}
			dst = append(dst, q[i:end+1]...)
			i = end + 1
		case '$':
			j := i + 1
			for j < len(q) && isParamByte(q[j]) {
				j++
			}
			name := q[i+1 : j]
			v, ok := st.Params[name]
			if name == "" || !ok {
				return dst, fmt.Errorf("inline %s %q: no value for parameter $%s", st.Kind, st.Target, name)
			}
			var err error
			if dst, err = w.appendLiteral(dst, v); err != nil {
				return dst, fmt.Errorf("inline %s %q: $%s: %w", st.Kind, st.Target, name, err)
			}
			i = j
		default:
			k := i + 1
			for k < len(q) && q[k] != '`' && q[k] != '"' && q[k] != '\'' && q[k] != '$' {
				k++
			}
			dst = append(dst, q[i:k]...)
			i = k
		}
	}
	return dst, nil
}

// closing returns the index of the quote that closes the one at q[start]:
// backtick names end at a backtick not followed by another (doubled
// backticks are a literal backtick), strings at an unescaped quote.
func closing(q string, start int) int {
	quote := q[start]
	for i := start + 1; i < len(q); i++ {
		switch {
		case quote != '`' && q[i] == '\\':
			i++ // skip the escaped byte
		case q[i] == quote:
			if quote == '`' && i+1 < len(q) && q[i+1] == '`' {
				i++
				continue
			}
			return i
		}
	}
	return -1
}

func isParamByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Literal writes v as a Cypher literal on one line:
//
//   - nil as null, bools as true / false;
//   - integers in decimal (math.MinInt64, which has no literal, as
//     (-9223372036854775807 - 1));
//   - floats with strconv 'g' and the shortest precision that round-trips
//     at the value's own size: a float32 (an embedding's component) as the
//     shortest decimal that reads back as the same float32, about half the
//     digits of its float64 form, which is what Memgraph's vector index
//     holds of it (scalar_kind f32, the default; docs/memgraph.md §4); "e+"
//     is written "e" and ".0" added when the text would otherwise read as
//     an integer, since Memgraph's lexer accepts E '-'? digits only
//     (CypherLexer.g4 FloatingLiteral); NaN and ±Inf are errors;
//   - strings (valid UTF-8) in double quotes escaped like Memgraph's DUMP (\\ \' \" \b \f
//     \n \r \t; docs/memgraph.md §7), plus \uXXXX for the other control
//     characters and U+2028 / U+2029, so a literal never spans lines;
//   - lists as [a, b] and maps as {`k`: v} with keys sorted, checked with
//     sink.ValidName and quoted with sink.QuoteName.
//
// Accepted types: those of sink.NodeUpsert.Props after sink.Statements:
// nil, bool, int, int32, int64, float32, float64, string, []float32,
// []float64, []int64, []string, []any, map[string]any, []map[string]any.
func Literal(v any) (string, error) {
	var w literalWriter
	b, err := w.appendLiteral(nil, v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// literalWriter appends literals. It remembers the sorted keys of the last
// map of each size it wrote, checked and quoted: the rows of a statement,
// and their property maps, mostly have the same keys, so a map with
// exactly those keys is written without sorting or checking them again.
// The zero value is ready to use.
type literalWriter struct {
	orders [maxOrderKeys + 1]keyOrder // by number of keys
}

// maxOrderKeys is the largest map whose key order a literalWriter keeps.
const maxOrderKeys = 32

// keyOrder is one map's keys, sorted, each passing sink.ValidName, and
// their quoted names.
type keyOrder struct {
	keys   []string
	quoted []string
}

// appendLiteral appends Literal(v) to dst.
func (w *literalWriter) appendLiteral(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		dst = append(dst, "null"...)
	case bool:
		dst = strconv.AppendBool(dst, v)
	case int:
		dst = appendInt(dst, int64(v))
	case int32:
		dst = appendInt(dst, int64(v))
	case int64:
		dst = appendInt(dst, v)
	case float32:
		return appendFloat(dst, float64(v), 32)
	case float64:
		return appendFloat(dst, v, 64)
	case string:
		return appendString(dst, v)
	case []float32:
		return appendFloats(dst, v)
	case []float64:
		return appendFloats(dst, v)
	case []int64:
		return appendList(dst, v, func(dst []byte, n int64) ([]byte, error) { return appendInt(dst, n), nil })
	case []string:
		return appendList(dst, v, appendString)
	case []any:
		dst = append(dst, '[')
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			var err error
			if dst, err = w.appendLiteral(dst, x); err != nil {
				return dst, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		dst = append(dst, ']')
	case []map[string]any:
		dst = append(dst, '[')
		for i, m := range v {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			var err error
			if dst, err = w.appendMap(dst, m); err != nil {
				return dst, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		dst = append(dst, ']')
	case map[string]any:
		return w.appendMap(dst, v)
	default:
		return dst, fmt.Errorf("no Cypher literal for %T", v)
	}
	return dst, nil
}

// appendMap appends the map literal {`k`: v, …} of m, keys sorted.
func (w *literalWriter) appendMap(dst []byte, m map[string]any) ([]byte, error) {
	var order *keyOrder
	if len(m) > 0 && len(m) <= maxOrderKeys {
		order = &w.orders[len(m)]
	}
	var small [16]any
	if order != nil && order.keys != nil {
		// The remembered keys, when m has them all, are m's keys in order.
		// A value may be a map of the same size that replaces the order,
		// so this map keeps its own slices.
		keys, quoted := order.keys, order.quoted
		vals := small[:0]
		for _, k := range keys {
			x, ok := m[k]
			if !ok {
				break
			}
			vals = append(vals, x)
		}
		if len(vals) == len(keys) {
			dst = append(dst, '{')
			for i, x := range vals {
				if i > 0 {
					dst = append(dst, ", "...)
				}
				dst = append(dst, quoted[i]...)
				dst = append(dst, ": "...)
				var err error
				if dst, err = w.appendLiteral(dst, x); err != nil {
					return dst, fmt.Errorf("%q: %w", keys[i], err)
				}
			}
			return append(dst, '}'), nil
		}
	}
	var smallKeys [16]string
	keys := smallKeys[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if err := sink.ValidName(k); err != nil {
			return dst, fmt.Errorf("map key: %w", err)
		}
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendQuotedName(dst, k)
		dst = append(dst, ": "...)
		var err error
		if dst, err = w.appendLiteral(dst, m[k]); err != nil {
			return dst, fmt.Errorf("%q: %w", k, err)
		}
	}
	dst = append(dst, '}')
	if order != nil {
		// Every key passed sink.ValidName: remember them.
		quoted := make([]string, len(keys))
		for i, k := range keys {
			quoted[i] = sink.QuoteName(k)
		}
		*order = keyOrder{keys: slices.Clone(keys), quoted: quoted}
	}
	return dst, nil
}

// appendQuotedName appends sink.QuoteName(s).
func appendQuotedName(dst []byte, s string) []byte {
	if strings.IndexByte(s, '`') >= 0 {
		return append(dst, sink.QuoteName(s)...)
	}
	dst = append(dst, '`')
	dst = append(dst, s...)
	return append(dst, '`')
}

func appendInt(dst []byte, i int64) []byte {
	if i == math.MinInt64 {
		// 9223372036854775808 overflows int64, so -9223372036854775808 is
		// not a literal.
		return append(dst, "(-9223372036854775807 - 1)"...)
	}
	return strconv.AppendInt(dst, i, 10)
}

var errNonFinite = errors.New("NaN and infinite floats have no Cypher literal")

// appendFloat appends f, which has bitSize bits (32: a float32 widened),
// as Literal writes it.
func appendFloat(dst []byte, f float64, bitSize int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, errNonFinite
	}
	if f == 0 { // strconv writes "0" or "-0"
		if math.Signbit(f) {
			return append(dst, "-0.0"...), nil
		}
		return append(dst, "0.0"...), nil
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', -1, bitSize)
	num := dst[start:]
	if i := bytes.Index(num, []byte("e+")); i >= 0 {
		dst = append(dst[:start+i+1], num[i+2:]...)
		return dst, nil
	}
	if bytes.IndexByte(num, '.') < 0 && bytes.IndexByte(num, 'e') < 0 {
		dst = append(dst, ".0"...)
	}
	return dst, nil
}

// appendFloats appends the list literal of v, each value by appendFloat at
// T's size.
// A value equal to one of the last few written is copied from where it
// was written: vectors repeat values (a hashing embedder's are multiples
// of one weight, zeros apart).
func appendFloats[T float32 | float64](dst []byte, v []T) ([]byte, error) {
	bitSize := 64
	if _, ok := any(T(0)).(float32); ok {
		bitSize = 32
	}
	type written struct {
		bits       uint64
		start, end int
	}
	var recent [4]written
	n, next := 0, 0 // values in recent, the slot to fill next
	dst = append(dst, '[')
	for i, x := range v {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		f := float64(x)
		if f != 0 { // zero is written without formatting
			bits := math.Float64bits(f)
			j := 0
			for j < n && recent[j].bits != bits {
				j++
			}
			if j < n {
				dst = append(dst, dst[recent[j].start:recent[j].end]...)
				continue
			}
		}
		start := len(dst)
		var err error
		if dst, err = appendFloat(dst, f, bitSize); err != nil {
			return dst, fmt.Errorf("[%d]: %w", i, err)
		}
		if f != 0 {
			recent[next] = written{bits: math.Float64bits(f), start: start, end: len(dst)}
			next = (next + 1) % len(recent)
			n = max(n, next)
			if next == 0 {
				n = len(recent)
			}
		}
	}
	return append(dst, ']'), nil
}

// plainASCII marks the ASCII bytes a string literal holds as they are.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '\\' && c != '\'' && c != '"'
	}
	return t
}()

func appendString(dst []byte, s string) ([]byte, error) {
	start := len(dst)
	dst = append(dst, '"')
	plain := 0 // start of the bytes not copied yet
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && plainASCII[c] {
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return dst[:start], fmt.Errorf("string %q is not valid UTF-8", s)
			}
			if !unicode.IsControl(r) && r != '\u2028' && r != '\u2029' {
				i += size
				continue
			}
		}
		dst = append(dst, s[plain:i]...)
		switch r {
		case '\\':
			dst = append(dst, `\\`...)
		case '\'':
			dst = append(dst, `\'`...)
		case '"':
			dst = append(dst, `\"`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			dst = fmt.Appendf(dst, `\u%04X`, r)
		}
		i += size
		plain = i
	}
	dst = append(dst, s[plain:]...)
	return append(dst, '"'), nil
}

// splitsCleanly reports whether mgconsole reads line as exactly one
// statement ending at its final ';'. It follows mgconsole's ParseLine: ';'
// ends a statement only outside '…' / "…" quotes, a backslash escapes the
// next character only inside quotes, backticks are not quotes
// (docs/memgraph.md §7).
func splitsCleanly[T string | []byte](line T) bool {
	var quote byte
	escaped := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == '\\':
			escaped = !escaped
			continue
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote != 0 && !escaped && c == quote:
			quote = 0
		case quote == 0 && c == ';':
			return i == len(line)-1
		case c == '\n' || c == '\r':
			return false
		}
		escaped = false
	}
	return false
}

// appendList appends the list literal [a, b, …] of v, each element by
// elem; an element's error names its index.
func appendList[T any](dst []byte, v []T, elem func([]byte, T) ([]byte, error)) ([]byte, error) {
	dst = append(dst, '[')
	for i, x := range v {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		var err error
		if dst, err = elem(dst, x); err != nil {
			return dst, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return append(dst, ']'), nil
}
