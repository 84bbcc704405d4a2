package crashtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// literalParser reads the Cypher literals Literal writes, following
// Memgraph's CypherLexer.g4 rather than Literal's code: StringLiteral with
// the escapes \\ \' \" \b \f \n \r \t \uXXXX \UXXXXXXXX; DecimalLiteral
// (an integer) versus FloatingLiteral (needs '.' or E, exponent sign '-'
// only); EscapedSymbolicName map keys (backtick runs joined by a backtick);
// null, true, false, lists and maps; unary minus. Values come back as nil,
// bool, int64, float64, string, []any and map[string]any.
type literalParser struct {
	s   string
	pos int
}

// ParseLiteral reads one Cypher literal at the start of s, as
// sink/cypherl.Literal writes them, and returns its value and the number of
// bytes it took; errors name the byte offset.
func ParseLiteral(s string) (any, int, error) {
	p := &literalParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, 0, err
	}
	return v, p.pos, nil
}

// ParseWholeLiteral is ParseLiteral for a string holding exactly one
// literal (surrounding spaces allowed).
func ParseWholeLiteral(s string) (any, error) {
	p := &literalParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.s) {
		return nil, fmt.Errorf("trailing text at %d: %q", p.pos, p.s[p.pos:])
	}
	return v, nil
}

func (p *literalParser) space() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

func (p *literalParser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *literalParser) value() (any, error) {
	p.space()
	if p.pos >= len(p.s) {
		return nil, fmt.Errorf("unexpected end")
	}
	switch c := p.s[p.pos]; {
	case p.eat("null"):
		return nil, nil
	case p.eat("true"):
		return true, nil
	case p.eat("false"):
		return false, nil
	case p.eat("(-9223372036854775807 - 1)"):
		return int64(-9223372036854775807 - 1), nil
	case c == '"' || c == '\'':
		return p.str()
	case c == '[':
		return p.list()
	case c == '{':
		return p.dict()
	case c == '-':
		p.pos++
		v, err := p.number()
		switch v := v.(type) {
		case int64:
			return -v, err
		case float64:
			return -v, err
		}
		return nil, err
	default:
		return p.number()
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *literalParser) digits() string {
	start := p.pos
	for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *literalParser) number() (any, error) {
	start := p.pos
	intPart := p.digits()
	isFloat, fraction := false, ""
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		if fraction = p.digits(); fraction == "" && intPart == "" {
			return nil, fmt.Errorf("bad number at %d", start)
		}
		isFloat = true
	}
	exponent := p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E')
	if isFloat && fraction == "" && !exponent {
		// "1." lexes as 1 and a '.': FloatingLiteral takes a '.' without
		// digits after it only before an exponent.
		return nil, fmt.Errorf("bad number at %d: %q has no digits after '.'", start, p.s[start:p.pos])
	}
	if exponent {
		p.pos++
		if p.pos < len(p.s) && p.s[p.pos] == '-' {
			p.pos++
		}
		if p.digits() == "" {
			// includes "e+": the grammar has E '-'? DecDigit+ only
			return nil, fmt.Errorf("bad exponent at %d in %q", start, p.s[start:])
		}
		isFloat = true
	}
	text := p.s[start:p.pos]
	if text == "" {
		return nil, fmt.Errorf("expected a value at %d: %q", start, p.s[start:])
	}
	if !isFloat {
		if len(text) > 1 && text[0] == '0' {
			return nil, fmt.Errorf("octal literal %q", text)
		}
		return strconv.ParseInt(text, 10, 64)
	}
	return strconv.ParseFloat(text, 64)
}

func (p *literalParser) str() (string, error) {
	quote := p.s[p.pos]
	p.pos++
	var sb strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == quote:
			p.pos++
			return sb.String(), nil
		case c == '\\':
			if p.pos+1 >= len(p.s) {
				return "", fmt.Errorf("dangling backslash")
			}
			e := p.s[p.pos+1]
			p.pos += 2
			switch e {
			case '\\', '\'', '"':
				sb.WriteByte(e)
			case 'b', 'B':
				sb.WriteByte('\b')
			case 'f', 'F':
				sb.WriteByte('\f')
			case 'n', 'N':
				sb.WriteByte('\n')
			case 'r', 'R':
				sb.WriteByte('\r')
			case 't', 'T':
				sb.WriteByte('\t')
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if p.pos+n > len(p.s) {
					return "", fmt.Errorf("short \\%c escape", e)
				}
				r, err := strconv.ParseUint(p.s[p.pos:p.pos+n], 16, 32)
				if err != nil {
					return "", fmt.Errorf("bad \\%c escape: %w", e, err)
				}
				sb.WriteRune(rune(r))
				p.pos += n
			default:
				return "", fmt.Errorf("unknown escape \\%c", e)
			}
		default:
			_, size := utf8.DecodeRuneInString(p.s[p.pos:])
			sb.WriteString(p.s[p.pos : p.pos+size])
			p.pos += size
		}
	}
	return "", fmt.Errorf("unterminated string")
}

func (p *literalParser) list() ([]any, error) {
	p.pos++ // [
	out := []any{}
	if p.eat("]") {
		return out, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.eat("]") {
			return out, nil
		}
		if !p.eat(",") {
			return nil, fmt.Errorf("expected , or ] at %d", p.pos)
		}
	}
}

func (p *literalParser) name() (string, error) {
	p.space()
	var runs []string
	for p.pos < len(p.s) && p.s[p.pos] == '`' {
		end := strings.IndexByte(p.s[p.pos+1:], '`')
		if end < 0 {
			return "", fmt.Errorf("unterminated name")
		}
		runs = append(runs, p.s[p.pos+1:p.pos+1+end])
		p.pos += end + 2
	}
	if len(runs) == 0 {
		return "", fmt.Errorf("expected a backtick-quoted key at %d", p.pos)
	}
	return strings.Join(runs, "`"), nil
}

func (p *literalParser) dict() (map[string]any, error) {
	p.pos++ // {
	out := map[string]any{}
	if p.eat("}") {
		return out, nil
	}
	for {
		k, err := p.name()
		if err != nil {
			return nil, err
		}
		if !p.eat(":") {
			return nil, fmt.Errorf("expected : at %d", p.pos)
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out[k] = v
		if p.eat("}") {
			return out, nil
		}
		if !p.eat(",") {
			return nil, fmt.Errorf("expected , or } at %d", p.pos)
		}
	}
}
