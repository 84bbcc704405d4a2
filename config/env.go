package config

import (
	"fmt"
	"strings"
)

// expandEnv replaces ${NAME} and ${NAME:-default} in s with values from
// lookup (os.LookupEnv in Load and Parse) and "$$" with a literal "$".
//
// Rules, as documented in docs/config.md:
//   - ${NAME} of an unset variable is an error; a variable set to "" expands to "".
//   - ${NAME:-default} expands to default when NAME is unset or empty, like the
//     POSIX shell. The default is taken literally up to the first "}".
//   - A "$" not followed by "{" or "$" is kept as is ("pa$word" stays "pa$word");
//     $NAME without braces is not expanded.
//   - NAME must match [A-Za-z_][A-Za-z0-9_]*.
//
// Errors never quote s itself, which may hold a secret written in the file.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c != '$':
			b.WriteByte(c)
			i++
		case i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i += 2
		case i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf(`unterminated "${" (write "$$" for a literal "$")`)
			}
			expr := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			if !isEnvName(name) {
				return "", fmt.Errorf(`invalid environment variable name %q in "${...}" (want [A-Za-z_][A-Za-z0-9_]*; write "$$" for a literal "$")`, name)
			}
			val, ok := lookup(name)
			switch {
			case hasDef && val == "":
				val = def
			case !ok:
				return "", fmt.Errorf("environment variable %s is not set", name)
			}
			b.WriteString(val)
			i += 2 + end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), nil
}

// isEnvName reports whether name is a valid environment variable name for ${...}.
func isEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
