package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStoppedSyncSaysCancelled: a sync stopped by a signal (its context
// cancelled mid-run) was shown `cancelled` in its summary and `status`
// but reported as "1 of the pipelines failed". It says cancelled, once.
func TestStoppedSyncSaysCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The embedding endpoint stops the run at its first request, as a
	// SIGTERM would.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel()
		http.Error(w, "stopping", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "a.md"), []byte("# A\n\nSome text to embed.\n"), 0o644))
	cfg := filepath.Join(dir, "kgsync.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`state: {driver: sqlite, path: state.db}
sink: {type: cypherl, cypherl: {dir: out}}
embedder: {provider: openai, model: m, dimensions: 8, base_url: %q, api_key: k, max_retries: 0}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: docs}}]
`, srv.URL)), 0o644))
	var out, errb bytes.Buffer
	code := run(ctx, []string{"sync", "--config", cfg}, &out, &errb)
	require.NotEqual(t, 0, code)
	t.Logf("stdout: %s\nstderr: %s", out.String(), errb.String())
	require.Contains(t, out.String(), "cancelled")
	require.Contains(t, errb.String(), "cancelled")
	require.NotContains(t, errb.String(), "failed", "stderr: %s", errb.String())
	require.Equal(t, 1, strings.Count(errb.String(), "kgsync:"), "one summing-up line")
}
