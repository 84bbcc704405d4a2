package pipeline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
)

// TestCorpusReadsEveryRecordInKeyOrder: Corpus reads a source's records a
// page at a time (2,000 a page); 4,500 rows span three pages, the last one
// partial, and every row's unit must come once, in the byte order of the
// keys (the order ties are broken in), with its row's text.
func TestCorpusReadsEveryRecordInKeyOrder(t *testing.T) {
	t.Parallel()
	const n = 4500
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("id,question\n")
	for i := range n {
		fmt.Fprintf(&csv, "%d,question %d\n", i, i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "faq.csv"), []byte(csv.String()), 0o644))
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{Path: filepath.Join(dir, "faq.csv"), Table: "faq", Key: "id"}}}, nil)
	require.NoError(t, err)
	b := setup(t, t.TempDir(), 256, 32)
	b.p.Sources = []sources.Source{src}
	b.p.Model = pipeline.NewModel(tariffModelFAQ())
	b.p.BatchSize = 1000
	require.Equal(t, n, b.sync(t, pipeline.Mode{}).RecordsNew)

	c, err := b.p.Corpus(t.Context())
	require.NoError(t, err)
	require.Equal(t, n, len(c.Units), "units")
	want := make([]string, n)
	for i := range n {
		want[i] = strconv.Itoa(i)
	}
	slices.Sort(want) // byte order: "0", "1", "10", "100", …
	for i, u := range c.Units {
		require.Equal(t, "question "+want[i], u.Text, "unit %d", i)
		require.Equal(t, "faq", u.Label)
		require.Equal(t, "question_embedding", u.Property)
		require.Equal(t, u.ID, u.Node)
	}
	require.Empty(t, c.Documents)
}
