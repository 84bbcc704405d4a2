package pipeline_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/state"
)

var csvModel = &config.Model{Anchors: []config.Anchor{{
	Name: "cn_code", Table: "hs_code", Attributes: []config.Attribute{{Name: "description", Embeddable: true}},
	Links: []config.Link{{Name: "PARENT", Column: "parent", To: "cn_code"}},
}}}

// BenchmarkScaleCSV syncs the corpus HS table scaled to KGSYNC_BENCH_ROWS
// rows (default 100,000) from a CSV file: a bare read, the first sync and a
// no-op re-sync.
func BenchmarkScaleCSV(b *testing.B) {
	n := 100_000
	if s := os.Getenv("KGSYNC_BENCH_ROWS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	path := scaledHSCodes(b, n)
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: path, Table: "hs_code", Key: "hscode",
		Columns: map[string]string{"parent": "ref:hs_code", "level": "int"}}}}, nil)
	require.NoError(b, err)
	phaseOnly := os.Getenv("KGSYNC_BENCH_PHASE")
	for b.Loop() {
		store, sk := scaleStore(b)
		p := scalePipeline(b, store, sk, csvModel, src)
		var phases []phase
		if phaseOnly == "" || phaseOnly == "read" {
			phases = append(phases, measure("read", func() (c state.Counts) { return drain(b, src) }))
		}
		phases = append(phases, measure("first", func() state.Counts { return runScale(b, p) }))
		if phaseOnly == "" || phaseOnly == "noop" {
			phases = append(phases, measure("noop", func() state.Counts { return runScale(b, p) }))
		}
		report(b, n, phases)
	}
}

func benchBatch() int {
	if s := os.Getenv("KGSYNC_BENCH_BATCH"); s != "" {
		n, _ := strconv.Atoi(s)
		return n
	}
	return config.DefaultPipelineBatchSize
}
