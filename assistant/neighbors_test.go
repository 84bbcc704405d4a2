package assistant_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/internal/crashtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// TestNeighborsStateIsTheGraph replays the CYPHERL files the quick start
// wrote into an in-memory graph and checks that neighbors from state gives,
// for every node of the docs pipeline (documents, sections, elements,
// chunks, terms) and for a sample of the tables pipeline's rows and
// chunks, the edges the graph holds: the same types, directions and other
// ends and the same public properties.
func TestNeighborsStateIsTheGraph(t *testing.T) {
	_, cs := serve(t)
	dir := filepath.Dir(quickstart(t))
	for _, name := range []string{"docs", "tables"} {
		t.Run(name, func(t *testing.T) {
			compareNeighbors(t, cs, filepath.Join(dir, ".kgsync", "cypherl", name), name)
		})
	}
}

// TestNeighborsStateMandatory is TestNeighborsStateIsTheGraph for the
// MANDATORY edges of a pipeline's mandatory list.
func TestNeighborsStateMandatory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "docs"), os.DirFS(filepath.Join("..", "examples", "quickstart", "docs"))))
	cfg := `state: {driver: sqlite, path: .kgsync/state.db}
sink: {type: cypherl, cypherl: {dir: .kgsync/cypherl}}
embedder: {provider: hashing, dimensions: 64}
pipelines:
  - name: docs
    sources:
      - name: docs
        files: {root: docs, include: ["openchain-security-specification-1.1.md"]}
    mandatory:
      - {from: "openchain-security-specification-1.1.md 2.9", to: "openchain-security-specification-1.1.md 3.1", note: "read together"}
`
	path := filepath.Join(dir, "kgsync.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	ctx := context.Background()
	_, store, ps, err := build(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = ps[0].Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.NoError(t, ps[0].Sink.Close(ctx))
	srv, err := assistant.New(assistant.Options{Pipelines: ps})
	require.NoError(t, err)
	n := compareNeighbors(t, connect(t, srv), filepath.Join(dir, ".kgsync", "cypherl", "docs"), "docs")
	require.Equal(t, 2, n["MANDATORY"], "MANDATORY edge ends")
}

// compareNeighbors replays the CYPHERL files of dir and compares, for the
// nodes of pipeline name (every node of a document pipeline, a sample of a
// table pipeline's), neighbors from state with the graph's edges. It
// returns how many node ends of each edge type it compared.
func compareNeighbors(t *testing.T, cs *mcp.ClientSession, dir, name string) map[string]int {
	t.Helper()
	g, _, err := crashtest.ReplayDir(dir, 8) // the default target, 3.8
	require.NoError(t, err)
	want := map[string][]string{}
	labels := map[string]map[string]bool{}
	for e, props := range g.Edges {
		require.Equal(t, name, e.From.Pipeline)
		public := map[string]any{}
		for k, v := range props {
			if !strings.HasPrefix(k, "_") {
				public[k] = v
			}
		}
		want[e.From.ID] = append(want[e.From.ID], fmt.Sprintf("%s out %s %s", e.Type, e.To.ID, propText(t, public)))
		want[e.To.ID] = append(want[e.To.ID], fmt.Sprintf("%s in %s %s", e.Type, e.From.ID, propText(t, public)))
	}
	var ids []string
	for n := range g.Nodes {
		if n.Pipeline != name || n.ID == "" {
			continue
		}
		if labels[n.Label] == nil {
			labels[n.Label] = map[string]bool{}
		}
		labels[n.Label][n.ID] = true
		ids = append(ids, n.ID)
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)
	if labels["Document"] != nil {
		for _, l := range []string{"Section", "Element", "Chunk", "Term"} {
			require.NotEmpty(t, labels[l], "the documents have no %s", l)
		}
	} else {
		// Every row of the tables is too many calls: every 40th node,
		// rows with links by name, and a row's chunk.
		var sample []string
		for i, id := range ids {
			if i%40 == 0 {
				sample = append(sample, id)
			}
		}
		ids = append(sample, "hs_code:0701", "hs_code:07", "guide:24")
		for id := range labels["Chunk"] {
			ids = append(ids, id)
			break
		}
	}
	checked := map[string]int{}
	types := map[string]int{}
	for _, id := range ids {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "neighbors",
			Arguments: map[string]any{"pipeline": name, "id": id, "limit": 200}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%s: %s", id, toolText(res))
		var out assistant.NeighborsOutput
		decode(t, res, &out)
		require.Equal(t, "state", out.From)
		w := want[id]
		require.Equal(t, len(w), out.Total, "%s: edges on the graph %v, from state %v", id, w, out.Edges)
		if out.Total > len(out.Edges) {
			continue
		}
		var got []string
		for _, e := range out.Edges {
			got = append(got, fmt.Sprintf("%s %s %s %s", e.Type, e.Direction, e.ID, propText(t, e.Props)))
			types[e.Type]++
		}
		require.ElementsMatch(t, w, got, "%s (%s)", id, out.Label)
		checked[out.Label]++
	}
	t.Logf("%s: nodes checked by label %v, edge ends by type %v", name, checked, types)
	return types
}

// propText is an edge's public properties as sorted JSON; {} for none.
func propText(t *testing.T, props map[string]any) string {
	t.Helper()
	if props == nil {
		props = map[string]any{}
	}
	b, err := json.Marshal(props)
	require.NoError(t, err)
	return string(b)
}

func decode(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, out))
}
