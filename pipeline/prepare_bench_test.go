package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/corpus"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/state"
)

// hsRows reads the first n rows of the corpus HS table through the CSV
// source, as a first sync lists them.
func hsRows(tb testing.TB, n int) []sources.Record {
	tb.Helper()
	shared, err := corpus.Locate()
	require.NoError(tb, err)
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{
		Path: filepath.Join(shared, "corpus", "tables", "harmonized-system.csv"), Table: "hs_code", Key: "hscode",
		Columns: map[string]string{"parent": "ref:hs_code", "level": "int"}}}}, nil)
	require.NoError(tb, err)
	var recs []sources.Record
	for page, err := range src.Read(context.Background(), "") {
		require.NoError(tb, err)
		recs = append(recs, page.Records...)
		if len(recs) >= n {
			break
		}
	}
	require.GreaterOrEqual(tb, len(recs), n)
	return recs[:n]
}

// rowRunner is a runner of the benchmark's table pipeline (the bench
// tool's CSV model: description embeddable, parent a link) and the new
// items of recs.
func rowRunner(tb testing.TB, recs []sources.Record) (*runner, []item) {
	tb.Helper()
	p := &Pipeline{Name: "tables", Embedder: hashing.New("", 32), Fingerprint: 1,
		Now: func() time.Time { return time.Date(2026, 12, 1, 15, 53, 18, 0, time.UTC) },
		Model: NewModel(&config.Model{Anchors: []config.Anchor{{
			Name: "cn_code", Table: "hs_code", Attributes: []config.Attribute{{Name: "description", Embeddable: true}},
			Links: []config.Link{{Name: "PARENT", Column: "parent", To: "cn_code"}},
		}}})}
	r := &runner{p: p, run: &state.Run{}, log: p.logger()}
	items := make([]item, len(recs))
	for i, rec := range recs {
		h, err := recordHash(rec)
		require.NoError(tb, err)
		items[i] = item{source: "csv", rec: rec, hash: h, class: diff.ClassNew, ord: int64(i)}
	}
	return r, items
}

// BenchmarkBuildRows maps 1,000 table rows and builds their batch and
// state commit (mapRecord, buildBatch: node properties, lexical rows,
// stored props), the prepare step's work per batch of a table besides
// state reads, embedding and rendering; vectors are computed beforehand.
func BenchmarkBuildRows(b *testing.B) {
	ctx := context.Background()
	r, items := rowRunner(b, hsRows(b, 1000))
	vectors := map[uint64][]float32{}
	for _, it := range items {
		out, err := r.mapRecord(ctx, it)
		require.NoError(b, err)
		texts := out.embedTexts()
		vecs, err := r.p.Embedder.Embed(ctx, texts)
		require.NoError(b, err)
		for i, t := range texts {
			vectors[diff.TextHash(t)] = vecs[i]
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		outs := make([]*recordOutput, 0, len(items))
		for _, it := range items {
			out, err := r.mapRecord(ctx, it)
			if err != nil {
				b.Fatal(err)
			}
			outs = append(outs, out)
		}
		if bt, _ := r.buildBatch("csv", outs, vectors); bt.Len() == 0 {
			b.Fatal("empty batch")
		}
	}
}
