package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExpandEnv checks the expansion rules documented on expandEnv and in
// docs/config.md, against a fixed environment.
func TestExpandEnv(t *testing.T) {
	env := map[string]string{"A": "x", "EMPTY": "", "B_2": "y z"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "x"},
		{in: "pre-${A}-${B_2}-post", want: "pre-x-y z-post"},
		{in: "${EMPTY}", want: ""},
		{in: "${EMPTY:-d}", want: "d"},
		{in: "${UNSET:-d}", want: "d"},
		{in: "${UNSET:-}", want: ""},
		{in: "${A:-d}", want: "x"},
		{in: "${UNSET:-a:-b}", want: "a:-b"},
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "$$$${A}", want: "$${A}"},
		{in: "$$${A}", want: "$x"},
		{in: "$A $", want: "$A $"},
		{in: "a$", want: "a$"},
		{in: "${UNSET}", err: "environment variable UNSET is not set"},
		{in: "${A", err: `unterminated "${"`},
		{in: "${}", err: `invalid environment variable name ""`},
		{in: "${1A}", err: `invalid environment variable name "1A"`},
		{in: "${A-B}", err: `invalid environment variable name "A-B"`},
	}
	for _, tt := range tests {
		got, err := expandEnv(tt.in, lookup)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}
