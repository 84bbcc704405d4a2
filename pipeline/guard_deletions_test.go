package pipeline_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
	"github.com/kgsync/kgsync/sources/httpapi"
	"github.com/kgsync/kgsync/state"
)

// writeRowsCSV writes a CSV file of n rows id,name whose names carry tag.
func writeRowsCSV(t *testing.T, path string, n int, tag string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriterSize(f, 1<<20)
	_, _ = w.WriteString("id,name\n")
	for i := range n {
		fmt.Fprintf(w, "%d,row %d %s\n", i, i, tag)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
}

// csvBundle is a pipeline over one CSV table of rows without embeddable
// columns.
func csvBundle(t *testing.T, path string) *bundle {
	t.Helper()
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: path, Table: "item", Key: "id"}}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	b.p.BatchSize = config.DefaultPipelineBatchSize
	b.p.Model = pipeline.NewModel(&config.Model{Anchors: []config.Anchor{{Name: "item", Attributes: []config.Attribute{{Name: "name"}}}}})
	return b
}

// TestUpdatingEveryRowIsNotAMassDelete: a CSV of 150,000 rows, every row
// changed. Nothing is deleted, so the guard has nothing to say: the run
// used to hold the changed rows while most of the listing was unread and
// fail past 100,000 held ("rerun with --allow-mass-delete").
func TestUpdatingEveryRowIsNotAMassDelete(t *testing.T) {
	t.Parallel()
	const n = 150_000
	path := filepath.Join(t.TempDir(), "items.csv")
	writeRowsCSV(t, path, n, "v1")
	b := csvBundle(t, path)
	require.Equal(t, n, b.sync(t, pipeline.Mode{}).RecordsNew)
	writeRowsCSV(t, path, n, "v2")
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, n, c.RecordsChanged)
	require.Zero(t, c.RecordsDeleted)
	node, ok := b.graph.Node("item", "item:149999")
	require.True(t, ok)
	require.Equal(t, "row 149999 v2", node["name"])
}

// TestReplacementIsADeletion: ten documents replaced by ten unrelated ones
// lose ten records. New keys offset gone ones only when they bring the
// same content (a rename): the run stops before writing anything.
func TestReplacementIsADeletion(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 10 {
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("old-%d.md", i)), []byte(fmt.Sprintf("# Old %d\n\nThe old text number %d.\n", i, i)), 0o644))
	}
	b := setup(t, root, 256, 32)
	b.sync(t, pipeline.Mode{})
	graphBefore := b.graph.Props()
	for i := range 10 {
		require.NoError(t, os.Remove(filepath.Join(root, fmt.Sprintf("old-%d.md", i))))
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("new-%d.md", i)), []byte(fmt.Sprintf("# New %d\n\nAn unrelated text, %s.\n", i, strings.Repeat("x", i+1))), 0o644))
	}
	plan, err := b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Contains(t, plan.GuardError, "delete 10 of 10 records", "the plan judges as the run")
	_, err = b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.ErrorContains(t, err, "delete 10 of 10 records")
	require.Equal(t, graphBefore, b.graph.Props(), "nothing written or deleted")

	c := b.sync(t, pipeline.Mode{AllowMassDelete: true})
	require.Equal(t, 10, c.RecordsDeleted)
	require.Equal(t, 10, c.RecordsNew)
}

// TestRenameAndReplacement: of four documents two are renamed (same
// content, new names) and two replaced: the net loss is two of four, over
// the limit.
func TestRenameAndReplacement(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 4 {
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("d%d.md", i)), []byte(fmt.Sprintf("# D %d\n\nText %d.\n", i, i)), 0o644))
	}
	b := setup(t, root, 256, 32)
	b.sync(t, pipeline.Mode{})
	for i := range 2 {
		require.NoError(t, os.Rename(filepath.Join(root, fmt.Sprintf("d%d.md", i)), filepath.Join(root, fmt.Sprintf("moved-%d.md", i))))
	}
	for i := 2; i < 4; i++ {
		require.NoError(t, os.Remove(filepath.Join(root, fmt.Sprintf("d%d.md", i))))
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("other-%d.md", i)), []byte(fmt.Sprintf("# Other\n\nSomething else %d.\n", i)), 0o644))
	}
	plan, err := b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Contains(t, plan.GuardError, "delete 2 of 4 records", "the plan judges as the run")
	_, err = b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.ErrorContains(t, err, "delete 2 of 4 records")
}

// TestEmptyPageWithoutTotalDeletesNothing: an API paged seven at a time
// holds ten items; a broken upstream answers the second page empty (no
// total, no has_more). Three of ten gone is exactly the 30 % limit, which
// passed, deleting them. An empty page right after a full one does not
// confirm the end: nothing is deleted without confirmation. A short last
// page does, and deletes.
func TestEmptyPageWithoutTotalDeletesNothing(t *testing.T) {
	t.Parallel()
	var n atomic.Int32 // items the API has
	var broken atomic.Bool
	n.Store(10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		items := []map[string]any{}
		for i := (page - 1) * 7; i < min(page*7, int(n.Load())); i++ {
			items = append(items, map[string]any{"id": i + 1, "title": fmt.Sprintf("Ticket %d", i+1)})
		}
		if broken.Load() && page == 2 {
			items = items[:0]
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items})
	}))
	t.Cleanup(srv.Close)
	src, err := httpapi.New("api", httpapi.Config{
		URL: srv.URL, Records: ".items[]", Key: ".id", Anchor: "ticket",
		Attributes: map[string]string{"title": ".title"},
		Pagination: httpapi.Pagination{Style: httpapi.StylePage, Param: "page"},
	}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	require.Equal(t, 10, b.sync(t, pipeline.Mode{}).RecordsNew)

	broken.Store(true)
	plan, err := b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Contains(t, plan.GuardError, "empty page with no stated total", "the plan judges as the run")
	_, err = b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.ErrorContains(t, err, "empty page with no stated total")
	require.Equal(t, 10, b.graph.Count("ticket"))

	broken.Store(false)
	n.Store(9) // a short last page ends the listing: one deletion
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsDeleted)
}

// TestPlanGuardsReportedDeletions: five Grist rows, each with an attached
// document; four rows are deleted upstream, which an incremental
// (/compare) read reports as deletions. The run stops on the mass-delete
// guard; the plan gives the same verdict, and lists what the run deletes
// when allowed: the rows, their attachments and the attachments' chunks.
func TestPlanGuardsReportedDeletions(t *testing.T) {
	t.Parallel()
	srv := gristtest.New(t)
	srv.AddTable("Regulations", gristtest.Column{ID: "title"}, gristtest.Column{ID: "files", Type: "Attachments"})
	var ids []int64
	for i := range 5 {
		a := srv.AddAttachment(fmt.Sprintf("rule-%d.md", i), []byte(fmt.Sprintf("# Rule %d\n\nThe text of rule number %d.\n\n## Scope\n\nWhere rule %d applies.\n", i, i, i)))
		ids = append(ids, srv.AddRows("Regulations", map[string]any{"title": fmt.Sprintf("Rule %d", i), "files": []any{"L", a}})...)
	}
	src, err := grist.New("grist", grist.Config{Server: srv.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
		AttachmentFormats: chunker.Formats(), RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	require.Equal(t, 10, b.sync(t, pipeline.Mode{}).RecordsNew, "five rows and their five documents")
	chunks := b.graph.Count(pipeline.LabelChunk)
	require.Positive(t, chunks)

	srv.DeleteRows("Regulations", ids[:4]...)
	plan, err := b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Contains(t, plan.GuardError, "delete 4 of 10 records")
	_, err = b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.ErrorContains(t, err, plan.GuardError, "the plan judges as the run")
	require.Equal(t, 5, b.graph.Count("Document"), "nothing deleted")

	allowed := pipeline.Mode{AllowMassDelete: true}
	planAllowed, err := b.p.Plan(t.Context(), allowed)
	require.NoError(t, err)
	require.Empty(t, planAllowed.GuardError)
	for _, pl := range []*pipeline.Plan{plan, planAllowed} {
		require.Equal(t, 8, pl.Count(diff.ClassDeleted), "four rows and their documents")
		require.Equal(t, chunks*4/5, pl.ChunksToDelete, "the documents' chunks")
	}
	c := b.sync(t, allowed)
	require.Equal(t, 8, c.RecordsDeleted)
	require.Equal(t, plan.ChunksToDelete, c.ChunksDeleted)
	require.Equal(t, 1, b.graph.Count("Document"))
}
