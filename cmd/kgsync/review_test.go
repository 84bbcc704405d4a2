package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// reviewConfig writes a config with a files pipeline "docs" over a folder
// holding one document, reviewed in srv's document.
func reviewConfig(t *testing.T, srv *gristtest.Server) (cfg, docs string) {
	t.Helper()
	dir := t.TempDir()
	docs = filepath.Join(dir, "docs")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "rules.md"),
		[]byte("# Rules\n\n## Storage\n\nKeep the records for five years.\n\nDestroy them afterwards.\n"), 0o644))
	yaml := `state: {driver: sqlite, path: state.db}
daemon: {webhook_secret: s3cret}
sink: {cypherl: {dir: out}}
embedder: {provider: hashing, dimensions: 8}
pipelines:
  - name: docs
    sources:
      - name: docs
        files: {root: docs}
    review:
      grist:
        server: ` + srv.URL + `
        doc_id: ` + gristtest.DocID + `
        api_key: ` + gristtest.APIKey + `
`
	cfg = filepath.Join(dir, "kgsync.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(yaml), 0o600))
	return cfg, docs
}

// TestGristReviewInstall: install creates both tables with every column,
// and running it again changes nothing; a sync publishes, a correction
// shows in status.
func TestGristReviewInstall(t *testing.T) {
	t.Parallel()
	srv := gristtest.New(t)
	cfg, _ := reviewConfig(t, srv)
	code, out, errOut := kgsync(t, "grist", "review", "install", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Documents: created table\nElements: created table\n", out)
	var ids []string
	for _, c := range srv.Columns("Elements") {
		ids = append(ids, c.ID)
	}
	require.Subset(t, ids, []string{"element", "document", "parsed_text", "corrected_text", "exclude", "mandatory_with", "note",
		"needs_review", "review_reason", "corrected_by", "corrected_at"})
	for _, c := range srv.Columns("Elements") {
		if c.ID == "corrected_by" {
			require.False(t, c.IsFormula)
			require.Equal(t, 0, c.RecalcWhen)
			require.Len(t, c.RecalcDeps, 4, "recomputed when an expert column changes")
		}
	}
	srv.ResetCounts()
	code, out, errOut = kgsync(t, "grist", "review", "install", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Documents: present\nElements: present\n", out)
	require.Zero(t, srv.Requests("POST", ""), "nothing written the second time")

	// The experts' edits trigger the daemon: one webhook on Elements,
	// updates of the experts' columns only.
	code, _, errOut = kgsync(t, "grist", "webhooks", "install", "docs", "--public-url", "https://kg.example.com", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	hooks := srv.Webhooks()
	require.Len(t, hooks, 1)
	require.Equal(t, "https://kg.example.com/hooks/grist/docs/Elements", hooks[0].Fields.URL)
	require.Equal(t, []string{"update"}, hooks[0].Fields.EventTypes)
	require.ElementsMatch(t, []string{"corrected_text", "exclude", "mandatory_with", "note", "needs_review"}, hooks[0].Fields.WatchedColIDs)

	code, _, errOut = kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 4, srv.RowCount("Elements"), "2 sections and 2 paragraphs")
	row := elementRow(t, srv, "Keep the records for five years.")
	srv.UpdateRowsAs(gristtest.User{Email: "ann@example.com"}, "Elements", map[int64]map[string]any{row: {"corrected_text": "Keep the records for ten years."}})
	code, _, errOut = kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	code, out, errOut = kgsync(t, "status", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "docs review (Grist "+gristtest.DocID+", tables Documents/Elements): 1 documents, 4 elements; 1 corrected, 0 excluded, 0 with mandatory links; 0 need review")
	code, out, _ = kgsync(t, "search", "-p", "docs", "records for ten years", "--config", cfg)
	require.Equal(t, 0, code)
	require.True(t, strings.Contains(out, "ten years"), out)
}

// TestGristReviewInstallRefusesAConflictingColumn: a column kgsync needs
// that exists with another type is named, not converted.
func TestGristReviewInstallRefusesAConflictingColumn(t *testing.T) {
	t.Parallel()
	srv := gristtest.New(t)
	srv.AddTable("Elements", gristtest.Column{ID: "exclude", Type: "Text"})
	cfg, _ := reviewConfig(t, srv)
	code, _, errOut := kgsync(t, "grist", "review", "install", "docs", "--config", cfg)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `review table "Elements" column "exclude": type Text, kgsync needs Bool`)
	code, _, errOut = kgsync(t, "grist", "review", "install", "nope", "--config", cfg)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `no pipeline "nope"`)
}

// TestReviewExampleConfig: examples/grist/review.yaml loads and is valid
// once its variables are set.
func TestReviewExampleConfig(t *testing.T) {
	t.Setenv("GRIST_API_KEY", "k")
	t.Setenv("GRIST_REVIEW_DOC_ID", "8Bp2kWMmZ4Zn")
	c, err := config.Load("../../examples/grist/review.yaml")
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Equal(t, "Elements", c.Pipelines[0].Review.Grist.ElementsTable)
}

// elementRow returns the id of the review's Elements row whose parsed_text
// is text, failing the test when there is none.
func elementRow(t *testing.T, srv *gristtest.Server, text string) int64 {
	t.Helper()
	var row int64
	for id, r := range srv.Table("Elements") {
		if r["parsed_text"] == text {
			row = id
		}
	}
	require.NotZero(t, row, "no Elements row with parsed_text %q", text)
	return row
}
