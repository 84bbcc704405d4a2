package pipeline_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/sources/httpapi"
	"github.com/kgsync/kgsync/state"
)

// TestBadFieldNameQuarantinesOnlyItsRecord: an API item with a field whose
// name cannot be a property (empty, a control character, over 256 bytes)
// used to fail its whole source, writing nothing. The item is quarantined
// with its reason; the others sync.
func TestBadFieldNameQuarantinesOnlyItsRecord(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"empty":   `{"items":[{"id":1,"name":"a"},{"id":2,"":"x"}]}`,
		"control": `{"items":[{"id":1,"name":"a"},{"id":2,"na\u0001me":"x"}]}`,
		"long":    `{"items":[{"id":1,"name":"a"},{"id":2,"` + strings.Repeat("k", 300) + `":"x"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			}))
			t.Cleanup(srv.Close)
			src, err := httpapi.New("api", httpapi.Config{URL: srv.URL, Records: ".items[]", Key: ".id", Anchor: "item"}, nil)
			require.NoError(t, err)
			b := setup(t, t.TempDir(), 256, 32)
			b.p.Sources = []sources.Source{src}
			res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
			require.NoError(t, err)
			require.Equal(t, state.StatusPartial, res.Run.Status)
			require.Equal(t, 1, b.graph.Count("item"))
			_, ok := b.graph.Node("item", "item:1")
			require.True(t, ok)
			q, err := b.store.QuarantineList(t.Context(), "docs")
			require.NoError(t, err)
			require.Len(t, q, 1)
			require.Equal(t, "item:2", q[0].Key)
			require.Contains(t, q[0].Error, "field")
		})
	}
}

// TestBadHeaderQuarantinesOnlyItsColumn: a CSV header with a newline in a
// column name used to fail the whole source. The column is left out and
// named in a quarantine entry; the rows sync with their other columns.
func TestBadHeaderQuarantinesOnlyItsColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "items.csv")
	require.NoError(t, os.WriteFile(path, []byte("id,name,\"bad\nheader\"\n1,a,x\n2,b,y\n"), 0o644))
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: path, Table: "item", Key: "id"}}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	b.p.Model = pipeline.NewModel(&config.Model{Anchors: []config.Anchor{{Name: "item"}}})
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, state.StatusPartial, res.Run.Status)
	require.Equal(t, 2, b.graph.Count("item"))
	n, ok := b.graph.Node("item", "item:1")
	require.True(t, ok)
	require.Equal(t, "a", n["name"])
	q, err := b.store.QuarantineList(t.Context(), "docs")
	require.NoError(t, err)
	require.Len(t, q, 1)
	require.Contains(t, q[0].Error, "column")
}

// TestNULInACSVCellIsQuarantined: a NUL byte in a CSV cell reached the
// graph; the row is quarantined naming the field, the others sync.
func TestNULInACSVCellIsQuarantined(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "items.csv")
	require.NoError(t, os.WriteFile(path, []byte("id,name\n1,a\n2,b\x00c\n3,d\n"), 0o644))
	b := csvBundle(t, path)
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, state.StatusPartial, res.Run.Status)
	require.Equal(t, 2, b.graph.Count("item"))
	for _, id := range b.graph.Nodes("item") {
		n, _ := b.graph.Node("item", id)
		require.NotContains(t, n["name"], "\x00")
	}
	q, err := b.store.QuarantineList(t.Context(), "docs")
	require.NoError(t, err)
	require.Len(t, q, 1)
	require.Equal(t, "item:2", q[0].Key)
	require.Contains(t, q[0].Error, "NUL byte")
}

// TestRemovedQuarantinedFileLeavesQuarantine: a file quarantined (here
// binary) and then removed from its folder stayed in quarantine, every
// later run partial (exit 5). Gone from a complete listing, it leaves.
func TestRemovedQuarantinedFileLeavesQuarantine(t *testing.T) {
	t.Parallel()
	root := copyCorpus(t, "rfc7239.txt")
	bad := filepath.Join(root, "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("abc\x00def"), 0o644))
	b := setup(t, root, 256, 32)
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, state.StatusPartial, res.Run.Status)
	require.NoError(t, os.Remove(bad))
	b.sync(t, pipeline.Mode{})
	q, err := b.store.QuarantineList(t.Context(), "docs")
	require.NoError(t, err)
	require.Empty(t, q)
}
