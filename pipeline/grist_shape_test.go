package pipeline_test

// Tests for Grist documents that change shape: each one replays a change a
// user makes in Grist through the test server, then compares the graph with
// a fresh full sync of the changed document (new state, new graph) and
// counts the embedding calls a fresh sync would not need.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/internal/testlog"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// shapeDoc loads a small tariff document: an HS code tree keyed by code
// (parent is a Ref to the same table), guides keyed by guide_id, a link
// table of Ref columns, and an FAQ whose answers are long enough to chunk.
func shapeDoc(t *testing.T) *gristtest.Server {
	t.Helper()
	srv := gristtest.New(t)
	srv.AddTable("HSCodes", gristtest.Column{ID: "hscode"}, gristtest.Column{ID: "description"},
		gristtest.Column{ID: "parent", Type: "Ref:HSCodes"}, gristtest.Column{ID: "level", Type: "Int"})
	srv.AddTable("Guides", gristtest.Column{ID: "guide_id", Type: "Int"}, gristtest.Column{ID: "title"}, gristtest.Column{ID: "url"})
	srv.AddTable("HeadingGuides", gristtest.Column{ID: "heading", Type: "Ref:HSCodes"}, gristtest.Column{ID: "guide", Type: "Ref:Guides"},
		gristtest.Column{ID: "note"})
	srv.AddTable("FAQ", gristtest.Column{ID: "question"}, gristtest.Column{ID: "answer"}, gristtest.Column{ID: "category"})

	root := srv.AddRows("HSCodes", map[string]any{"hscode": "TOTAL", "description": "All goods", "level": 0})[0]
	srv.UpdateRows("HSCodes", map[int64]map[string]any{root: {"parent": root}})
	ch := srv.AddRows("HSCodes",
		map[string]any{"hscode": "01", "description": "Live animals", "parent": root, "level": 2},
		map[string]any{"hscode": "02", "description": "Meat and edible meat offal", "parent": root, "level": 2})
	hd := srv.AddRows("HSCodes",
		map[string]any{"hscode": "0101", "description": "Horses, asses, mules and hinnies; live", "parent": ch[0], "level": 4},
		map[string]any{"hscode": "0102", "description": "Bovine animals; live", "parent": ch[0], "level": 4},
		map[string]any{"hscode": "0201", "description": "Meat of bovine animals, fresh or chilled", "parent": ch[1], "level": 4})
	var subs []map[string]any
	for i := range 12 {
		subs = append(subs, map[string]any{"hscode": fmt.Sprintf("0101%02d", 21+i),
			"description": fmt.Sprintf("Horses of kind %d, live", i+1), "parent": hd[0], "level": 6})
	}
	subs = append(subs, map[string]any{"hscode": "010221", "description": "Cattle, pure-bred breeding animals", "parent": hd[1], "level": 6})
	srv.AddRows("HSCodes", subs...)
	g := srv.AddRows("Guides",
		map[string]any{"guide_id": 1, "title": "Importing live animals", "url": "https://example.org/live"},
		map[string]any{"guide_id": 2, "title": "Importing meat products", "url": "https://example.org/meat"})
	srv.AddRows("HeadingGuides",
		map[string]any{"heading": hd[0], "guide": g[0], "note": "horses"},
		map[string]any{"heading": hd[1], "guide": g[0], "note": "cattle"},
		map[string]any{"heading": hd[2], "guide": g[1], "note": "beef"})
	var faqs []map[string]any
	for i := range 8 {
		faqs = append(faqs, map[string]any{
			"question": fmt.Sprintf("Question %d about importing animals?", i+1),
			"answer":   strings.Repeat(fmt.Sprintf("Answer %d explains the rules for importing animals and meat products across borders. ", i+1), 1+i%3),
			"category": []string{"import", "export"}[i%2],
		})
	}
	srv.AddRows("FAQ", faqs...)
	return srv
}

// shapeSource is the Grist source of shapeDoc as a user configures it.
func shapeSource(srv *gristtest.Server) *config.GristSource {
	return &config.GristSource{Server: srv.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
		Tables:     []string{"HSCodes", "Guides", "HeadingGuides", "FAQ"},
		KeyColumns: map[string]string{"HSCodes": "hscode", "Guides": "guide_id"}, PageSize: 7}
}

// shapeModel is shapeDoc's data model (examples/grist/kgsync.yaml).
func shapeModel() *config.Model {
	return &config.Model{
		LongTextTokens: 24,
		Anchors: []config.Anchor{
			{Name: "cn_code", Table: "HSCodes", Attributes: []config.Attribute{{Name: "code", Column: "hscode"}, {Name: "description", Embeddable: true}},
				Links: []config.Link{{Name: "PARENT", Column: "parent", To: "cn_code"}}},
			{Name: "guide", Table: "Guides", Attributes: []config.Attribute{{Name: "title", Embeddable: true}}},
			{Name: "faq", Table: "FAQ", Attributes: []config.Attribute{{Name: "question", Embeddable: true}, {Name: "answer", Embeddable: true}}},
		},
		LinkTables: []config.LinkTable{{Name: "REQUIRES_GUIDE", Table: "HeadingGuides",
			From: config.LinkEnd{Anchor: "cn_code", Column: "heading"}, To: config.LinkEnd{Anchor: "guide", Column: "guide"}}},
	}
}

// cypherCount counts the Cypher statements and rows the batches written to
// the graph turn into (sink.Statements, Memgraph dialect).
type cypherCount struct {
	*graphtest.Graph
	statements, rows int
}

func (c *cypherCount) Write(ctx context.Context, b *sink.Batch) (sink.Stats, error) {
	st, err := sink.Statements(sink.Memgraph, b, sink.Options{Pipeline: "tariff"})
	if err != nil {
		return sink.Stats{}, err
	}
	c.statements += len(st)
	c.rows += b.Len()
	return c.Graph.Write(ctx, b)
}

// counted returns and zeroes the statement and row counts.
func (c *cypherCount) counted() (statements, rows int) {
	statements, rows = c.statements, c.rows
	c.statements, c.rows = 0, 0
	return statements, rows
}

// shapeRig is one pipeline (its own state and graph) over a document.
type shapeRig struct {
	p     *pipeline.Pipeline
	cy    *cypherCount
	graph *graphtest.Graph
	emb   *countingEmbedder
	store state.Store
	logs  *testlog.Buffer
	src   *grist.Source
}

func newShapeRig(t *testing.T, sc *config.GristSource, m *config.Model) *shapeRig {
	t.Helper()
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	r := &shapeRig{graph: graphtest.New(), emb: &countingEmbedder{Embedder: hashing.New("hashing-v1", 16)}, store: store, logs: &testlog.Buffer{}}
	r.cy = &cypherCount{Graph: r.graph}
	r.p = &pipeline.Pipeline{
		Name: "tariff", Embedder: r.emb, Sink: r.cy, Store: store,
		Chunking:  chunker.Options{MaxTokens: 32, OverlapTokens: 4, Tokenizer: tok},
		BatchSize: 5, MaxDeleteRatio: 0.3, Fingerprint: 1,
		Logger: slog.New(slog.NewTextHandler(r.logs, nil)),
	}
	r.configure(t, sc, m)
	return r
}

// configure rebuilds the pipeline's source and model from a (changed)
// config, as a restart with an edited config file does.
func (r *shapeRig) configure(t *testing.T, sc *config.GristSource, m *config.Model) {
	t.Helper()
	cfg := pipeline.GristConfig(sc, m, "pipelines[0].sources[0].grist")
	cfg.RetryWaitMin, cfg.RetryWaitMax = time.Millisecond, 5*time.Millisecond
	src, err := grist.New("grist", cfg, r.p.Logger)
	require.NoError(t, err)
	r.src = src
	r.p.Sources = []sources.Source{src}
	r.p.Model = pipeline.NewModel(m)
}

// report logs what run wrote (Cypher statements since the last report) and
// embedded, for the issue note.
func (r *shapeRig) report(t *testing.T, what string, run state.Run) {
	t.Helper()
	st, rows := r.cy.counted()
	c := run.Counts
	t.Logf("%s: %d Cypher statements (%d rows); %d texts embedded in %d calls; read %d, changed %d, renamed %d, deleted %d",
		what, st, rows, c.ChunksEmbedded, c.EmbedRequests, c.RecordsRead, c.RecordsChanged, c.RecordsRenamed, c.RecordsDeleted)
}

func (r *shapeRig) sync(t *testing.T, mode pipeline.Mode) state.Run {
	t.Helper()
	res, err := r.p.Run(t.Context(), state.TriggerManual, mode)
	require.NoError(t, err)
	require.Equal(t, state.StatusSucceeded, res.Run.Status)
	require.Empty(t, r.graph.Dangling())
	return res.Run
}

// requireFresh compares r's graph with a fresh full sync of the document
// under the same config, and returns the fresh rig.
func requireFresh(t *testing.T, r *shapeRig, sc *config.GristSource, m *config.Model) *shapeRig {
	t.Helper()
	fresh := newShapeRig(t, sc, m)
	fresh.sync(t, pipeline.Mode{})
	want, got := fresh.graph.Snapshot("_synced_at"), r.graph.Snapshot("_synced_at")
	for k, v := range want {
		require.Equal(t, v, got[k], "graph differs from a fresh sync at %s", k)
	}
	for k := range got {
		_, ok := want[k]
		require.True(t, ok, "graph has %s, a fresh sync has not", k)
	}
	return fresh
}

// noPlaceholders fails if any node of the labels is a placeholder.
func noPlaceholders(t *testing.T, g *graphtest.Graph, labels ...string) {
	t.Helper()
	for _, l := range labels {
		for _, id := range g.Nodes(l) {
			n, _ := g.Node(l, id)
			require.NotContains(t, n, pipeline.PropPlaceholder, "%s %s", l, id)
		}
	}
}

func hasLog(logs *testlog.Buffer, parts ...string) bool {
	for _, line := range strings.Split(logs.String(), "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestGristResyncReadsEverything: resync --full and --reembed on an
// unchanged document read every row and do what they say, although
// /states answers that nothing changed; plan --full lists every row.
func TestGristResyncReadsEverything(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	first := r.sync(t, pipeline.Mode{})
	r.report(t, "a fresh full sync of the document", first)
	rows := first.Counts.RecordsNew
	require.Equal(t, 19+2+3+8, rows)
	embedded := first.Counts.ChunksEmbedded

	require.Zero(t, r.sync(t, pipeline.Mode{}).Counts.RecordsRead, "an unchanged document is not read")

	plan, err := r.p.Plan(t.Context(), pipeline.Mode{Full: true})
	require.NoError(t, err)
	require.Len(t, plan.Items, rows, "plan --full lists every row")

	r.cy.counted()
	full := r.sync(t, pipeline.Mode{Full: true})
	r.report(t, "row 1, resync --full on an unchanged document", full)
	require.Equal(t, rows, full.Counts.RecordsRead)
	require.Positive(t, full.Counts.SinkStatements, "--full rewrites every node")
	require.Zero(t, full.Counts.ChunksEmbedded, "--full embeds nothing the cache has")

	require.Zero(t, r.sync(t, pipeline.Mode{}).Counts.RecordsRead, "the cursor still works after resync --full")
	r.emb.reset()
	re := r.sync(t, pipeline.Mode{Reembed: true})
	r.report(t, "row 1, resync --reembed", re)
	require.Equal(t, rows, re.Counts.RecordsRead)
	require.Equal(t, embedded, re.Counts.ChunksEmbedded, "--reembed embeds every text again")

	require.Zero(t, r.sync(t, pipeline.Mode{}).Counts.RecordsRead, "the cursor still works after a resync")
	requireFresh(t, r, sc, m)
}

// TestGristAddedThenRemovedColumn: a column added in Grist shows on every
// node of a table mapped by default; removed again, it disappears from
// every node in that run (a node is exactly its mapping), with 0 embedding
// calls.
func TestGristAddedThenRemovedColumn(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	r.sync(t, pipeline.Mode{})
	srv.AddColumn("FAQ", gristtest.Column{ID: "reviewer"}, map[int64]any{1: "ana", 2: "ben"})
	r.emb.reset()
	run := r.sync(t, pipeline.Mode{})
	require.Equal(t, 8, run.Counts.RecordsChanged)
	n, _ := r.graph.Node("faq", "FAQ:1")
	require.Equal(t, "ana", n["reviewer"])
	requireFresh(t, r, sc, m)

	r.cy.counted()
	srv.RemoveColumn("FAQ", "reviewer")
	run = r.sync(t, pipeline.Mode{})
	r.report(t, "row 3, a column removed (8 nodes lose it)", run)
	calls, _ := r.emb.reset()
	require.Zero(t, calls, "no text changed")
	for _, id := range r.graph.Nodes("faq") {
		n, _ := r.graph.Node("faq", id)
		require.NotContains(t, n, "reviewer", id)
	}
	requireFresh(t, r, sc, m)
	t.Logf("remove column: %d statements, %d texts embedded", run.Counts.SinkStatements, run.Counts.ChunksEmbedded)

	// A link table's column is an edge property: it goes from the edges.
	srv.RemoveColumn("HeadingGuides", "note")
	r.sync(t, pipeline.Mode{})
	requireFresh(t, r, sc, m)

	// The model stops embedding the answers: their vectors and chunks go,
	// the text stays as a plain property.
	m.Anchors[2].Attributes = m.Anchors[2].Attributes[:1]
	r.configure(t, sc, m)
	r.emb.reset()
	r.sync(t, pipeline.Mode{})
	calls, _ = r.emb.reset()
	require.Zero(t, calls)
	n, _ = r.graph.Node("faq", "FAQ:1")
	require.NotContains(t, n, "answer_embedding")
	require.Contains(t, n, "answer")
	require.Zero(t, r.graph.Count(pipeline.LabelChunk))
	requireFresh(t, r, sc, m)
}

// TestGristRenamedEmbeddableColumn: a mapped embeddable column renamed in
// Grist (description → desc_text) keeps every node, property and vector as
// it was (0 statements, 0 embedding calls), and the run warns with the
// config line to change; edits after the rename still reach the graph.
// Once the config says desc_text, a run embeds nothing and the graph is
// that of a fresh sync.
func TestGristRenamedEmbeddableColumn(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	r.sync(t, pipeline.Mode{})
	before := r.graph.Snapshot("_synced_at")

	r.cy.counted()
	srv.RenameColumn("HSCodes", "description", "desc_text")
	r.emb.reset()
	run := r.sync(t, pipeline.Mode{})
	r.report(t, "row 2, embeddable column renamed, config unchanged", run)
	calls, _ := r.emb.reset()
	require.Zero(t, calls)
	require.Zero(t, run.Counts.SinkStatements)
	require.Equal(t, before, r.graph.Snapshot("_synced_at"))
	require.Len(t, run.Warnings, 1)
	require.Contains(t, run.Warnings[0], `table "HSCodes" column "description" was renamed to "desc_text"`)
	// The attribute's name is its property (and vector index): the remedy
	// is a column key, not a new name.
	require.Contains(t, run.Warnings[0], `add column: "desc_text" to pipelines[0].model.anchors[0].attributes[1]`)
	require.NotContains(t, run.Warnings[0], "change pipelines[0].model.anchors[0].attributes[1].name")
	require.True(t, hasLog(r.logs, "WARN", "desc_text"))
	plan, err := r.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, run.Warnings, plan.Warnings, "plan says it too")

	srv.UpdateRows("HSCodes", map[int64]map[string]any{4: {"desc_text": "Horses, live (edited)"}})
	run = r.sync(t, pipeline.Mode{})
	require.Equal(t, 1, run.Counts.RecordsChanged)
	n, _ := r.graph.Node("cn_code", "HSCodes:0101")
	require.Equal(t, "Horses, live (edited)", n["description"])
	_, texts := r.emb.reset()
	require.Equal(t, []string{"Horses, live (edited)"}, texts)

	r.cy.counted()
	m.Anchors[0].Attributes[1].Column = "desc_text"
	r.configure(t, sc, m)
	run = r.sync(t, pipeline.Mode{})
	r.report(t, "row 2, config follows the column rename (19 nodes rewritten)", run)
	calls, _ = r.emb.reset()
	require.Zero(t, calls, "the texts are the same")
	require.Zero(t, run.Counts.RecordsDeleted)
	require.Empty(t, run.Warnings)
	requireFresh(t, r, sc, m)
	t.Logf("config follows the rename: %d records rewritten, %d statements, %d texts embedded",
		run.Counts.RecordsChanged, run.Counts.SinkStatements, run.Counts.ChunksEmbedded)
}

// TestGristRemovedMappedColumn: a column the model maps that is removed in
// Grist stops the run before anything is written, naming the table, the
// column and the config line; plan says so too. Once the attribute is out
// of the config, its property and vector leave every node.
func TestGristRemovedMappedColumn(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	r.sync(t, pipeline.Mode{})
	before := r.graph.Snapshot("_synced_at")
	writes := r.graph.Writes

	srv.RemoveColumn("Guides", "title")
	_, err := r.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.Error(t, err)
	var se *grist.SchemaError
	require.ErrorAs(t, err, &se)
	for _, want := range []string{`table "Guides" column "title"`, "pipelines[0].model.anchors[1].attributes[0].name", "removed from the Grist document"} {
		require.Contains(t, err.Error(), want)
	}
	require.Equal(t, writes, r.graph.Writes, "nothing written")
	require.Equal(t, before, r.graph.Snapshot("_synced_at"))
	plan, err := r.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Len(t, plan.Incomplete, 1)
	require.Contains(t, plan.Incomplete[0], `column "title"`)

	m.Anchors[1].Attributes = nil
	r.configure(t, sc, m)
	r.emb.reset()
	r.sync(t, pipeline.Mode{})
	calls, _ := r.emb.reset()
	require.Zero(t, calls)
	for _, id := range r.graph.Nodes("guide") {
		n, _ := r.graph.Node("guide", id)
		require.NotContains(t, n, "title")
		require.NotContains(t, n, "title_embedding")
	}
	requireFresh(t, r, sc, m)
}

// TestGristRenamedTable: a table renamed in Grist (FAQ → FAQs) while the
// config names FAQ keeps its nodes, chunks and vectors (0 deletions, 0
// statements, 0 embedding calls) and warns; later edits are read under the
// old name (no "Table not found"). Once the config says FAQs, the records
// move to their new keys: nothing is deleted or embedded, the mass-delete
// guard stays out of it, and the graph is that of a fresh sync.
func TestGristRenamedTable(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	r.p.MaxDeleteRatio = 0.1 // the 8 FAQ rows are a quarter of the document
	first := r.sync(t, pipeline.Mode{})
	require.Positive(t, first.Counts.ChunksEmbedded)
	chunks := r.graph.Count(pipeline.LabelChunk)
	require.Positive(t, chunks, "long answers are chunked")
	before := r.graph.Snapshot("_synced_at")

	r.cy.counted()
	srv.RenameTable("FAQ", "FAQs")
	r.emb.reset()
	run := r.sync(t, pipeline.Mode{})
	r.report(t, "row 4, table renamed, config unchanged", run)
	calls, _ := r.emb.reset()
	require.Zero(t, calls)
	require.Zero(t, run.Counts.RecordsDeleted+run.Counts.SinkStatements)
	require.Equal(t, before, r.graph.Snapshot("_synced_at"))
	require.Len(t, run.Warnings, 1)
	for _, want := range []string{`table "FAQ" was renamed to "FAQs"`, "pipelines[0].sources[0].grist.tables[3]", "pipelines[0].model.anchors[2].table"} {
		require.Contains(t, run.Warnings[0], want)
	}
	require.NotContains(t, run.Warnings[0], "attributes", "only the lines naming the table change")

	srv.UpdateRows("FAQs", map[int64]map[string]any{2: {"category": "transit"}})
	run = r.sync(t, pipeline.Mode{})
	require.Equal(t, 1, run.Counts.RecordsChanged)
	n, _ := r.graph.Node("faq", "FAQ:2")
	require.Equal(t, "transit", n["category"])

	r.cy.counted()
	sc.Tables[3] = "FAQs"
	m.Anchors[2].Table = "FAQs"
	r.configure(t, sc, m)
	run = r.sync(t, pipeline.Mode{})
	r.report(t, "row 4, config follows the table rename (8 records and their chunks move)", run)
	calls, _ = r.emb.reset()
	require.Zero(t, calls)
	require.Zero(t, run.Counts.RecordsDeleted)
	require.Zero(t, run.Counts.ChunksEmbedded)
	require.Equal(t, 8, run.Counts.RecordsRenamed)
	require.Empty(t, run.Warnings)
	require.Equal(t, chunks, r.graph.Count(pipeline.LabelChunk))
	requireFresh(t, r, sc, m)
	t.Logf("config follows the rename: %d renamed, %d statements, %d chunks embedded", run.Counts.RecordsRenamed, run.Counts.SinkStatements, run.Counts.ChunksEmbedded)
	require.Zero(t, r.sync(t, pipeline.Mode{}).Counts.RecordsRead)
}

// TestGristKeyChangeRelinks: a key value changed in Grist (0101 → 0101Z)
// moves its node and re-links, in the same run, every edge that points at
// the row — the children's PARENT edges and the link table's edge — with no
// placeholder left behind and nothing embedded. A bulk change of more keys
// than /compare keeps values of (10) works the same.
func TestGristKeyChangeRelinks(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	r.sync(t, pipeline.Mode{})

	r.cy.counted()
	srv.UpdateRows("HSCodes", map[int64]map[string]any{4: {"hscode": "0101Z"}})
	r.emb.reset()
	run := r.sync(t, pipeline.Mode{})
	r.report(t, "row 5, one key changed (12 children and 1 link-table row re-linked)", run)
	calls, _ := r.emb.reset()
	require.Zero(t, calls)
	require.Equal(t, 1, run.Counts.RecordsRenamed)
	require.Zero(t, run.Counts.RecordsDeleted)
	_, ok := r.graph.Node("cn_code", "HSCodes:0101")
	require.False(t, ok, "no placeholder left for the old key")
	noPlaceholders(t, r.graph, "cn_code", "guide")
	parents := 0
	for _, e := range r.graph.Edges() {
		if e.To.ID == "HSCodes:0101Z" && e.Type == "PARENT" {
			parents++
		}
	}
	require.Equal(t, 12, parents, "the 12 subheadings point at the new key")
	requireFresh(t, r, sc, m)
	t.Logf("key change: %d records read, %d statements, %d texts embedded", run.Counts.RecordsRead, run.Counts.SinkStatements, run.Counts.ChunksEmbedded)

	// Every subheading's key at once: more rows than /compare keeps values of.
	up := map[int64]map[string]any{}
	for id := int64(7); id <= 18; id++ {
		up[id] = map[string]any{"hscode": fmt.Sprintf("X%d", id)}
	}
	r.cy.counted()
	srv.UpdateRows("HSCodes", up)
	run = r.sync(t, pipeline.Mode{})
	r.report(t, "row 5, 12 keys changed in one bulk action", run)
	require.Equal(t, 12, run.Counts.RecordsRenamed)
	require.Zero(t, run.Counts.RecordsDeleted+run.Counts.ChunksEmbedded)
	requireFresh(t, r, sc, m)

	// A referenced row removed, then its id reused by a new row.
	srv.DeleteRows("HSCodes", 19) // 010221, the last row
	r.sync(t, pipeline.Mode{})
	requireFresh(t, r, sc, m)
	srv.AddRows("HSCodes", map[string]any{"hscode": "010229", "description": "Cattle, other", "parent": 5, "level": 6})
	r.sync(t, pipeline.Mode{})
	requireFresh(t, r, sc, m)
}

// TestGristEditReadsNoKeyColumn: editing one row of a table that others
// reference reads that row (and the keys of the rows it refers to, which
// state has), not the key columns of the referenced tables.
func TestGristEditReadsNoKeyColumn(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	r.sync(t, pipeline.Mode{})
	r.cy.counted()
	srv.ResetCounts()
	srv.UpdateRows("HeadingGuides", map[int64]map[string]any{1: {"note": "horses and mules"}})
	srv.UpdateRows("HSCodes", map[int64]map[string]any{10: {"description": "Horses of kind 4, live (edited)"}})
	run := r.sync(t, pipeline.Mode{})
	require.Equal(t, 2, run.Counts.RecordsChanged)
	r.report(t, "row 6, one row of a referenced table and one link-table row edited", run)
	// One SQL page per edited table's rows; HSCodes (19 rows) and Guides
	// keyed by a column are not read (PageSize 7 would take 3 + 1 pages).
	require.Equal(t, 2, srv.Requests("POST", "/sql"), "SQL requests")
	requireFresh(t, r, sc, m)
}

// TestGristRenamesOfEveryKind: renames a real server can produce beyond
// the table — a referenced, keyed table; a key column; a Ref
// column; a column no config line names; a renamed column whose old name a
// new column takes — each followed (or kept under the name the config
// uses) with the graph of a fresh sync at the end and nothing embedded.
func TestGristRenamesOfEveryKind(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	r.sync(t, pipeline.Mode{})
	before := r.graph.Snapshot("_synced_at")

	// The key column and the Ref column of the referenced table, and the
	// table itself: the config names all three, so nothing changes.
	srv.RenameColumn("HSCodes", "hscode", "code")
	srv.RenameColumn("HSCodes", "parent", "parent_code")
	srv.RenameTable("HSCodes", "HS")
	r.emb.reset()
	run := r.sync(t, pipeline.Mode{})
	require.Zero(t, run.Counts.SinkStatements)
	require.Equal(t, before, r.graph.Snapshot("_synced_at"))
	require.Len(t, run.Warnings, 3, "%q", run.Warnings)
	srv.UpdateRows("HeadingGuides", map[int64]map[string]any{1: {"heading": 5}})
	run = r.sync(t, pipeline.Mode{})
	require.Equal(t, 1, run.Counts.RecordsChanged, "a Ref to the renamed table resolves under its old name")

	// The config follows all three.
	sc.Tables[0], sc.KeyColumns = "HS", map[string]string{"HS": "code", "Guides": "guide_id"}
	m.Anchors[0].Table = "HS"
	m.Anchors[0].Attributes[0].Column = "code"
	m.Anchors[0].Links[0].Column = "parent_code"
	m.Anchors[0].Links[0].Name = "PARENT"
	r.configure(t, sc, m)
	run = r.sync(t, pipeline.Mode{})
	require.Equal(t, 19, run.Counts.RecordsRenamed)
	require.Zero(t, run.Counts.RecordsDeleted)
	require.Empty(t, run.Warnings)
	requireFresh(t, r, sc, m)

	// A column no config line names is followed at once (the default
	// mapping names properties after columns); a new column taking a
	// renamed column's old name is a new column.
	srv.RenameColumn("FAQ", "category", "topic")
	srv.AddColumn("FAQ", gristtest.Column{ID: "category"}, map[int64]any{3: "new"})
	run = r.sync(t, pipeline.Mode{})
	require.Empty(t, run.Warnings)
	n, _ := r.graph.Node("faq", "FAQ:3")
	require.Equal(t, "new", n["category"])
	require.Contains(t, n, "topic")
	requireFresh(t, r, sc, m)
	calls, _ := r.emb.reset()
	require.Zero(t, calls)
}

// TestGristRemovedTable: a table the config names, removed in Grist, stops
// the run before anything is deleted (with every table read, see
// TestGristMissingAnchorTable).
func TestGristRemovedTable(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	r := newShapeRig(t, sc, m)
	r.sync(t, pipeline.Mode{})
	before := r.graph.Snapshot("_synced_at")
	srv.RemoveTable("FAQ")
	_, err := r.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	var se *grist.SchemaError
	require.ErrorAs(t, err, &se)
	require.Contains(t, err.Error(), "pipelines[0].sources[0].grist.tables[3]")
	require.Contains(t, err.Error(), "removed from the Grist document")
	require.Equal(t, before, r.graph.Snapshot("_synced_at"))
}

// TestGristMissingAnchorTable: a source reading every table of its
// document and a model whose anchor names a table the document does not
// have (a typo, or a table removed in Grist) stops the run before
// anything is written: a table that is not there is not an empty table.
func TestGristMissingAnchorTable(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	sc, m := shapeSource(srv), shapeModel()
	sc.Tables = nil
	r := newShapeRig(t, sc, m)
	r.sync(t, pipeline.Mode{})
	before := r.graph.Snapshot("_synced_at")
	require.Len(t, r.graph.Nodes("faq"), 8)

	typo := shapeModel()
	typo.Anchors[2].Table = "FAQz"
	r.configure(t, sc, typo)
	for _, mode := range []pipeline.Mode{{}, {Full: true}} {
		_, err := r.p.Run(t.Context(), state.TriggerManual, mode)
		var se *grist.SchemaError
		require.ErrorAs(t, err, &se)
		require.Contains(t, err.Error(), "FAQz")
		require.Contains(t, err.Error(), "pipelines[0].model.anchors[2].table")
		require.Equal(t, before, r.graph.Snapshot("_synced_at"))
	}

	r.configure(t, sc, m)
	srv.RemoveTable("FAQ")
	_, err := r.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	var se *grist.SchemaError
	require.ErrorAs(t, err, &se)
	require.Contains(t, err.Error(), "removed from the Grist document")
	require.Equal(t, before, r.graph.Snapshot("_synced_at"))
}
