package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
)

// rechunkFolder writes n Markdown documents of about size bytes each:
// sections of numbered paragraphs, each document's text its own.
func rechunkFolder(b *testing.B, n, size int) string {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		var sb strings.Builder
		fmt.Fprintf(&sb, "# Document %d\n\n", i)
		for s := 0; sb.Len() < size; s++ {
			fmt.Fprintf(&sb, "## Section %d.%d\n\n", i, s)
			for p := range 4 {
				fmt.Fprintf(&sb, "Paragraph %d of section %d in document %d states rule %d: an importer declares goods of heading %04d "+
					"before arrival, keeps the invoice for %d years and pays duty at rate %d.%d per cent.\n\n", p, s, i, i*1000+s*10+p, (i*7+s)%9999, 3+s%5, s%20, p)
			}
		}
		require.NoError(b, os.WriteFile(filepath.Join(dir, "doc"+strconv.Itoa(i)+".md"), []byte(sb.String()), 0o644))
	}
	return dir
}

// BenchmarkRechunkFolder syncs a generated folder of Markdown documents
// (KGSYNC_BENCH_RECHUNK_MB, default 20 MB, in 100 KB documents) into empty
// state, then changes the chunk size, which re-chunks and re-embeds every
// document: the change's peak heap (above the baseline, sampled every
// 10 ms) is reported beside the first sync's. SQLite state and a CYPHERL
// sink in temporary directories, hashing embedder.
func BenchmarkRechunkFolder(b *testing.B) {
	mb := 20
	if v, err := strconv.Atoi(os.Getenv("KGSYNC_BENCH_RECHUNK_MB")); err == nil && v > 0 {
		mb = v
	}
	root := rechunkFolder(b, mb*10, 100<<10)
	for b.Loop() {
		store, sk := scaleStore(b)
		src, err := files.New("docs", config.FilesSource{Root: root, Anchor: "Document", MaxFileBytes: 64 << 20}, chunker.Formats(), nil)
		require.NoError(b, err)
		p := scalePipeline(b, store, sk, nil, []sources.Source{src}...)
		p.MaxDeleteRatio = 1
		first := measure("first-sync", func() state.Counts { return runScale(b, p) })
		// A chunking change changes the pipeline fingerprint (Build).
		p.Chunking.MaxTokens, p.Fingerprint = 192, 2
		rechunk := measure("chunk-size-change", func() state.Counts { return runScale(b, p) })
		require.Equal(b, first.counts.RecordsNew, rechunk.counts.RecordsChanged, "every document is re-chunked")
		report(b, first.counts.RecordsNew, []phase{first, rechunk})
	}
}
