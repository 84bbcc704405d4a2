package pipeline_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/state"
)

// BenchmarkFirstSyncMemgraph is the first sync of the corpus HS table
// scaled to KGSYNC_BENCH_ROWS rows (default 10,000) into the Memgraph sink,
// over the Bolt test server, whose every UNWIND query takes
// KGSYNC_BENCH_BOLT_MS milliseconds (default 5): the time a Memgraph spends
// merging a few hundred rows, which the test server does not. The writer's
// sink stage waits for it while the state stage commits the next batch.
func BenchmarkFirstSyncMemgraph(b *testing.B) {
	n := 10_000
	if s := os.Getenv("KGSYNC_BENCH_ROWS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	latency := 5 * time.Millisecond
	if s := os.Getenv("KGSYNC_BENCH_BOLT_MS"); s != "" {
		ms, _ := strconv.Atoi(s)
		latency = time.Duration(ms) * time.Millisecond
	}
	path := scaledHSCodes(b, n)
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: path, Table: "hs_code", Key: "hscode",
		Columns: map[string]string{"parent": "ref:hs_code", "level": "int"}}}}, nil)
	require.NoError(b, err)
	for b.Loop() {
		srv := bolttest.Start(b)
		srv.EmulateSchema()
		srv.Delay(func(q bolttest.Query) time.Duration {
			if strings.HasPrefix(strings.TrimSpace(q.Text), "UNWIND") {
				return latency
			}
			return 0
		})
		mg, err := memgraph.New(b.Context(), memgraph.Config{URI: srv.URI(), Pipeline: "scale", MaxRetries: 3}, nil)
		require.NoError(b, err)
		p := scalePipeline(b, scaleState(b), mg, csvModel, src)
		ph := measure("first", func() state.Counts { return runScale(b, p) })
		require.Equal(b, n, ph.counts.RecordsNew)
		report(b, n, []phase{ph})
		b.ReportMetric(float64(n)/ph.seconds, "rows/s")
		require.NoError(b, mg.Close(context.WithoutCancel(b.Context())))
		srv.Close()
	}
}
