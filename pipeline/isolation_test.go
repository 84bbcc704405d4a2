package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
)

// refusingEmbedder answers 400, as a provider refusing an input does,
// for any request holding a text with "POISON".
type refusingEmbedder struct{ embed.Embedder }

func (r refusingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, "POISON") {
			return nil, &embed.StatusError{Code: 400, Body: `{"error":{"message":"invalid input"}}`}
		}
	}
	return r.Embedder.Embed(ctx, texts)
}

// TestEmbeddingRefusalQuarantinesOneRecord: a document whose texts the
// provider refuses is quarantined with the provider's answer; the other
// edited document of the same batch is written; the refused one keeps
// its last good version in graph and state, and is retried next run.
func TestEmbeddingRefusalQuarantinesOneRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("a.md", "# A\n\nAlpha first version.\n")
	write("b.md", "# B\n\nBeta first version.\n")
	b := setup(t, dir, 256, 32)
	b.p.Embedder = refusingEmbedder{b.emb}
	b.sync(t, pipeline.Mode{})
	before := snapshotLabel(b, pipeline.LabelChunk)

	write("a.md", "# A\n\nAlpha second version with POISON.\n")
	write("b.md", "# B\n\nBeta second version.\n")
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, state.StatusPartial, res.Run.Status)
	require.Equal(t, 1, res.Run.Counts.Quarantined)
	require.Equal(t, 1, res.Run.Counts.RecordsChanged, "b.md written")
	qs, err := b.store.QuarantineList(t.Context(), "docs")
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, "a.md", qs[0].Key)
	require.Equal(t, state.StageEmbed, qs[0].Stage)
	require.Contains(t, qs[0].Error, "status 400")
	after := snapshotLabel(b, pipeline.LabelChunk)
	var aTexts, bTexts []string
	for id, props := range after {
		switch props["document"] {
		case "docs:a.md":
			aTexts = append(aTexts, props["text"].(string))
			require.Equal(t, before[id], props, "a.md keeps its last good chunks")
		case "docs:b.md":
			bTexts = append(bTexts, props["text"].(string))
		}
	}
	require.NotEmpty(t, aTexts)
	require.Contains(t, strings.Join(bTexts, " "), "Beta second version")

	// Repaired upstream: retried, written, released.
	write("a.md", "# A\n\nAlpha third version.\n")
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsChanged)
	require.Zero(t, c.Quarantined)
}

// TestFailedSourceDoesNotBlockTheOthers: a pipeline's source whose root is
// gone fails the run, but the source beside it is synced.
func TestFailedSourceDoesNotBlockTheOthers(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt"), 256, 32)
	gone, err := files.New("gone", config.FilesSource{Root: filepath.Join(t.TempDir(), "missing"), Anchor: "Document", MaxFileBytes: 1 << 20},
		chunker.Formats(), nil)
	require.NoError(t, err)
	b.p.Sources = []sources.Source{gone, b.p.Sources[0]}
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorContains(t, err, `source "gone"`)
	require.Equal(t, state.StatusFailed, res.Run.Status)
	require.Contains(t, b.graph.Nodes("Document"), "docs:rfc7239.txt")
}

// TestBadCSVFileBlocksOnlyItsTable: an unterminated quote in one CSV file
// of a source used to fail the whole source; now the other table is
// synced, the broken table's rows stay as they were (none deleted), the
// run is partial, and the table leaves quarantine once its file is fixed.
func TestBadCSVFileBlocksOnlyItsTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("faq.csv", "id,question\n1,What is a heading?\n2,What is a chapter?\n3,What is a note?\n")
	write("guide.csv", "id,title\n1,Fruit\n2,Vegetables\n")
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{
		{Path: filepath.Join(dir, "faq.csv"), Table: "faq", Key: "id"},
		{Path: filepath.Join(dir, "guide.csv"), Table: "guide", Key: "id"}}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	b.sync(t, pipeline.Mode{})
	require.Len(t, b.graph.Nodes("faq"), 3)

	write("faq.csv", "id,question\n1,What is a heading?\n2,\"What is a chapter?\n3,What is a note?\n")
	write("guide.csv", "id,title\n1,Fruit\n2,Vegetables and roots\n")
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, state.StatusPartial, res.Run.Status)
	require.Zero(t, res.Run.Counts.RecordsDeleted, "the broken table deletes nothing")
	require.Len(t, b.graph.Nodes("faq"), 3)
	n, ok := b.graph.Node("guide", "guide:2")
	require.True(t, ok)
	require.Equal(t, "Vegetables and roots", n["title"], "the other table is synced")
	qs, err := b.store.QuarantineList(t.Context(), "docs")
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, "faq:", qs[0].Key)
	require.Equal(t, state.StageList, qs[0].Stage)
	require.Contains(t, qs[0].Error, "faq.csv")

	write("faq.csv", "id,question\n1,What is a heading?\n2,What is a chapter?\n")
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsDeleted, "fixed and complete: row 3 is gone")
	require.Zero(t, c.Quarantined)
}
