package pipeline_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/sources/httpapi"
)

// requireResyncReadsAll runs b once, then checks that resync --full and
// --reembed on the unchanged source read all n records, that --full writes
// every node with no embedding call and --reembed embeds every text again,
// and that plan --full lists every record.
func requireResyncReadsAll(t *testing.T, b *bundle, n int) {
	t.Helper()
	first := b.sync(t, pipeline.Mode{})
	require.Equal(t, n, first.RecordsNew)
	plan, err := b.p.Plan(t.Context(), pipeline.Mode{Full: true})
	require.NoError(t, err)
	require.Len(t, plan.Items, n, "plan --full lists every record")
	full := b.sync(t, pipeline.Mode{Full: true})
	require.Equal(t, n, full.RecordsRead)
	require.Positive(t, full.SinkStatements)
	require.Zero(t, full.ChunksEmbedded)
	re := b.sync(t, pipeline.Mode{Reembed: true})
	require.Equal(t, n, re.RecordsRead)
	require.Equal(t, first.ChunksEmbedded, re.ChunksEmbedded)
}

func TestResyncReadsEverythingFiles(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "spdx-2.3-package-information.md"), 256, 32)
	requireResyncReadsAll(t, b, 2)
}

func TestResyncReadsEverythingCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "faq.csv"), []byte("id,question\n1,What is a heading?\n2,What is a chapter?\n"), 0o644))
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: filepath.Join(dir, "faq.csv"), Table: "faq", Key: "id"}}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	b.p.Model = pipeline.NewModel(tariffModelFAQ())
	requireResyncReadsAll(t, b, 2)
}

// TestResyncReadsEverythingHTTP: an incremental HTTP source asked from its
// cursor would send only what changed since (nothing); a resync lists
// everything.
func TestResyncReadsEverythingHTTP(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	asked := []string{}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		since := r.URL.Query().Get("updated_since")
		mu.Lock()
		asked = append(asked, since)
		mu.Unlock()
		items := []map[string]any{}
		for _, it := range []map[string]any{
			{"id": "1", "question": "What is a heading?", "updated_at": "2024-03-01T09:00:00Z"},
			{"id": "2", "question": "What is a chapter?", "updated_at": "2024-03-01T09:01:00Z"},
		} {
			if since == "" || it["updated_at"].(string) > since {
				items = append(items, it)
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items})
	}))
	t.Cleanup(api.Close)
	src, err := httpapi.New("http", httpapi.Config{URL: api.URL, Records: ".items[]", Key: ".id", Anchor: "faq",
		Incremental: &httpapi.Incremental{Param: "updated_since", Cursor: ".updated_at"}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	b.p.Model = pipeline.NewModel(tariffModelFAQ())
	requireResyncReadsAll(t, b, 2)
	require.Zero(t, b.sync(t, pipeline.Mode{}).RecordsRead, "an incremental run still reads only what changed")
}

// tariffModelFAQ embeds the question of faq records.
func tariffModelFAQ() *config.Model {
	return &config.Model{Anchors: []config.Anchor{{Name: "faq", Attributes: []config.Attribute{{Name: "question", Embeddable: true}}}}}
}

// TestCSVRepeatedKeyKeepsFirst: a key repeated in a CSV file (here on a
// later page) is skipped by the pipeline's comparison with state — the
// source keeps no set of keys — and the first row's values are written;
// the next run is a no-op.
func TestCSVRepeatedKeyKeepsFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "faq.csv"),
		[]byte("id,question\n1,What is a heading?\n2,What is a chapter?\n3,What is a section?\n1,A later row\n4,What is a note?\n"), 0o644))
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: filepath.Join(dir, "faq.csv"), Table: "faq", Key: "id"}}}, nil,
		csvtable.WithPageSize(2))
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	b.p.Model = pipeline.NewModel(tariffModelFAQ())
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 4, c.RecordsNew)
	require.Equal(t, 1, c.RecordsSkipped)
	n, ok := b.graph.Node("faq", "faq:1")
	require.True(t, ok)
	require.Equal(t, "What is a heading?", n["question"])
	c = b.sync(t, pipeline.Mode{})
	require.Zero(t, c.RecordsRead, "the file did not change: not read")
	// The same rows re-exported with CRLF line ends: not listed either.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "faq.csv"),
		[]byte("id,question\r\n1,What is a heading?\r\n2,What is a chapter?\r\n3,What is a section?\r\n1,A later row\r\n4,What is a note?\r\n"), 0o644))
	c = b.sync(t, pipeline.Mode{})
	require.Zero(t, c.RecordsRead, "the same rows re-exported: not read")
	// One row edited: every row read, the repeated key skipped again, the
	// first row's values kept.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "faq.csv"),
		[]byte("id,question\r\n1,What is a heading?\r\n2,What is a chapter?\r\n3,What is a section?\r\n1,A later row\r\n4,What is a remark?\r\n"), 0o644))
	c = b.sync(t, pipeline.Mode{})
	require.Equal(t, 4, c.RecordsRead)
	require.Equal(t, 1, c.RecordsChanged)
	require.Zero(t, c.RecordsNew+c.RecordsDeleted)
	require.Equal(t, 1, c.RecordsSkipped)
	n, ok = b.graph.Node("faq", "faq:1")
	require.True(t, ok)
	require.Equal(t, "What is a heading?", n["question"])
}

// TestCSVReexportedIsNotModified: a CSV file re-exported with the same rows
// (CRLF line ends, quoted cells) is not listed again: the run reads no
// record, writes nothing and stores the file's new cursor, so the next run
// does not parse it either; an edited cell after that is found and written.
func TestCSVReexportedIsNotModified(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "faq.csv")
	require.NoError(t, os.WriteFile(path, []byte("id,question\n1,What is a heading?\n2,What is a chapter?\n"), 0o644))
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: path, Table: "faq", Key: "id"}}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	b.p.Model = pipeline.NewModel(tariffModelFAQ())
	require.Equal(t, 2, b.sync(t, pipeline.Mode{}).RecordsNew)
	before, err := b.p.Store.CursorGet(t.Context(), b.p.Name, "csv")
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(path, []byte("\"id\",\"question\"\r\n\"1\",\"What is a heading?\"\r\n2,What is a chapter?\r\n"), 0o644))
	st := b.sync(t, pipeline.Mode{})
	require.Zero(t, st.RecordsRead)
	require.Zero(t, st.SinkStatements)
	after, err := b.p.Store.CursorGet(t.Context(), b.p.Name, "csv")
	require.NoError(t, err)
	require.NotEqual(t, before, after, "the new file's hash is stored")
	var nm []error
	for _, err := range src.Read(t.Context(), after) {
		nm = append(nm, err)
	}
	require.Len(t, nm, 1)
	require.ErrorIs(t, nm[0], sources.ErrNotModified)
	require.Empty(t, sources.NotModifiedCursor(nm[0]), "read from the stored cursor, the file is untouched")

	require.NoError(t, os.WriteFile(path, []byte("id,question\r\n1,What is a heading?\r\n2,What is a section?\r\n"), 0o644))
	st = b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, st.RecordsRead)
	require.Equal(t, 1, st.RecordsChanged)
}
