package pipeline_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/sources/httpapi"
)

// TestRefFromCSVReachesAnHTTPRecord: every source keys a table row
// "<table>:<key>", http records too, so a ref:ticket column of a CSV table
// points at the API's ticket 8 itself. http records used to get the bare
// key ("8"), and the edge went to a second, placeholder node "ticket:8".
func TestRefFromCSVReachesAnHTTPRecord(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"items": []map[string]any{
			{"id": 8, "subject": "Printer on fire"}, {"id": 9, "subject": "Paper jam"}}})
	}))
	defer api.Close()
	tickets, err := httpapi.New("api", httpapi.Config{URL: api.URL, Records: ".items[]", Key: ".id", Anchor: "ticket"}, nil)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "comment.csv"), []byte("id,ticket,text\n1,8,Still burning\n2,9,Cleared\n"), 0o644))
	comments, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: filepath.Join(dir, "comment.csv"),
		Table: "comment", Key: "id", Columns: map[string]string{"ticket": "ref:ticket"}}}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{comments, tickets}
	b.sync(t, pipeline.Mode{})

	require.ElementsMatch(t, []string{"ticket:8", "ticket:9"}, b.graph.Nodes("ticket"), "one node per ticket, no placeholder beside it")
	n, ok := b.graph.Node("ticket", "ticket:8")
	require.True(t, ok)
	require.Equal(t, "Printer on fire", n["subject"])
	require.Nil(t, n[pipeline.PropPlaceholder])
	var edges int
	for _, e := range b.graph.Edges() {
		if e.Type == "TICKET" {
			edges++
			require.Equal(t, "ticket", e.To.Label)
			require.Contains(t, []sink.NodeRef{{Label: "ticket", ID: "ticket:8"}, {Label: "ticket", ID: "ticket:9"}}, e.To)
		}
	}
	require.Equal(t, 2, edges)
}
