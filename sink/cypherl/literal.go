package cypherl

import (
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
	q := st.Query
	var sb strings.Builder
	sb.Grow(len(q))
	for i := 0; i < len(q); {
		switch c := q[i]; c {
		case '`', '"', '\'':
			end := closing(q, i)
			if end < 0 {
				return "", fmt.Errorf("inline %s %q: unterminated %c at byte %d", st.Kind, st.Target, c, i)
			}
			sb.WriteString(q[i : end+1])
			i = end + 1
		case '$':
			j := i + 1
			for j < len(q) && isParamByte(q[j]) {
				j++
			}
			name := q[i+1 : j]
			v, ok := st.Params[name]
			if name == "" || !ok {
				return "", fmt.Errorf("inline %s %q: no value for parameter $%s", st.Kind, st.Target, name)
			}
			lit, err := Literal(v)
			if err != nil {
				return "", fmt.Errorf("inline %s %q: $%s: %w", st.Kind, st.Target, name, err)
			}
			sb.WriteString(lit)
			i = j
		default:
			sb.WriteByte(c)
			i++
		}
	}
	return sb.String(), nil
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
//   - floats with strconv 'g' and the shortest precision that round-trips,
//     with "e+" written "e" and ".0" added when the text would otherwise read
//     as an integer, since Memgraph's lexer accepts E '-'? digits only
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
	var sb strings.Builder
	if err := writeLiteral(&sb, v); err != nil {
		return "", err
	}
	return sb.String(), nil
}

func writeLiteral(sb *strings.Builder, v any) error {
	switch v := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(v))
	case int:
		writeInt(sb, int64(v))
	case int32:
		writeInt(sb, int64(v))
	case int64:
		writeInt(sb, v)
	case float32:
		return writeFloat(sb, float64(v))
	case float64:
		return writeFloat(sb, v)
	case string:
		return writeString(sb, v)
	case []float32:
		return writeList(sb, len(v), func(i int) error { return writeFloat(sb, float64(v[i])) })
	case []float64:
		return writeList(sb, len(v), func(i int) error { return writeFloat(sb, v[i]) })
	case []int64:
		return writeList(sb, len(v), func(i int) error { writeInt(sb, v[i]); return nil })
	case []string:
		return writeList(sb, len(v), func(i int) error { return writeString(sb, v[i]) })
	case []any:
		return writeList(sb, len(v), func(i int) error { return writeLiteral(sb, v[i]) })
	case []map[string]any:
		return writeList(sb, len(v), func(i int) error { return writeLiteral(sb, v[i]) })
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		sb.WriteByte('{')
		for i, k := range keys {
			if err := sink.ValidName(k); err != nil {
				return fmt.Errorf("map key: %w", err)
			}
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(sink.QuoteName(k))
			sb.WriteString(": ")
			if err := writeLiteral(sb, v[k]); err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
		}
		sb.WriteByte('}')
	default:
		return fmt.Errorf("no Cypher literal for %T", v)
	}
	return nil
}

func writeList(sb *strings.Builder, n int, item func(i int) error) error {
	sb.WriteByte('[')
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		if err := item(i); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	sb.WriteByte(']')
	return nil
}

func writeInt(sb *strings.Builder, i int64) {
	if i == math.MinInt64 {
		// 9223372036854775808 overflows int64, so -9223372036854775808 is
		// not a literal.
		sb.WriteString("(-9223372036854775807 - 1)")
		return
	}
	sb.WriteString(strconv.FormatInt(i, 10))
}

var errNonFinite = errors.New("NaN and infinite floats have no Cypher literal")

func writeFloat(sb *strings.Builder, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return errNonFinite
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	s = strings.Replace(s, "e+", "e", 1)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	sb.WriteString(s)
	return nil
}

func writeString(sb *strings.Builder, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("string %q is not valid UTF-8", s)
	}
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			sb.WriteString(`\\`)
		case '\'':
			sb.WriteString(`\'`)
		case '"':
			sb.WriteString(`\"`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
				fmt.Fprintf(sb, `\u%04X`, r)
				continue
			}
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return nil
}

// splitsCleanly reports whether mgconsole reads line as exactly one
// statement ending at its final ';'. It follows mgconsole's ParseLine: ';'
// ends a statement only outside '…' / "…" quotes, a backslash escapes the
// next character only inside quotes, backticks are not quotes
// (docs/memgraph.md §7).
func splitsCleanly(line string) bool {
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
