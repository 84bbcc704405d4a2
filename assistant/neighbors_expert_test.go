package assistant_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// TestNeighborsExpertMandatoryStateIsTheGraph syncs a reviewed files
// pipeline in which an expert links two elements (mandatory_with) and
// asks neighbors for both ends from state and from Memgraph (a Bolt test
// server answering with the edges the pipeline wrote): both give the
// MANDATORY edge with the properties written, note, source,
// corrected_by and corrected_at.
func TestNeighborsExpertMandatoryStateIsTheGraph(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "log.md"), []byte("# Log\n\n## 1 Keeping\n\n1.1 The operator keeps the inspection log for ten years.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "annex.md"), []byte("# Annex\n\n## 2 Forms\n\n2.1 The incident form lists the widget, the class and the date.\n"), 0o644))
	gs := gristtest.New(t)
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	gs.SetNow(func() time.Time { return clock })
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	src, err := files.New("docs", config.FilesSource{Root: root, Anchor: "Document", MaxFileBytes: 1 << 24}, chunker.Formats(), nil,
		files.WithTextCheck(pipeline.TextCheck))
	require.NoError(t, err)
	rv, err := review.New(review.Config{
		Pipeline: "docs",
		Grist: grist.Config{Server: gs.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
			RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond},
		DocumentsTable: "Documents", ElementsTable: "Elements", Store: store,
		Now: func() time.Time { return clock },
	})
	require.NoError(t, err)
	graph := graphtest.New()
	newPipeline := func() *pipeline.Pipeline {
		return &pipeline.Pipeline{Name: "docs", Sources: []sources.Source{src}, Embedder: hashing.New("hashing-v1", 64), Sink: graph,
			Store: store, Chunking: chunker.Options{MaxTokens: 128, OverlapTokens: 16, Tokenizer: tok},
			BatchSize: 4, MaxDeleteRatio: 1, Review: rv}
	}
	p := newPipeline()
	sync := func() {
		t.Helper()
		res, err := p.Run(ctx, state.TriggerManual, pipeline.Mode{})
		require.NoError(t, err)
		require.Equal(t, state.StatusSucceeded, res.Run.Status, res.Run.Error)
		require.Empty(t, res.Run.Warnings)
	}
	sync()
	rowOf := func(prefix string) int64 {
		t.Helper()
		for id, r := range gs.Table("Elements") {
			if txt, _ := r["parsed_text"].(string); strings.Contains(txt, prefix) {
				return id
			}
		}
		t.Fatalf("no Elements row holds %q", prefix)
		return 0
	}
	logRow, formRow := rowOf("The operator keeps"), rowOf("The incident form")
	clock = clock.Add(time.Hour)
	gs.UpdateRowsAs(gristtest.User{Email: "ann@example.com", Name: "Ann"}, "Elements",
		map[int64]map[string]any{logRow: {"mandatory_with": []any{"L", formRow}, "note": "the form goes with the log"}})
	sync()

	// From Memgraph: the Bolt test server answers the neighbors query with
	// the edges the pipeline wrote.
	srv := bolttest.Start(t)
	srv.Answer(func(q bolttest.Query) (bolttest.Answer, bool) {
		if !strings.Contains(q.Text, "startNode(r) = n AS out") {
			return bolttest.Answer{}, false
		}
		id, _ := q.Params["id"].(string)
		var rows [][]any
		for _, e := range graph.Edges() {
			props := map[string]any{}
			for k, v := range graph.EdgeProps(e) {
				props[k] = v
			}
			switch id {
			case e.From.ID:
				rows = append(rows, []any{e.Type, true, e.To.ID, []any{e.To.Label}, props, "", []any{e.From.Label}})
			case e.To.ID:
				rows = append(rows, []any{e.Type, false, e.From.ID, []any{e.From.Label}, props, "", []any{e.To.Label}})
			}
		}
		return bolttest.Answer{Fields: []string{"type", "out", "id", "labels", "props", "text", "self"}, Rows: rows, Type: "r"}, true
	})
	mg, err := memgraph.New(ctx, memgraph.Config{URI: srv.URI(), Pipeline: "docs"}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mg.Close(ctx) })
	onGraph := newPipeline()
	onGraph.Sink = mg

	// compare checks that the pipeline wrote one MANDATORY edge and that
	// neighbors gives it, with its public properties, at both ends from
	// state and from Memgraph; it returns those properties.
	compare := func() map[string]any {
		t.Helper()
		var mand []graphtest.Edge
		for _, e := range graph.Edges() {
			if e.Type == pipeline.RelMandatory {
				mand = append(mand, e)
			}
		}
		require.Len(t, mand, 1)
		want := map[string]any{}
		for k, v := range graph.EdgeProps(mand[0]) {
			if !strings.HasPrefix(k, "_") {
				want[k] = v
			}
		}
		for _, from := range []string{"state", "graph"} {
			q := p
			if from == "graph" {
				q = onGraph
			}
			a, err := assistant.New(assistant.Options{Pipelines: []*pipeline.Pipeline{q}})
			require.NoError(t, err)
			cs := connect(t, a)
			for _, end := range []struct{ id, dir, other string }{{mand[0].From.ID, "out", mand[0].To.ID}, {mand[0].To.ID, "in", mand[0].From.ID}} {
				var out assistant.NeighborsOutput
				call(t, cs, "neighbors", map[string]any{"id": end.id, "limit": 200}, &out)
				require.Equal(t, from, out.From)
				var got []assistant.Neighbor
				for _, e := range out.Edges {
					if e.Type == pipeline.RelMandatory {
						got = append(got, e)
					}
				}
				require.Len(t, got, 1, "%s, %s: %+v", from, end.id, out.Edges)
				require.Equal(t, end.dir, got[0].Direction)
				require.Equal(t, end.other, got[0].ID)
				require.Equal(t, want, got[0].Props, "%s, %s", from, end.id)
			}
		}
		return want
	}
	props := compare()
	require.Equal(t, "expert", props["source"])
	require.Equal(t, "ann@example.com", props["corrected_by"])
	require.NotEmpty(t, props["corrected_at"])
	require.Equal(t, "the form goes with the log", props["note"])

	// The config asks for the same link, first: the graph keeps one edge,
	// the config's, and so does state.
	p.Mandatory = []pipeline.MandatoryLink{{From: "log.md 1.1", To: "annex.md 2.1", Note: "from the config"}}
	sync()
	require.Equal(t, map[string]any{"note": "from the config"}, compare())
}
