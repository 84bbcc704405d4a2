package pipeline_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/httpapi"
	"github.com/kgsync/kgsync/state"
)

// Fields of a source named like the properties kgsync writes itself (id,
// the key every statement matches a node by; names starting with "_") are
// kept under "source_" + their name, for documents as for rows, after the
// model's renames, and on link-table edges (matched by _key).

// TestHTTPDocumentWithAnIDField: an HTTP source of documents copies every
// top-level field of an item into the document node; its id must not
// replace the node's.
func TestHTTPDocumentWithAnIDField(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"items": []map[string]any{
			{"id": 8, "title": "Printer", "_hash": "x", "body": "# Printer\n\nThe printer is on fire. Call 555."}}})
	}))
	t.Cleanup(api.Close)
	src, err := httpapi.New("api", httpapi.Config{URL: api.URL, Records: ".items[]", Key: ".id", Anchor: "Document",
		Document: &httpapi.DocumentConfig{Format: "md", Content: ".body"}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	require.Equal(t, 1, b.sync(t, pipeline.Mode{}).RecordsNew)
	ids := b.graph.Nodes("Document")
	require.Len(t, ids, 1)
	n, _ := b.graph.Node("Document", ids[0])
	require.Equal(t, ids[0], n["id"])
	require.EqualValues(t, 8, n["source_id"])
	require.Equal(t, "x", n["source__hash"])
	require.NotEqual(t, "x", n["_hash"])
}

// TestReservedFieldAfterModelRenames: the name a reserved field moves to
// is chosen among the node's properties after the model's renames (an
// attribute source_id read from another column keeps its name), the same
// whatever the order of a map.
func TestReservedFieldAfterModelRenames(t *testing.T) {
	t.Parallel()
	for i := range 10 {
		b := setupModel(t)
		m := tariffModel()
		m.Anchors[1].Attributes = append(m.Anchors[1].Attributes, config.Attribute{Name: "source_id", Column: "legacy"})
		b.p.Model = pipeline.NewModel(m)
		b.src.recs = map[string]sources.Record{}
		b.src.put("guides", "1", map[string]any{"id": "g-1", "legacy": "L-1", "title": "guide one"})
		b.sync(t)
		n, _ := b.graph.Node("guide", "guides:1")
		require.Equal(t, "L-1", n["source_id"], "run %d: the model's attribute; props %v", i, n)
		require.Equal(t, "g-1", n["source_source_id"], "run %d", i)
	}
}

// TestLinkTableColumnNamedKey: a link table's edge is matched by its _key
// (MERGE … {_key: row.key} … SET e += row.props); a column _key must not
// replace it, or the next sync makes a second edge and a delete misses it.
func TestLinkTableColumnNamedKey(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.src.put("headings_guides", "99", map[string]any{"heading_id": "0101", "id": "1", "_key": "mine"})
	b.sync(t)
	var found bool
	for _, e := range b.graph.Edges() {
		if e.Key != "headings_guides:99" {
			continue
		}
		found = true
		props := b.graph.EdgeProps(e)
		require.NotContains(t, props, "_key", "the edge's key is its pattern, not a property the row sets: %v", props)
		require.Equal(t, "mine", props["source__key"])
	}
	require.True(t, found)
	b.sync(t)
	require.Equal(t, 1, countEdges(b.graph, "headings_guides:99"), "one edge after a second sync")
}

func countEdges(g *graphtest.Graph, key string) int {
	n := 0
	for _, e := range g.Edges() {
		if e.Key == key {
			n++
		}
	}
	return n
}

// TestRebuildOfAStateStoredBeforeSourceID: resync --rebuild-graph (and
// verify --repair) writes nodes from state; a node stored before
// MappingVersion 3, its field id over the node's id, is written with
// source_id.
func TestRebuildOfAStateStoredBeforeSourceID(t *testing.T) {
	t.Parallel()
	b := storedBeforeSourceID(t)
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{RebuildGraph: true})
	require.NoError(t, err, "resync --rebuild-graph of a state stored by MappingVersion 2")
	n, _ := b.graph.Node("guide", "guides:1")
	require.Equal(t, "guides:1", n["id"])
	require.Equal(t, "g-1", n["source_id"])
}
