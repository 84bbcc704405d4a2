package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/testlog"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// hostileDocs writes the documents of the reliability review next to two
// good ones: a list nested 10,000 levels, NUL bytes, a paragraph goldmark
// parses in quadratic time, and a one-line base64 blob.
func hostileDocs(t *testing.T) string {
	t.Helper()
	dir := copyCorpus(t, "spdx-2.3-package-information.md", "rfc7239.txt")
	blob := make([]byte, 64<<10)
	for i := range blob {
		blob[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(i*7919+i/3)%64]
	}
	for name, content := range map[string][]byte{
		"deep-list.md": []byte(strings.Repeat("- ", 10000) + "x\n"),
		"nul.txt":      []byte("abc\x00def"),
		"nuls.txt":     make([]byte, 100),
		"links.md":     []byte(strings.Repeat("[a](", 100000)),
		"blob.txt":     blob,
		"controls.txt": []byte("Colour \x1b[31mred\x1b[0m text.\n"),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), content, 0o644))
	}
	return dir
}

// TestHostileDocumentsDoNotStallTheRun: each hostile document is skipped
// with its reason (or, for the blob, chunked in linear time) and the good
// documents beside it are synced in the same run.
func TestHostileDocumentsDoNotStallTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, hostileDocs(t), 512, 64)
	// links.md needs minutes without a timeout; the others take well under a
	// second alone, and 15 s leaves them room on a loaded 2-core machine
	// (at 3 s one of them was skipped there too).
	b.p.DocumentTimeout = 15 * time.Second
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	c := res.Run.Counts
	require.Equal(t, 4, c.RecordsSkipped, "deep-list.md, links.md, nul.txt, nuls.txt")
	require.Equal(t, state.StatusPartial, res.Run.Status)
	qs, err := b.store.QuarantineList(t.Context(), "docs")
	require.NoError(t, err)
	why := map[string]string{}
	for _, q := range qs {
		why[q.Key] = q.Stage + ": " + q.Error
	}
	require.Contains(t, why["deep-list.md"], "parse: parse deep-list.md: parse md: too complex (list or quote nesting")
	require.Contains(t, why["links.md"], "too complex (not parsed and chunked within 15s")
	require.Contains(t, why["nul.txt"], "read: read nul.txt: binary content: NUL byte at offset 3")
	require.Contains(t, why["nuls.txt"], "binary content")
	docs := b.graph.Nodes("Document")
	for _, want := range []string{"docs:spdx-2.3-package-information.md", "docs:rfc7239.txt", "docs:blob.txt", "docs:controls.txt"} {
		require.Contains(t, docs, want)
	}
	for _, skipped := range []string{"deep-list.md", "links.md", "nul.txt", "nuls.txt"} {
		require.NotContains(t, docs, "docs:"+skipped)
	}
	for id, props := range b.graph.Props() {
		if text, ok := props["text"].(string); ok {
			require.NotContains(t, text, "\x00", id.ID)
			require.NotContains(t, text, "\x1b", id.ID)
		}
	}
}

// TestCancelStopsAHostileParse: cancelling a run (SIGTERM) reaches a
// parse that would take minutes; the run stops at once with the
// cancellation, not a skipped record.
func TestCancelStopsAHostileParse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "links.md"), []byte(strings.Repeat("[a](", 200000)), 0o644))
	b := setup(t, dir, 512, 64)
	b.p.DocumentTimeout = time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := b.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, context.Canceled)
	runs, err := b.store.RunList(context.Background(), "docs", 1)
	require.NoError(t, err)
	require.Equal(t, state.StatusCancelled, runs[0].Status, "stopped, not failed")
	n, _ := b.store.RecordList(context.Background(), "docs", "docs")
	require.Empty(t, n, "nothing committed for the cancelled document")
}

// TestMemoryBudgetSkipsADocument: a document whose parse grows the heap
// past Pipeline.DocumentMemory is cancelled and skipped as too complex,
// for its memory; the small one beside it is synced. Not parallel: the
// budget watches the process's heap. The collector is off while it runs,
// so the heap only grows and a parse's growth is what it allocates, seen
// whenever it is sampled, not only when a sample happens to fall between
// two collections.
//
// The big file is 100 Ki one-word paragraphs: its parse allocates from
// the start, over 256 MiB in all (over 2 GiB under -race), so it passes
// the budget within seconds, long before the time budget. rfc7239's
// parse and chunking allocate about 11 MiB; under -race about 50 MiB,
// because sync.Pool then drops a random quarter of what is put back and
// regexp's matchers and backtracking bitmaps are allocated again: hence
// the larger budget under -race (race_test.go).
func TestMemoryBudgetSkipsADocument(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	budget := int64(16 << 20)
	if raceEnabled {
		budget = 128 << 20
	}
	dir := copyCorpus(t, "rfc7239.txt")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "zz-big.txt"), []byte(strings.Repeat("word\n\n", 100<<10)), 0o644))
	b := setup(t, dir, 512, 64)
	b.p.DocumentMemory = budget
	var logs testlog.Buffer
	b.p.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	qs, err := b.store.QuarantineList(t.Context(), "docs")
	require.NoError(t, err)
	why := map[string]string{}
	for _, q := range qs {
		why[q.Key] = q.Stage + ": " + q.Error
	}
	require.Len(t, why, 1, "only the big file is skipped: %v", why)
	require.Contains(t, why["zz-big.txt"], fmt.Sprintf("parse: parse zz-big.txt: too complex (the heap grew by over %d MiB while parsing and chunking it)", budget>>20))
	require.Equal(t, 1, res.Run.Counts.RecordsSkipped)
	require.Contains(t, b.graph.Nodes("Document"), "docs:rfc7239.txt")
	require.NotContains(t, b.graph.Nodes("Document"), "docs:zz-big.txt")
	require.Contains(t, logs.String(), fmt.Sprintf("the heap grew by over %d MiB", budget>>20))
}
