package sink

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// refValidName is ValidName's rules checked rune by rune for every name,
// without the ASCII fast path.
func refValidName(s string) error {
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

// TestValidNameMatchesReference: every byte alone and inside a name, names
// around MaxNameBytes and non-ASCII names get the reference's verdict and
// error text.
func TestValidNameMatchesReference(t *testing.T) {
	t.Parallel()
	names := []string{"", "a", "Chunk", "chunk_embedding", "a`b", "$rows", "space inside", "back\\slash",
		"Ünïcödé 名前", "a\u0085b", "a\u2028b", "a\u2029", "\u00a0", "ok\xff", "\xc3", "x\x7f", "\x7f",
		strings.Repeat("a", MaxNameBytes-1), strings.Repeat("a", MaxNameBytes), strings.Repeat("a", MaxNameBytes+1),
		strings.Repeat("é", MaxNameBytes/2), strings.Repeat("é", MaxNameBytes/2+1), strings.Repeat("a", MaxNameBytes) + ";"}
	for c := range 256 {
		names = append(names, string(rune(c)), string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	for _, s := range names {
		want, got := refValidName(s), ValidName(s)
		if want == nil {
			require.NoError(t, got, "%q", s)
		} else {
			require.EqualError(t, got, want.Error(), "%q", s)
		}
	}
}
