package pipeline

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// marshalRowProps is json.Marshal(rp), nil when that fails, written
// without reflection when rp has a table row's shape (id, node, links,
// vectors) and its values are nil, bools, strings, int64s, ints,
// float64s, []string, []any and map[string]any; other props go through
// encoding/json. The bytes are encoding/json's: map keys sorted, strings
// escaped as it escapes them (HTML characters, U+2028 and U+2029 as
// \uXXXX, invalid UTF-8 as \ufffd), floats formatted as it formats them.
func marshalRowProps(rp recordProps) []byte {
	if b, ok := appendRowProps(make([]byte, 0, 512), rp); ok {
		return b
	}
	b, err := json.Marshal(rp)
	if err != nil {
		return nil
	}
	return b
}

// appendRowProps appends rp as encoding/json writes it, or reports false
// when rp has fields or values it does not write.
func appendRowProps(b []byte, rp recordProps) ([]byte, bool) {
	if len(rp.Sections)+len(rp.Elements)+len(rp.Terms)+len(rp.XRefs)+len(rp.Ext)+len(rp.ExtEdges)+len(rp.DocIDs) > 0 ||
		rp.Edge != nil || rp.Mandatory != nil || rp.PrevEdge != nil || rp.Content != "" {
		return b, false
	}
	b = append(b, '{')
	if rp.ID != "" {
		b = append(b, `"id":`...)
		b = appendJSONString(b, rp.ID)
		b = append(b, ',')
	}
	b = append(b, `"node":`...)
	var ok bool
	if b, ok = appendJSONMap(b, rp.Node); !ok {
		return b, false
	}
	if len(rp.Links) > 0 {
		b = append(b, `,"links":[`...)
		for i, l := range rp.Links {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = appendJSONString(b, l.Type)
			b = append(b, `,"to_anchor":`...)
			b = appendJSONString(b, l.ToAnchor)
			b = append(b, `,"to_id":`...)
			b = appendJSONString(b, l.ToID)
			if len(l.Props) > 0 {
				b = append(b, `,"props":`...)
				if b, ok = appendJSONMap(b, l.Props); !ok {
					return b, false
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(rp.Vectors) > 0 {
		b = append(b, `,"vectors":`...)
		b = appendJSONStrings(b, rp.Vectors)
	}
	return append(b, '}'), true
}

// appendJSONMap appends m with its keys sorted (null when nil).
func appendJSONMap(b []byte, m map[string]any) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendJSONValue(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendJSONValue(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		return appendJSONString(b, v), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case float64:
		return appendJSONFloat(b, v)
	case []string:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendJSONStrings(b, v), true
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSONValue(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		return appendJSONMap(b, v)
	}
	return b, false
}

func appendJSONStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONFloat is encoding/json's float64 format: strconv's shortest
// 'f', or 'e' below 1e-6 and from 1e21 with a one-digit exponent
// unpadded; NaN and ±Inf it refuses.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 → e-9
		b = b[:n-1]
	}
	return b, true
}

// jsonPlain marks the ASCII bytes encoding/json writes as they are (with
// HTML escaping, its default): not control characters, '"', '\\', '<',
// '>' or '&'.
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const jsonHex = "0123456789abcdef"

// appendJSONString is encoding/json's string encoding with HTML escaping.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', jsonHex[c>>4], jsonHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', jsonHex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
