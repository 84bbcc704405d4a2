package crashtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// minInt64Literal is how sink/cypherl writes math.MinInt64, which has no
// plain literal.
const minInt64Literal = "(-9223372036854775807 - 1)"

// ParseLiteral reads one Cypher literal at the start of s, as
// sink/cypherl.Literal writes them, and returns its value and the number of
// bytes it took. Values: nil, bool, int64, float64, string, []any and
// map[string]any (keys bare or backtick-quoted, doubled backticks unescaped).
// Errors name the byte offset in s.
func ParseLiteral(s string) (any, int, error) {
	p := &litParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, 0, err
	}
	return v, p.i, nil
}

type litParser struct {
	s string
	i int
}

func (p *litParser) errorf(format string, args ...any) error {
	return fmt.Errorf("literal at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *litParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *litParser) value() (any, error) {
	p.skipSpace()
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end")
	}
	rest := p.s[p.i:]
	switch c := p.s[p.i]; {
	case c == '"' || c == '\'':
		return p.str()
	case c == '[':
		return p.list()
	case c == '{':
		return p.mapLit()
	case strings.HasPrefix(rest, minInt64Literal):
		p.i += len(minInt64Literal)
		return int64(-9223372036854775807 - 1), nil
	case strings.HasPrefix(rest, "null"):
		p.i += 4
		return nil, nil
	case strings.HasPrefix(rest, "true"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(rest, "false"):
		p.i += 5
		return false, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, p.errorf("unexpected %q", p.s[p.i])
}

func (p *litParser) number() (any, error) {
	start := p.i
	isFloat := false
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c >= '0' && c <= '9', c == '-' && (p.i == start || p.s[p.i-1] == 'e' || p.s[p.i-1] == 'E'):
		case c == '.' || c == 'e' || c == 'E':
			isFloat = true
		default:
			goto done
		}
		p.i++
	}
done:
	text := p.s[start:p.i]
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, p.errorf("float %q: %v", text, err)
		}
		return f, nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, p.errorf("integer %q: %v", text, err)
	}
	return n, nil
}

// str reads a quoted string with the escapes Literal writes (\\ \' \" \b
// \f \n \r \t \uXXXX).
func (p *litParser) str() (any, error) {
	quote := p.s[p.i]
	p.i++
	var sb strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return sb.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, p.errorf("unterminated escape")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '\\', '\'', '"':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				if p.i+4 > len(p.s) {
					return nil, p.errorf("short \\u escape")
				}
				r, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
				if err != nil {
					return nil, p.errorf("\\u escape %q: %v", p.s[p.i:p.i+4], err)
				}
				sb.WriteRune(rune(r))
				p.i += 4
			default:
				return nil, p.errorf("unknown escape \\%c", e)
			}
		case c == '\n' || c == '\r':
			return nil, p.errorf("line break inside a string")
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && size <= 1 {
				return nil, p.errorf("invalid UTF-8")
			}
			sb.WriteString(p.s[p.i : p.i+size])
			p.i += size
		}
	}
	return nil, p.errorf("unterminated string")
}

func (p *litParser) list() (any, error) {
	p.i++ // [
	out := []any{}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return out, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.errorf("unterminated list")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return out, nil
		default:
			return nil, p.errorf("want ',' or ']' in a list, got %q", p.s[p.i])
		}
	}
}

func (p *litParser) mapLit() (any, error) {
	p.i++ // {
	out := map[string]any{}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return out, nil
	}
	for {
		p.skipSpace()
		key, err := p.name()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("want ':' after map key %q", key)
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		if _, dup := out[key]; dup {
			return nil, p.errorf("duplicate map key %q", key)
		}
		out[key] = v
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.errorf("unterminated map")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, nil
		default:
			return nil, p.errorf("want ',' or '}' in a map, got %q", p.s[p.i])
		}
	}
}

// name reads a map key or identifier: `quoted` (doubled backticks stand
// for one) or bare letters, digits and '_'.
func (p *litParser) name() (string, error) {
	if p.i < len(p.s) && p.s[p.i] == '`' {
		var sb strings.Builder
		for j := p.i + 1; j < len(p.s); j++ {
			if p.s[j] != '`' {
				sb.WriteByte(p.s[j])
				continue
			}
			if j+1 < len(p.s) && p.s[j+1] == '`' {
				sb.WriteByte('`')
				j++
				continue
			}
			p.i = j + 1
			return sb.String(), nil
		}
		return "", p.errorf("unterminated quoted name")
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			p.i++
			continue
		}
		break
	}
	if p.i == start {
		return "", p.errorf("want a name")
	}
	return p.s[start:p.i], nil
}
