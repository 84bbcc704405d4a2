package cypherl

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/kgsync/kgsync/sink"
)

// The literal writer as it was before literalWriter (kept map key orders),
// appendFloats (repeated values copied) and the ASCII scan of appendString:
// the reference the tests compare Literal with.

// refAppendLiteral appends Literal(v) to dst.
func refAppendLiteral(dst []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		dst = append(dst, "null"...)
	case bool:
		dst = strconv.AppendBool(dst, v)
	case int:
		dst = refAppendInt(dst, int64(v))
	case int32:
		dst = refAppendInt(dst, int64(v))
	case int64:
		dst = refAppendInt(dst, v)
	case float32:
		return refAppendFloatSize(dst, float64(v), 32)
	case float64:
		return refAppendFloat(dst, v)
	case string:
		return refAppendString(dst, v)
	case []float32:
		return refAppendList(dst, v, func(dst []byte, f float32) ([]byte, error) { return refAppendFloatSize(dst, float64(f), 32) })
	case []float64:
		return refAppendList(dst, v, refAppendFloat)
	case []int64:
		return refAppendList(dst, v, func(dst []byte, n int64) ([]byte, error) { return refAppendInt(dst, n), nil })
	case []string:
		return refAppendList(dst, v, refAppendString)
	case []any:
		return refAppendList(dst, v, refAppendLiteral)
	case []map[string]any:
		return refAppendList(dst, v, func(dst []byte, m map[string]any) ([]byte, error) { return refAppendLiteral(dst, m) })
	case map[string]any:
		var small [16]string
		keys := small[:0]
		for k := range v {
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
			dst = append(dst, sink.QuoteName(k)...)
			dst = append(dst, ": "...)
			if dst, err = refAppendLiteral(dst, v[k]); err != nil {
				return dst, fmt.Errorf("%q: %w", k, err)
			}
		}
		dst = append(dst, '}')
	default:
		return dst, fmt.Errorf("no Cypher literal for %T", v)
	}
	return dst, nil
}

func refAppendInt(dst []byte, i int64) []byte {
	if i == math.MinInt64 {
		// 9223372036854775808 overflows int64, so -9223372036854775808 is
		// not a literal.
		return append(dst, "(-9223372036854775807 - 1)"...)
	}
	return strconv.AppendInt(dst, i, 10)
}

var refErrNonFinite = errors.New("NaN and infinite floats have no Cypher literal")

func refAppendFloat(dst []byte, f float64) ([]byte, error) { return refAppendFloatSize(dst, f, 64) }

// refAppendFloatSize writes f, of bitSize bits, with the fewest digits
// that read back as the same value at that size.
func refAppendFloatSize(dst []byte, f float64, bitSize int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, refErrNonFinite
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

func refAppendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, fmt.Errorf("string %q is not valid UTF-8", s)
	}
	dst = append(dst, '"')
	plain := 0 // start of the bytes not copied yet
	for i, r := range s {
		var esc string
		switch r {
		case '\\':
			esc = `\\`
		case '\'':
			esc = `\'`
		case '"':
			esc = `\"`
		case '\b':
			esc = `\b`
		case '\f':
			esc = `\f`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		default:
			if r < 0x80 && r >= 0x20 && r != 0x7f {
				continue
			}
			if !unicode.IsControl(r) && r != '\u2028' && r != '\u2029' {
				continue
			}
		}
		dst = append(dst, s[plain:i]...)
		if esc != "" {
			dst = append(dst, esc...)
		} else {
			dst = fmt.Appendf(dst, `\u%04X`, r)
		}
		plain = i + utf8.RuneLen(r)
	}
	dst = append(dst, s[plain:]...)
	return append(dst, '"'), nil
}

// refAppendList appends the list literal [a, b, …] of v, each element by
// elem; an element's error names its index.
func refAppendList[T any](dst []byte, v []T, elem func([]byte, T) ([]byte, error)) ([]byte, error) {
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
