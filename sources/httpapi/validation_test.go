package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewValidationOrder: New reports the static checks first, in the
// order request, auth, pagination, limits, mapping, then the template and
// jq errors in field order (url, query by name, records, key, attributes by
// name, links by type, detail), one per line.
func TestNewValidationOrder(t *testing.T) {
	t.Parallel()
	_, err := New("tickets", Config{
		URL:        "https://api.example.com/{{.nope}}",
		Query:      map[string]string{"b": "{{.b}}", "a": "{{.a}}"},
		Records:    ".[",
		Key:        ".[",
		Auth:       Auth{Bearer: "x", APIKey: "y"},
		Pagination: Pagination{Style: "scroll", Size: -1},
		MaxPages:   -1,
		Attributes: map[string]string{"z": ".[", "y": ".["},
		Links:      map[string]LinkConfig{"OWNER": {Expr: ".["}},
		Detail:     &Detail{URL: "{{.zz}}"},
	}, nil)
	require.Error(t, err)
	msg, pos := err.Error(), 0
	for _, want := range []string{
		"anchor: required", "auth: api_key and api_key_header", "auth: at most one", `pagination.style: "scroll"`,
		"pagination: size_param and size", "pagination.size: -1", "max_pages: -1", `links["OWNER"].anchor: required`,
		`url: template`, `query["a"]`, `query["b"]`, "records:", "key:", `attributes["y"]`, `attributes["z"]`,
		`links["OWNER"].expr`, `detail.url: template`,
	} {
		i := strings.Index(msg[pos:], want)
		require.GreaterOrEqual(t, i, 0, "%q after the previous in\n%s", want, msg)
		pos += i + len(want)
	}
}

// TestNegativeMaxBodyBytes: a negative max_body_bytes is refused by New,
// naming the field, not found out on every page as a body "larger than
// -1 bytes".
func TestNegativeMaxBodyBytes(t *testing.T) {
	t.Parallel()
	_, err := New("tickets", Config{URL: "https://api.example.com/tickets", Records: ".[]", Key: ".id", Anchor: "ticket",
		MaxBodyBytes: -1}, nil)
	require.ErrorContains(t, err, "max_body_bytes: -1, want > 0")
}
