package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

func tablesDir(t testing.TB) string {
	return filepath.Join(filepath.Dir(corpusDir(t)), "tables")
}

// TestGristEndToEnd loads the real corpus tables into the Grist test server
// and syncs them through the data model: counts match the data exactly, a
// second run reads nothing, ten edited rows write ten nodes and embed only
// their changed texts, and deleted rows take their nodes and edges along.
func TestGristEndToEnd(t *testing.T) {
	t.Parallel()
	dir := tablesDir(t)
	srv := gristtest.New(t)
	srv.LoadCSV("HSCodes", filepath.Join(dir, "harmonized-system.csv"), map[string]string{"parent": "Ref:HSCodes/hscode", "level": "Int"})
	srv.LoadCSV("Guides", filepath.Join(dir, "uk-tariff-guides.csv"), map[string]string{"id2": "Int", "active": "Bool"})
	srv.LoadCSV("HeadingGuides", filepath.Join(dir, "uk-tariff-headings_guides.csv"), map[string]string{
		"heading_id": "Ref:HSCodes/hscode", "id2": "Ref:Guides/id2"})
	srv.LoadCSV("FAQ", filepath.Join(dir, "faq_covidbert.csv"), nil)

	src, err := grist.New("grist", grist.Config{Server: srv.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
		KeyColumns: map[string]string{"HSCodes": "hscode", "Guides": "id2"}, PageSize: 500,
		RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}, nil)
	require.NoError(t, err)
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	g := graphtest.New()
	emb := &countingEmbedder{Embedder: hashing.New("hashing-v1", 32)}
	p := &pipeline.Pipeline{
		Name: "tariff", Sources: []sources.Source{src}, Embedder: emb, Sink: g, Store: store,
		Chunking: chunker.Options{MaxTokens: 256, OverlapTokens: 32, Tokenizer: tok}, BatchSize: 500, MaxDeleteRatio: 0.3, Fingerprint: 1,
		Model: pipeline.NewModel(&config.Model{
			Anchors: []config.Anchor{
				{Name: "cn_code", Table: "HSCodes", Attributes: []config.Attribute{{Name: "description", Embeddable: true}},
					Links: []config.Link{{Name: "PARENT", Column: "parent", To: "cn_code"}}},
				{Name: "guide", Table: "Guides", Attributes: []config.Attribute{{Name: "title", Embeddable: true}}},
				{Name: "faq", Table: "FAQ", Attributes: []config.Attribute{{Name: "question", Embeddable: true}}},
			},
			LinkTables: []config.LinkTable{{Name: "REQUIRES_GUIDE", Table: "HeadingGuides",
				From: config.LinkEnd{Anchor: "cn_code", Column: "heading_id"}, To: config.LinkEnd{Anchor: "guide", Column: "id2"}}},
		}),
	}
	run := func() state.Counts {
		t.Helper()
		res, err := p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
		require.NoError(t, err)
		require.Empty(t, g.Dangling())
		return res.Run.Counts
	}

	c := run()
	// MANIFEST.md: 6940 HS rows (one root), 19 guides, 340 heading→guide
	// rows over 325 distinct headings, 213 FAQ rows.
	require.Equal(t, 6940+19+340+213, c.RecordsNew)
	require.Equal(t, 6940, g.Count("cn_code"))
	require.Equal(t, 19, g.Count("guide"))
	require.Equal(t, 213, g.Count("faq"))
	require.Equal(t, 6940, g.EdgeCount("PARENT"), "every row has a parent; the root is its own")
	require.Equal(t, 340, g.EdgeCount("REQUIRES_GUIDE"), "a many-to-many link table: one edge per row")
	n, _ := g.Node("cn_code", "HSCodes:0101")
	require.Equal(t, "Horses, asses, mules and hinnies; live", n["description"])
	require.Len(t, n["description_embedding"], 32)

	// Nothing changed: Grist's /states says so and nothing is read or written.
	emb.reset()
	writes := g.Writes
	c = run()
	require.Zero(t, c.RecordsRead)
	require.Zero(t, c.SinkStatements)
	require.Equal(t, writes, g.Writes)

	// Ten rows edited: ten nodes written, ten texts embedded.
	updates := map[int64]map[string]any{}
	for id := int64(100); id < 110; id++ {
		updates[id] = map[string]any{"description": "edited description number " + string(rune('A'+id-100))}
	}
	srv.UpdateRows("HSCodes", updates)
	emb.reset()
	c = run()
	require.Equal(t, 10, c.RecordsChanged)
	require.Zero(t, c.RecordsNew+c.RecordsDeleted)
	_, texts := emb.reset()
	require.Len(t, texts, 10)
	edited := 0
	for _, id := range g.Nodes("cn_code") {
		n, _ := g.Node("cn_code", id)
		if d, _ := n["description"].(string); len(d) > 6 && d[:6] == "edited" {
			edited++
		}
	}
	require.Equal(t, 10, edited)

	// The last heading and its only subheading deleted (rows 6938 "9999" and
	// 6939 "999999", the file's last lines before the root): their nodes and
	// their two PARENT edges go.
	before := g.EdgeCount("PARENT")
	srv.DeleteRows("HSCodes", 6938, 6939)
	c = run()
	require.Equal(t, 2, c.RecordsDeleted)
	require.Equal(t, 6938, g.Count("cn_code"))
	require.Equal(t, before-2, g.EdgeCount("PARENT"))
	for _, id := range []string{"HSCodes:9999", "HSCodes:999999"} {
		_, ok := g.Node("cn_code", id)
		require.False(t, ok, id)
	}
}

// TestGristAttachmentsBecomeDocuments: an attachment in a format the chunker
// reads is chunked as a document linked to its row (ATTACHED_TO); a changed
// file is re-chunked, a file removed from the cell and a deleted row take
// their documents along — also through incremental (/compare) reads.
func TestGristAttachmentsBecomeDocuments(t *testing.T) {
	t.Parallel()
	srv := gristtest.New(t)
	srv.AddTable("Regulations", gristtest.Column{ID: "title"}, gristtest.Column{ID: "files", Type: "Attachments"})
	spec, err := os.ReadFile(filepath.Join(corpusDir(t), "openchain-security-specification-1.1.md"))
	require.NoError(t, err)
	a1 := srv.AddAttachment("openchain.md", spec)
	a2 := srv.AddAttachment("photo.jpg", []byte{0xff, 0xd8, 0xff})
	ids := srv.AddRows("Regulations",
		map[string]any{"title": "OpenChain security", "files": []any{"L", a1, a2}},
		map[string]any{"title": "No files"})

	cfg := grist.Config{Server: srv.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
		AttachmentFormats: chunker.Formats(), RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}
	src, err := grist.New("grist", cfg, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 3, c.RecordsNew, "two rows and one readable attachment (the jpg has no parser)")
	docID := "grist:Regulations:" + fmt.Sprint(ids[0]) + grist.AttachmentMarker + fmt.Sprint(a1)
	doc, ok := b.graph.Node("Document", docID)
	require.True(t, ok, "attachment document %s", docID)
	require.Equal(t, "openchain.md", doc["name"])
	attached := 0
	for _, e := range b.graph.Edges() {
		if e.Type == "ATTACHED_TO" {
			attached++
			require.Equal(t, "Regulations:"+fmt.Sprint(ids[0]), e.To.ID)
		}
	}
	require.Equal(t, 1, attached)
	require.Positive(t, b.graph.Count(pipeline.LabelChunk))
	require.Equal(t, 14, b.graph.Count(pipeline.LabelTerm), "the attached specification's terms")

	// The file is removed from the cell: an incremental read lists the row
	// without it, and its document goes.
	srv.UpdateRows("Regulations", map[int64]map[string]any{ids[0]: {"files": []any{"L", a2}}})
	c = b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsDeleted)
	_, ok = b.graph.Node("Document", docID)
	require.False(t, ok)
	require.Zero(t, b.graph.Count(pipeline.LabelChunk))

	// Attached again, then the row deleted: the document goes with its row.
	a3 := srv.AddAttachment("openchain-v2.md", spec)
	srv.UpdateRows("Regulations", map[int64]map[string]any{ids[0]: {"files": []any{"L", a3}}})
	c = b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsNew)
	require.Zero(t, c.ChunksEmbedded, "same text under another attachment id: served from the cache")
	srv.DeleteRows("Regulations", ids[0])
	c = b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, c.RecordsDeleted, "the row and its attachment")
	require.Zero(t, b.graph.Count("Document"))
	require.Zero(t, b.graph.Count(pipeline.LabelChunk))
}
