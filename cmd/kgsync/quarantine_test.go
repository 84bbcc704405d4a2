package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartialSyncExitCodeAndStatus: a document that cannot be read is
// quarantined; sync exits 3 with status "partial" in its JSON, the other
// documents are synced, and `kgsync status` names the record and why.
func TestPartialSyncExitCodeAndStatus(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	bad := filepath.Join(filepath.Dir(cfg), "docs", "broken.md")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Repeat("- ", 5000)+"x\n"), 0o644))
	code, out, errOut := kgsync(t, "sync", "docs", "--config", cfg, "--json")
	require.Equal(t, exitPartial, code, errOut)
	var j runJSON
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &j), out)
	require.Equal(t, "partial", j.Status)
	require.Equal(t, 1, j.Records.Quarantined)
	require.Equal(t, 3, j.Records.New, "the good documents are synced")
	require.Contains(t, errOut, "docs (1 quarantined)")
	require.Equal(t, 1, strings.Count(errOut, "partial: docs"), "said once: %s", errOut)

	code, out, errOut = kgsync(t, "status", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "partial")
	require.Contains(t, out, "broken.md")
	require.Contains(t, out, "too complex (list or quote nesting")
	code, out, _ = kgsync(t, "status", "docs", "--config", cfg, "--json")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"quarantined":"broken.md"`)

	// Fixed: the next run writes it and leaves quarantine.
	require.NoError(t, os.WriteFile(bad, []byte("# Fixed\n\nNow fine.\n"), 0o644))
	code, out, errOut = kgsync(t, "sync", "docs", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"status":"succeeded"`)
	require.Contains(t, out, `"quarantined":0`)
}
