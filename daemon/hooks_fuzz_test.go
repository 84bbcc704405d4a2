package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzWebhookBody feeds arbitrary delivery bodies to the webhook parser:
// it never panics, and every row it accepts is an object whose "id" is the
// positive integer it is filed under.
func FuzzWebhookBody(f *testing.F) {
	for _, s := range []string{
		`[{"id":1,"A":"x"}]`, `[]`, `[{"id":1},{"id":1,"B":2}]`, `[{"id":0}]`, `[{"id":-3}]`, `[{"id":1.5}]`,
		`[{"id":"7"}]`, `[null]`, `{"id":1}`, `[{"id":1}] trailing`, `[{"id":9223372036854775808}]`,
		`[{"id":1,"nested":{"a":[1,2,{"b":null}]}}]`, "", `[{"id":1e3}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rows, err := parseRows(body)
		if err != nil {
			require.Nil(t, rows)
			return
		}
		for id, row := range rows {
			require.Positive(t, id)
			got, ok := rowID(row)
			require.True(t, ok)
			require.Equal(t, id, got)
		}
	})
}
