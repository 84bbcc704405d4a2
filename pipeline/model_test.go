package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
	"github.com/kgsync/kgsync/state/statetest"
)

// tableSource is an in-memory tabular source: records by key, listed in key
// order, in pages of 3.
type tableSource struct {
	name string
	recs map[string]sources.Record
	fail bool
	// cursors makes each page carry "after:<last key>" as its cursor; a
	// read from a cursor lists only later keys, as a partial listing.
	cursors bool
}

func (s *tableSource) Name() string { return s.name }

func (s *tableSource) Read(ctx context.Context, cursor string) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		keys := make([]string, 0, len(s.recs))
		for k := range s.recs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		after, partial := strings.CutPrefix(cursor, "after:")
		if s.cursors && partial {
			keys = slices.DeleteFunc(keys, func(k string) bool { return k <= after })
		}
		for i := 0; i < len(keys); i += 3 {
			if s.fail && i > 0 {
				yield(nil, fmt.Errorf("listing failed at page %d", i/3+1))
				return
			}
			pg := &sources.Page{Partial: s.cursors && partial}
			for _, k := range keys[i:min(i+3, len(keys))] {
				pg.Records = append(pg.Records, s.recs[k])
				if s.cursors {
					pg.Cursor = "after:" + k
				}
			}
			if !yield(pg, nil) {
				return
			}
		}
	}
}

func (s *tableSource) put(table, key string, attrs map[string]any, links ...sources.Link) {
	s.recs[table+":"+key] = sources.Record{Key: table + ":" + key, Anchor: table, Attributes: attrs, Links: links}
}

// tariff is a small product-code tree, guides, and a many-to-many link
// table, shaped like the corpus's HS and UK tariff tables.
func tariff() *tableSource {
	s := &tableSource{name: "tables", recs: map[string]sources.Record{}}
	codes := []struct{ code, parent, desc string }{
		{"01", "", "Animals; live"},
		{"0101", "01", "Horses, asses, mules and hinnies; live"},
		{"010121", "0101", "Horses; live, pure-bred breeding animals"},
		{"010129", "0101", "Horses; live, other than pure-bred breeding animals"},
		{"02", "", "Meat and edible meat offal"},
		{"0201", "02", "Meat of bovine animals; fresh or chilled"},
	}
	for _, c := range codes {
		var links []sources.Link
		if c.parent != "" {
			links = append(links, sources.Link{Type: "parent", ToAnchor: "hs", ToKey: "hs:" + c.parent})
		}
		s.put("hs", c.code, map[string]any{"hscode": c.code, "description": c.desc}, links...)
	}
	s.put("guides", "1", map[string]any{"title": "Classifying live animals", "url": "https://www.gov.uk/guidance/live-animals"})
	s.put("guides", "2", map[string]any{"title": "Classifying meat", "url": "https://www.gov.uk/guidance/meat"})
	for i, hg := range [][2]string{{"0101", "1"}, {"0101", "2"}, {"0201", "2"}} {
		s.put("headings_guides", fmt.Sprint(i+1), map[string]any{"heading_id": hg[0], "id": hg[1], "note": "row " + fmt.Sprint(i+1)})
	}
	return s
}

func tariffModel() *config.Model {
	return &config.Model{
		Anchors: []config.Anchor{
			{Name: "cn_code", Table: "hs", Description: "A Harmonized System code",
				Attributes: []config.Attribute{{Name: "description", Embeddable: true}, {Name: "code", Column: "hscode"}},
				Links:      []config.Link{{Name: "PARENT", Column: "parent", To: "cn_code"}}},
			{Name: "guide", Table: "guides", Attributes: []config.Attribute{{Name: "title", Embeddable: true}}},
		},
		LinkTables: []config.LinkTable{{Name: "REQUIRES_GUIDE", Table: "headings_guides",
			From: config.LinkEnd{Anchor: "cn_code", Column: "heading_id"}, To: config.LinkEnd{Anchor: "guide", Column: "id"}}},
	}
}

type modelBundle struct {
	src   *tableSource
	graph *graphtest.Graph
	emb   *countingEmbedder
	store state.Store
	p     *pipeline.Pipeline
}

func setupModel(t *testing.T) *modelBundle {
	t.Helper()
	store := statetest.SQLite(t)
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	b := &modelBundle{src: tariff(), graph: graphtest.New(), emb: &countingEmbedder{Embedder: hashing.New("hashing-v1", 16)}, store: store}
	b.p = &pipeline.Pipeline{
		Name: "tariff", Sources: []sources.Source{b.src}, Embedder: b.emb, Sink: b.graph, Store: store,
		Chunking: chunker.Options{MaxTokens: 64, OverlapTokens: 8, Tokenizer: tok},
		Model:    pipeline.NewModel(tariffModel()), BatchSize: 4, MaxDeleteRatio: 1, Fingerprint: 7,
	}
	return b
}

func (b *modelBundle) sync(t *testing.T) state.Counts {
	t.Helper()
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Empty(t, b.graph.Dangling())
	return res.Run.Counts
}

func TestModelMapsTablesToAnchorsLinksAndEdges(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	c := b.sync(t)
	require.Equal(t, 11, c.RecordsNew)
	require.Equal(t, 6, b.graph.Count("cn_code"), "no placeholder left: every Ref target is a row")
	require.Equal(t, 6, b.graph.Count("cn_code"))
	require.Equal(t, 2, b.graph.Count("guide"))
	require.Zero(t, b.graph.Count("hs"), "tables are renamed to their anchors")
	require.Zero(t, b.graph.Count("headings_guides"), "link-table rows are edges, not nodes")
	require.Equal(t, 4, b.graph.EdgeCount("PARENT"), "every code but the two chapters has a parent")
	require.Equal(t, 3, b.graph.EdgeCount("REQUIRES_GUIDE"), "one edge per link-table row")

	for _, id := range b.graph.Nodes("cn_code") {
		n, _ := b.graph.Node("cn_code", id)
		require.NotContains(t, n, pipeline.PropPlaceholder, "%s was written by its own record", id)
	}
	n, ok := b.graph.Node("cn_code", "hs:0101")
	require.True(t, ok)
	require.Equal(t, "0101", n["code"], "column hscode renamed to attribute code")
	require.Len(t, n["description_embedding"], 16, "a short embeddable text becomes a vector property")
	require.NotContains(t, n, "hscode")
	g, _ := b.graph.Node("guide", "guides:2")
	require.Len(t, g["title_embedding"], 16)

	// Edge properties are the link table's other columns.
	for _, e := range b.graph.Edges() {
		if e.Type == "REQUIRES_GUIDE" && e.From.ID == "hs:0201" {
			require.Equal(t, "guides:2", e.To.ID)
			require.Equal(t, "headings_guides:3", e.Key)
		}
	}
	// The vector indexes of the embeddable attributes are ensured.
	var names []string
	for _, vi := range b.graph.Schema().VectorIndexes {
		names = append(names, vi.Name)
	}
	require.ElementsMatch(t, []string{"chunk_embedding", "term_embedding", "cn_code_description_embedding", "guide_title_embedding"}, names)

	// A Ref to a row that does not exist: the edge's end is a placeholder.
	b.src.put("hs", "0301", map[string]any{"hscode": "0301", "description": "Fish; live"},
		sources.Link{Type: "parent", ToAnchor: "hs", ToKey: "hs:03"})
	b.sync(t)
	ph, ok := b.graph.Node("cn_code", "hs:03")
	require.True(t, ok)
	require.Equal(t, true, ph[pipeline.PropPlaceholder])
	b.src.put("hs", "03", map[string]any{"hscode": "03", "description": "Fish and crustaceans"})
	b.sync(t)
	ph, _ = b.graph.Node("cn_code", "hs:03")
	require.NotContains(t, ph, pipeline.PropPlaceholder, "the row's own record clears the mark")
	require.Equal(t, "Fish and crustaceans", ph["description"])

	// A second run writes nothing and embeds nothing.
	b.emb.reset()
	writes := b.graph.Writes
	c = b.sync(t)
	require.Zero(t, c.SinkStatements)
	require.Equal(t, writes, b.graph.Writes)
	calls, _ := b.emb.reset()
	require.Zero(t, calls)
}

func TestModelChangedRowsDeletedRowsAndRefs(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.sync(t)
	b.emb.reset()

	// Change one description and one guide's url (not embeddable).
	r := b.src.recs["hs:010121"]
	r.Attributes["description"] = "Horses; live, pure-bred breeding animals (edited)"
	r = b.src.recs["guides:1"]
	r.Attributes["url"] = "https://www.gov.uk/guidance/classifying-live-animals"
	c := b.sync(t)
	require.Equal(t, 2, c.RecordsChanged)
	_, texts := b.emb.reset()
	require.Equal(t, []string{"Horses; live, pure-bred breeding animals (edited)"}, texts,
		"only the changed embeddable text is embedded; the guide's title vector comes from the cache")

	// Re-point a link-table row: its old edge goes, the new one comes.
	r = b.src.recs["headings_guides:3"]
	r.Attributes["id"] = "1"
	b.sync(t)
	var targets []string
	for _, e := range b.graph.Edges() {
		if e.Type == "REQUIRES_GUIDE" && e.From.ID == "hs:0201" {
			targets = append(targets, e.To.ID)
		}
	}
	require.Equal(t, []string{"guides:1"}, targets)
	require.Equal(t, 3, b.graph.EdgeCount("REQUIRES_GUIDE"))

	// A code moves to another parent: the PARENT edge follows.
	r = b.src.recs["hs:0201"]
	r.Links = []sources.Link{{Type: "parent", ToAnchor: "hs", ToKey: "hs:01"}}
	b.src.recs["hs:0201"] = r
	b.sync(t)
	for _, e := range b.graph.Edges() {
		if e.Type == "PARENT" && e.From.ID == "hs:0201" {
			require.Equal(t, "hs:01", e.To.ID)
		}
	}
	require.Equal(t, 4, b.graph.EdgeCount("PARENT"))

	// Delete a link-table row and a code: their edge and node go, with the
	// code's own edges.
	delete(b.src.recs, "headings_guides:1")
	delete(b.src.recs, "hs:010129")
	c = b.sync(t)
	require.Equal(t, 2, c.RecordsDeleted)
	require.Equal(t, 2, b.graph.EdgeCount("REQUIRES_GUIDE"))
	require.Equal(t, 5, b.graph.Count("cn_code"))
	require.Equal(t, 3, b.graph.EdgeCount("PARENT"))
}

func TestModelChangeReprocessesOnlyItsAnchor(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.sync(t)
	m := tariffModel()
	m.Anchors[1].Description = "descriptions do not shape records"
	b.p.Model = pipeline.NewModel(m)
	plan, err := b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Empty(t, plan.Items, "a description change rewrites nothing")

	m.Anchors[1].Attributes = append(m.Anchors[1].Attributes, config.Attribute{Name: "link", Column: "url"})
	b.p.Model = pipeline.NewModel(m)
	plan, err = b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Len(t, plan.Items, 2, "exactly the guide records")
	for _, it := range plan.Items {
		require.Equal(t, diff.ReasonConfig, it.Reason)
		require.Contains(t, it.Key, "guides:")
	}
	c := b.sync(t)
	require.Equal(t, 2, c.RecordsChanged)
	g, _ := b.graph.Node("guide", "guides:1")
	require.Equal(t, "https://www.gov.uk/guidance/live-animals", g["link"])
}

func TestModelFailedListingDeletesNothing(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.sync(t)
	b.src.fail = true
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.Error(t, err)
	require.Equal(t, 6, b.graph.Count("cn_code"))
	require.Equal(t, 3, b.graph.EdgeCount("REQUIRES_GUIDE"))
}

func TestSearchFindsTheNearestAttribute(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.sync(t)
	res, err := b.p.Searcher().Search(t.Context(), "Meat of bovine animals; fresh or chilled", retrieval.Options{K: 3, Signals: []string{retrieval.SignalVector}})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	require.Equal(t, "hs:0201", res.Hits[0].ID, "the identical text scores highest")
	require.InDelta(t, 1.0, res.Hits[0].Cosine, 1e-6)
	res, err = b.p.Searcher().Search(t.Context(), "meat", retrieval.Options{K: 5, Anchor: "guide", Attribute: "title", NoFloor: true})
	require.NoError(t, err)
	for _, h := range res.Hits {
		require.Equal(t, "guide", h.Label)
	}
	require.Equal(t, "guides:2", res.Hits[0].ID)

	doc, err := b.p.Describe(t.Context())
	require.NoError(t, err)
	md := doc.Markdown()
	require.Contains(t, md, "| `cn_code` | 6 | A Harmonized System code |")
	require.Contains(t, md, "| `REQUIRES_GUIDE` | `cn_code` | `guide` | 3 |")
	require.Contains(t, md, "| `PARENT` | `cn_code` | `cn_code` | 4 |")
	require.Contains(t, md, "`cn_code_description_embedding`")
}

// TestCursorCommittedOnlyWithItsPage: a batch that ends in the middle of a
// page must not commit that page's cursor, or a crash would skip the rest of
// the page for good. The failing write waits until the writer's state
// stage has committed the batch after it (guide 7), which is then marked
// as interrupted like the failed batch.
func TestCursorCommittedOnlyWithItsPage(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.src.recs = map[string]sources.Record{}
	for i := 1; i <= 7; i++ {
		b.src.put("guides", fmt.Sprint(i), map[string]any{"title": fmt.Sprintf("guide %d", i)})
	}
	b.src.cursors = true
	b.p.BatchSize = 2
	writes := 0
	overlapped := false
	b.graph.FailWrite = func(*sink.Batch) error {
		writes++
		if writes == 3 { // the batch holding guides 5 and 6
			_, overlapped = waitStored(t.Context(), b, 7)
			return errors.New("connection reset")
		}
		return nil
	}
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.Error(t, err)
	require.True(t, overlapped, "guide 7 committed while the write of guides 5 and 6 was under way")
	cur, err := b.store.CursorGet(t.Context(), "tariff", "tables")
	require.NoError(t, err)
	require.Equal(t, "after:guides:3", cur, "the first page is complete; the second is not")

	b.graph.FailWrite = nil
	c := b.sync(t)
	require.Zero(t, c.RecordsNew)
	require.Equal(t, 3, c.RecordsChanged, "guides 5 and 6 (their write failed) and 7 (committed, not written): redone")
	require.Equal(t, 7, b.graph.Count("guide"))
	cur, err = b.store.CursorGet(t.Context(), "tariff", "tables")
	require.NoError(t, err)
	require.Equal(t, "after:guides:7", cur)
}

// dueSource lists everything when its cursor is "" or "due" (a full
// reconciliation is due) and nothing, as a partial listing, otherwise.
type dueSource struct{ tableSource }

func (s *dueSource) Read(ctx context.Context, cursor string) iter.Seq2[*sources.Page, error] {
	if cursor == "" || cursor == "due" {
		full := s.tableSource
		full.cursors = false
		return editLastPage(full.Read(ctx, ""), func(p *sources.Page) { p.Cursor = "listed" })
	}
	return func(yield func(*sources.Page, error) bool) {
		yield(&sources.Page{Partial: true, Cursor: cursor}, nil)
	}
}

// TestGuardKeepsTheFullListingDue: when the mass-delete guard stops a full
// listing, its cursor is not committed, so the confirming run lists
// everything again and deletes what the stopped run would have.
func TestGuardKeepsTheFullListingDue(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	src := &dueSource{tableSource{name: "tables", recs: map[string]sources.Record{}}}
	for i := 1; i <= 10; i++ {
		src.put("guides", fmt.Sprint(i), map[string]any{"title": fmt.Sprintf("guide %d", i)})
	}
	b.p.Sources = []sources.Source{src}
	b.p.MaxDeleteRatio = 0.3
	b.sync(t)
	for i := 1; i <= 5; i++ {
		delete(src.recs, fmt.Sprintf("guides:%d", i))
	}
	// A changed record in the last page: its batch is written before the
	// deletions are judged.
	src.recs["guides:9"].Attributes["title"] = "guide 9, revised"
	require.NoError(t, b.store.Commit(t.Context(), state.Commit{Pipeline: "tariff", Cursors: map[string]string{"tables": "due"}}))
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	cur, err := b.store.CursorGet(t.Context(), "tariff", "tables")
	require.NoError(t, err)
	require.Equal(t, "due", cur, "the stopped listing's cursor is not committed")

	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{AllowMassDelete: true})
	require.NoError(t, err)
	require.Equal(t, 5, res.Run.Counts.RecordsDeleted)
	require.Equal(t, 5, b.graph.Count("guide"))
}

// TestDeletedRowComesBackWithItsIncomingEdges: a deleted row that other
// rows still refer to stays a placeholder with their edges, so that when it
// comes back the unchanged rows' edges are still there; a placeholder
// nothing refers to goes.
func TestDeletedRowComesBackWithItsIncomingEdges(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.sync(t)
	parentsOf0101 := func() int {
		n := 0
		for _, e := range b.graph.Edges() {
			if e.Type == "PARENT" && e.To.ID == "hs:0101" {
				n++
			}
		}
		return n
	}
	require.Equal(t, 2, parentsOf0101())

	row := b.src.recs["hs:0101"]
	delete(b.src.recs, "hs:0101")
	c := b.sync(t)
	require.Equal(t, 1, c.RecordsDeleted)
	n, ok := b.graph.Node("cn_code", "hs:0101")
	require.True(t, ok, "still referred to by 010121 and 010129")
	require.Equal(t, true, n[pipeline.PropPlaceholder])
	require.NotContains(t, n, "description", "the row's properties are gone")
	require.NotContains(t, n, pipeline.PropRowLex, "and its text, out of the text index")
	require.Equal(t, 2, parentsOf0101())
	require.Zero(t, func() int {
		k := 0
		for _, e := range b.graph.Edges() {
			if e.From.ID == "hs:0101" && e.Type == "PARENT" {
				k++
			}
		}
		return k
	}(), "its own links are gone (the link table's rows keep theirs)")

	b.src.recs["hs:0101"] = row
	b.sync(t)
	n, _ = b.graph.Node("cn_code", "hs:0101")
	require.NotContains(t, n, pipeline.PropPlaceholder)
	require.Equal(t, "Horses, asses, mules and hinnies; live", n["description"])
	require.Equal(t, 2, parentsOf0101(), "the unchanged children's edges are there")

	// The children go, then the parent: the children's nodes go; the
	// parent stays a placeholder while the link table's rows (unchanged)
	// still hold their REQUIRES_GUIDE edges from it, and goes with them.
	delete(b.src.recs, "hs:010121")
	delete(b.src.recs, "hs:010129")
	delete(b.src.recs, "hs:0101")
	b.p.MaxDeleteRatio = 1
	b.sync(t)
	for _, id := range []string{"hs:010121", "hs:010129"} {
		_, ok := b.graph.Node("cn_code", id)
		require.False(t, ok, id)
	}
	n, ok = b.graph.Node("cn_code", "hs:0101")
	require.True(t, ok)
	require.Equal(t, true, n[pipeline.PropPlaceholder])
	delete(b.src.recs, "headings_guides:1")
	delete(b.src.recs, "headings_guides:2")
	b.sync(t)
	_, ok = b.graph.Node("cn_code", "hs:0101")
	require.False(t, ok, "no edge left: the placeholder goes")
}

// TestAnchorRenameMovesNodes: renaming an anchor moves its nodes to the new
// label; no node is left under the old one.
func TestAnchorRenameMovesNodes(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.sync(t)
	m := tariffModel()
	m.Anchors[1].Name = "Guide"
	m.LinkTables[0].To.Anchor = "Guide"
	b.p.Model = pipeline.NewModel(m)
	b.sync(t)
	require.Zero(t, b.graph.Count("guide"))
	require.Equal(t, 2, b.graph.Count("Guide"))
	n, _ := b.graph.Node("Guide", "guides:2")
	require.Len(t, n["title_embedding"], 16)
	for _, e := range b.graph.Edges() {
		require.NotEqual(t, "guide", e.To.Label, "%v", e)
	}
	require.Equal(t, 3, b.graph.EdgeCount("REQUIRES_GUIDE"))
}

// TestTableBecomesLinkTableAndBack: a table mapped as nodes that becomes a
// link table leaves no node behind, and back again leaves no edge.
func TestTableBecomesLinkTableAndBack(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	m := tariffModel()
	lt := m.LinkTables
	m.LinkTables = nil
	b.p.Model = pipeline.NewModel(m)
	b.sync(t)
	require.Equal(t, 3, b.graph.Count("headings_guides"), "the default mapping: one node a row")
	require.Zero(t, b.graph.EdgeCount("REQUIRES_GUIDE"))

	m.LinkTables = lt
	b.p.Model = pipeline.NewModel(m)
	b.sync(t)
	require.Zero(t, b.graph.Count("headings_guides"))
	require.Equal(t, 3, b.graph.EdgeCount("REQUIRES_GUIDE"))

	m.LinkTables = nil
	b.p.Model = pipeline.NewModel(m)
	b.sync(t)
	require.Equal(t, 3, b.graph.Count("headings_guides"))
	require.Zero(t, b.graph.EdgeCount("REQUIRES_GUIDE"))
}

// reportingSource lists its records fully on the first run, then reports
// deletions as an incremental source does (Page.Deleted, Partial).
type reportingSource struct {
	tableSource
	deleted []string
}

func (s *reportingSource) Read(ctx context.Context, cursor string) iter.Seq2[*sources.Page, error] {
	if cursor == "" {
		inner := s.tableSource
		return func(yield func(*sources.Page, error) bool) {
			for p, err := range inner.Read(ctx, "") {
				if p != nil {
					p.Cursor = "after-full"
				}
				if !yield(p, err) {
					return
				}
			}
		}
	}
	return func(yield func(*sources.Page, error) bool) {
		yield(&sources.Page{Partial: true, Deleted: s.deleted, Cursor: cursor + "+"}, nil)
	}
}

func TestGuardCountsReportedDeletions(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	src := &reportingSource{tableSource: tableSource{name: "tables", recs: map[string]sources.Record{}}}
	for i := 1; i <= 10; i++ {
		src.put("guides", fmt.Sprint(i), map[string]any{"title": fmt.Sprintf("guide %d", i)})
	}
	b.p.Sources = []sources.Source{src}
	b.p.MaxDeleteRatio = 0.3
	b.sync(t)
	src.deleted = []string{"guides:1", "guides:2", "guides:3", "guides:4", "guides:5"}
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.Equal(t, 10, b.graph.Count("guide"), "nothing deleted")
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{AllowMassDelete: true})
	require.NoError(t, err)
	require.Equal(t, 5, res.Run.Counts.RecordsDeleted)
	require.Equal(t, 5, b.graph.Count("guide"))
}

// TestRenameReachesLinksFromOtherAnchors: a code links to a guide through an
// unlisted Ref column (default mapping); renaming the guide anchor rewrites
// the code's edge to the new label.
func TestRenameReachesLinksFromOtherAnchors(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	r := b.src.recs["hs:0201"]
	r.Links = append(r.Links, sources.Link{Type: "guide", ToAnchor: "guides", ToKey: "guides:2"})
	b.src.recs["hs:0201"] = r
	b.sync(t)
	m := tariffModel()
	m.Anchors[1].Name = "Guide"
	m.LinkTables[0].To.Anchor = "Guide"
	b.p.Model = pipeline.NewModel(m)
	b.sync(t)
	var to []string
	for _, e := range b.graph.Edges() {
		if e.Type == "guide" {
			to = append(to, e.To.Label+" "+e.To.ID)
		}
	}
	require.Equal(t, []string{"Guide guides:2"}, to)
	require.Zero(t, b.graph.Count("guide"))
}

// pagesSource lists fixed pages of guides (keys may repeat across pages).
type pagesSource struct{ pages [][]sources.Record }

func (s *pagesSource) Name() string { return "tables" }

func (s *pagesSource) Read(context.Context, string) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		for _, recs := range s.pages {
			if !yield(&sources.Page{Records: recs}, nil) {
				return
			}
		}
	}
}

// slowWrite is a sink write hook that makes the nth write take 400 ms.
func slowWrite(nth int) func(*sink.Batch) error {
	writes := 0
	return func(*sink.Batch) error {
		writes++
		if writes == nth {
			time.Sleep(400 * time.Millisecond)
		}
		return nil
	}
}

func guideRec(key, title string) sources.Record {
	return sources.Record{Key: "guides:" + key, Anchor: "guides", Attributes: map[string]any{"title": title}}
}

// TestRepeatAfterHeldBatchesIsADuplicate: batches held while the
// mass-delete guard was undecided are written once it is ruled out; a key
// of theirs listed again on a later page, while the last of them is still
// being written, is a duplicate (the first kept), not a new record.
func TestRepeatAfterHeldBatchesIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.p.MaxDeleteRatio = 0.3
	b.p.BatchSize = 1
	var stored []sources.Record
	for i := 1; i <= 10; i++ {
		stored = append(stored, guideRec(fmt.Sprintf("g%02d", i), fmt.Sprintf("guide %d", i)))
	}
	src := &pagesSource{pages: [][]sources.Record{stored}}
	b.p.Sources = []sources.Source{src}
	require.Equal(t, 10, b.sync(t).RecordsNew)

	b.graph.FailWrite = slowWrite(2) // n2's batch: still being written when n2 comes again
	src.pages = [][]sources.Record{
		{guideRec("n1", "new 1"), guideRec("n2", "new 2")}, // held: 10 stored records not listed yet
		stored,
		{guideRec("n3", "new 3")},       // the guard is ruled out: n1 and n2 are written, then n3
		{guideRec("n2", "new 2 again")}, // n2 repeated
	}
	c := b.sync(t)
	require.Equal(t, 3, c.RecordsNew)
	require.Equal(t, 1, c.RecordsSkipped, "n2 listed twice")
	n, ok := b.graph.Node("guide", "guides:n2")
	require.True(t, ok)
	require.Equal(t, "new 2", n["title"], "the first n2 is kept")
}

// TestRepeatAfterALongPageIsADuplicate: a page of more batches than the
// writer holds; a key of its last batch listed again on the next page,
// while that batch is still being written, is a duplicate.
func TestRepeatAfterALongPageIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.p.BatchSize = 1
	b.graph.FailWrite = slowWrite(5) // n5's batch: still being written when n5 comes again
	var page []sources.Record
	for i := 1; i <= 5; i++ {
		page = append(page, guideRec(fmt.Sprintf("n%d", i), fmt.Sprintf("new %d", i)))
	}
	b.p.Sources = []sources.Source{&pagesSource{pages: [][]sources.Record{page, {guideRec("n5", "new 5 again")}}}}
	c := b.sync(t)
	require.Equal(t, 5, c.RecordsNew)
	require.Equal(t, 1, c.RecordsSkipped, "n5 listed twice")
	n, ok := b.graph.Node("guide", "guides:n5")
	require.True(t, ok)
	require.Equal(t, "new 5", n["title"], "the first n5 is kept")
}

// TestColumnNamedIDKeepsTheNodeID: a column whose name kgsync uses for a
// node property of its own (`id`, the key every statement matches nodes
// by; names starting with `_`) is written under "source_" + its name, and
// the node's id stays "table:key": `SET n += {id: "1"}` would have moved
// the node off its id, so that its edges and every later sync missed it.
func TestColumnNamedIDKeepsTheNodeID(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.src.recs = map[string]sources.Record{}
	b.src.put("guides", "1", map[string]any{"id": "g-1", "title": "guide one", "_hash": "x", "source_id": "taken"})
	b.sync(t)
	n, ok := b.graph.Node("guide", "guides:1")
	require.True(t, ok)
	require.Equal(t, "guides:1", n["id"])
	require.Equal(t, "g-1", n["source_source_id"], "source_id is a column already")
	require.Equal(t, "taken", n["source_id"])
	require.Equal(t, "x", n["source__hash"])
	require.NotEqual(t, "x", n["_hash"], "kgsync's own content hash")
	require.Equal(t, "guide one", n["title"])
}

// TestRowStoredWithAnIDColumnUpgrades: a record stored by an earlier
// version, whose node was written with its column `id` as the property
// id, is rewritten with that column as source_id and its own id kept: the
// properties the stored node had and the new one has not are removed, but
// never id (that would leave the node where no statement matches it).
func TestRowStoredWithAnIDColumnUpgrades(t *testing.T) {
	t.Parallel()
	b := storedBeforeSourceID(t)
	b.src.put("guides", "1", map[string]any{"id": "g-1", "title": "guide one, revised"})
	b.sync(t)
	node, ok := b.graph.Node("guide", "guides:1")
	require.True(t, ok)
	require.Equal(t, "guides:1", node["id"])
	require.Equal(t, "g-1", node["source_id"])
	require.Equal(t, "guide one, revised", node["title"])
}

// storedBeforeSourceID syncs guide 1, whose column id is "g-1", and
// rewrites its stored props as MappingVersion 2 stored them: the column
// over the node's id, no source_id.
func storedBeforeSourceID(t *testing.T) *modelBundle {
	t.Helper()
	b := setupModel(t)
	b.src.recs = map[string]sources.Record{}
	b.src.put("guides", "1", map[string]any{"id": "g-1", "title": "guide one"})
	b.sync(t)
	db := b.store.(*sqlite.Store).DB()
	res, err := db.ExecContext(t.Context(), `UPDATE records SET props = CAST(json_remove(json_set(CAST(props AS TEXT), '$.node.id', 'g-1'), '$.node.source_id') AS BLOB)
		WHERE "key" = 'guides:1'`)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	return b
}

// A link or mandatory table's fingerprint is hashed when the model is
// built, not on each of its rows' three asks (classify, compare, commit),
// and it changes with the table's part of the model.
// (Not parallel: testing.AllocsPerRun refuses a parallel test.)
func TestLinkAndMandatoryTableFingerprintsAreHashedOnce(t *testing.T) {
	cfg := func(prop, note string) *config.Model {
		return &config.Model{
			Anchors: []config.Anchor{{Name: "heading", Table: "headings"}, {Name: "guide", Table: "guides"}},
			LinkTables: []config.LinkTable{{Name: "REQUIRES_GUIDE", Table: "headings_guides",
				From: config.LinkEnd{Anchor: "heading", Column: "heading"}, To: config.LinkEnd{Anchor: "guide", Column: "guide"},
				Properties: []string{prop}}},
			MandatoryTables: []config.MandatoryTable{{Table: "pairs", From: "a", To: "b", Note: note}},
		}
	}
	m := pipeline.NewModel(cfg("since", "why"))
	for _, table := range []string{"headings_guides", "pairs"} {
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = m.Fingerprint(table) }), table)
	}
	require.NotEqual(t, m.Fingerprint("headings_guides"), pipeline.NewModel(cfg("until", "why")).Fingerprint("headings_guides"))
	require.Equal(t, m.Fingerprint("pairs"), pipeline.NewModel(cfg("until", "why")).Fingerprint("pairs"))
	require.NotEqual(t, m.Fingerprint("pairs"), pipeline.NewModel(cfg("since", "because")).Fingerprint("pairs"))
	require.NotEqual(t, m.Fingerprint("pairs"), m.Fingerprint("headings_guides"))
}
