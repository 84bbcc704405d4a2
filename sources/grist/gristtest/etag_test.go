package gristtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	kgcorpus "github.com/kgsync/kgsync/internal/corpus"
)

// TestETagMatchesRealServer recomputes the ETags of two real captures from
// their saved bodies; the expected tags are the ETag headers in the
// captures' .txt files.
func TestETagMatchesRealServer(t *testing.T) {
	real := filepath.Join(kgcorpus.Dir(t), "..", "docs", "grist-samples", "real", "read")
	for file, want := range map[string]string{
		"get-records-Guides-etag.json":                 `W/"2d04-YiArYzc3+iXm/MK/zv5GTxbjeOI"`,
		"get-records-_grist_Tables_column-limit3.json": `W/"3aa-m/8jdoWw7NilvqEs+oIKR0/0PTA"`,
	} {
		b, err := os.ReadFile(filepath.Join(real, file))
		require.NoError(t, err)
		require.Equal(t, want, etag(b), file)
	}
}

func TestIfNoneMatch(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "n", Type: "Int"})
	s.AddRows("T", map[string]any{"n": 5})
	code, _, hdr := call(t, s, "GET", "/tables/T/records", "", nil)
	require.Equal(t, 200, code)
	tag := hdr.Get("ETag")
	require.Regexp(t, `^W/"[0-9a-f]+-[A-Za-z0-9+/]{27}"$`, tag)

	// A list, a strong form of the weak tag, and "*" all match (Express's
	// weak comparison); another tag does not.
	for _, inm := range []string{tag, `"other", ` + tag, tag[2:], "*"} {
		code, body, _ := call(t, s, "GET", "/tables/T/records", "", map[string]string{"If-None-Match": inm})
		require.Equal(t, 304, code, inm)
		require.Empty(t, body)
	}
	code, _, _ = call(t, s, "GET", "/tables/T/records", "", map[string]string{"If-None-Match": `W/"1-x"`})
	require.Equal(t, 200, code)
	require.Equal(t, 4, s.Responses(304))

	// A row change changes the tag.
	s.UpdateRows("T", map[int64]map[string]any{1: {"n": 6}})
	code, _, hdr = call(t, s, "GET", "/tables/T/records", "", map[string]string{"If-None-Match": tag})
	require.Equal(t, 200, code)
	require.NotEqual(t, tag, hdr.Get("ETag"))
}

// TestColumnMetadata: a type change that leaves /records' body as it was
// still changes _grist_Tables_column.
func TestColumnMetadata(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "n", Type: "Int"})
	s.AddRows("T", map[string]any{"n": 5})
	code, body, meta := call(t, s, "GET", "/tables/_grist_Tables_column/records", "", nil)
	require.Equal(t, 200, code)
	var res struct {
		Records []struct {
			ID     int
			Fields map[string]any
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	require.Len(t, res.Records, 2) // manualSort and n
	require.Equal(t, "manualSort", res.Records[0].Fields["colId"])
	require.Equal(t, "Int", res.Records[1].Fields["type"])

	_, _, rec := call(t, s, "GET", "/tables/T/records", "", nil)
	s.SetColumnType("T", "n", "Numeric")
	code, _, _ = call(t, s, "GET", "/tables/T/records", "", map[string]string{"If-None-Match": rec.Get("ETag")})
	require.Equal(t, 304, code)
	code, _, _ = call(t, s, "GET", "/tables/_grist_Tables_column/records", "", map[string]string{"If-None-Match": meta.Get("ETag")})
	require.Equal(t, 200, code)
}
