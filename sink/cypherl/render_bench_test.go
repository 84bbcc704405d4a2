package cypherl

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/sink"
)

// rowTexts are table-row descriptions of several scripts and escapes.
var rowTexts = []string{
	"Horses, asses, mules and hinnies; live",
	"Meat of bovine animals, fresh or chilled: carcasses & half-carcasses",
	`Vehicles "other than" railway <or> tramway rolling-stock`,
	"Лошади, ослы, мулы и лошаки живые",
	"Conserves, côtes et légumes à l'huile",
	"Line one\nline two\twith a tab",
	"Machinery – parts (n.e.s.) … 10% ≥ 5 µm",
}

// rowBatch is a batch of n table rows as a first sync writes them: each
// row's node with its attributes, bookkeeping properties and a
// dims-dimensional hashing vector, a placeholder for its parent, the
// PARENT edge and its prune.
func rowBatch(tb testing.TB, n, dims int) *sink.Batch {
	tb.Helper()
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s %d", rowTexts[i%len(rowTexts)], i/len(rowTexts))
	}
	vecs, err := hashing.New("", dims).Embed(context.Background(), texts)
	require.NoError(tb, err)
	b := &sink.Batch{}
	for i, text := range texts {
		id := fmt.Sprintf("hs_code:%06d", i)
		parent := fmt.Sprintf("hs_code:%04d", i/10)
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: "cn_code", ID: parent,
			Props: map[string]any{"_placeholder": true}, CreateOnly: true})
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: "cn_code", ID: id, Props: map[string]any{
			"section": "XVI", "hscode": id[8:], "description": text, "parent": parent[8:], "level": int64(6),
			"_source": "csv", "_pipeline": "tables", "_key": id, "_hash": fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15),
			"_synced_at": "2026-12-01T15:53:18Z", "_placeholder": nil, "description_embedding": vecs[i],
			"_lex": "hors ass mule and hinni live",
		}})
		from, to := sink.NodeRef{Label: "cn_code", ID: id}, sink.NodeRef{Label: "cn_code", ID: parent}
		b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: "PARENT", From: from, To: to})
		b.EdgePrunes = append(b.EdgePrunes, sink.EdgePrune{Type: "PARENT", From: from, ToLabel: "cn_code", Keep: []string{parent}})
	}
	return b
}

// BenchmarkRenderRows renders a batch of 1,000 table rows with 32-dimension
// vectors into CYPHERL lines (sink.Statements and the literals), as the
// run's prepare step does for every batch of a table.
func BenchmarkRenderRows(b *testing.B) {
	s, err := New(b.TempDir(), "tables", sink.Memgraph)
	require.NoError(b, err)
	batch := rowBatch(b, 1000, 32)
	b.ReportAllocs()
	for b.Loop() {
		r, err := s.Render(batch)
		if err != nil {
			b.Fatal(err)
		}
		s.recycle(r.text)
	}
}
