package grist_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// BenchmarkFullRead100k reads 100,000 rows: the HS table repeated with
// suffixed codes, parent a Ref to the previous copy's row id.
func BenchmarkFullRead100k(b *testing.B) { benchFullRead(b, nil) }

// BenchmarkFullReadKeyed100k is BenchmarkFullRead100k keyed by hscode: Refs
// resolve to codes and repeated codes are looked for. It reports the /sql
// requests a page of rows costs.
func BenchmarkFullReadKeyed100k(b *testing.B) {
	benchFullRead(b, map[string]string{"HS": "hscode"})
}

func benchFullRead(b *testing.B, keys map[string]string) {
	f, err := os.Open(corpus(b, "harmonized-system.csv"))
	require.NoError(b, err)
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	require.NoError(b, err)
	recs = recs[1:]
	s := gristtest.New(b)
	s.AddTable("HS", gristtest.Column{ID: "section"}, gristtest.Column{ID: "hscode"}, gristtest.Column{ID: "description"},
		gristtest.Column{ID: "parent", Type: "Ref:HS"}, gristtest.Column{ID: "level", Type: "Int"})
	rows := make([]map[string]any, 0, 100000)
	for i := 0; len(rows) < 100000; i++ {
		r := recs[i%len(recs)]
		rows = append(rows, map[string]any{"section": r[0], "hscode": fmt.Sprintf("%s-%d", r[1], i/len(recs)),
			"description": r[2], "parent": int64(max(1, i)), "level": int64(len(r[1]))})
	}
	s.AddRows("HS", rows...)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	total := 0
	s.ResetCounts()
	for b.Loop() {
		src, err := grist.New("bench", grist.Config{Server: s.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey, PageSize: 1000,
			KeyColumns: keys}, nil)
		require.NoError(b, err)
		l := readAll(b, src, "")
		require.NoError(b, l.err)
		require.Len(b, l.records, 100000)
		total += len(l.records)
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "rows/s")
	b.ReportMetric(float64(s.Requests(http.MethodPost, "/sql"))/(float64(total)/1000), "sql/page")
}
