package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCommandsRefuseWhatValidateRejects: an anchor whose table no source
// provides (a typo) is an error of every command that reads or writes
// (sync, plan, resync, status, daemon),
// before anything is written: the graph's files and state stay as the
// last sync left them.
func TestCommandsRefuseWhatValidateRejects(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "tables", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	body, err := os.ReadFile(cfg)
	require.NoError(t, err)
	typo := strings.Replace(string(body), "        - name: faq\n", "        - name: faq\n          table: faqz\n", 1)
	require.NotEqual(t, string(body), typo)
	require.NoError(t, os.WriteFile(cfg, []byte(typo), 0o644))
	dir := filepath.Join(filepath.Dir(cfg), ".kgsync")
	snapshot := func() map[string]int64 {
		out := map[string]int64{}
		require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				out[p] = fi.Size()
			}
			return err
		}))
		return out
	}
	before := snapshot()

	code, out, _ := kgsync(t, "validate", "--config", cfg)
	require.Equal(t, 3, code)
	require.Contains(t, out, "faqz")
	for _, args := range [][]string{{"sync", "tables"}, {"plan", "tables"}, {"resync", "tables", "--full"}, {"status"}} {
		code, _, errOut = kgsync(t, append(args, "--config", cfg)...)
		require.Equal(t, 3, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, `no source of the pipeline has a table "faqz"`, args)
		require.Contains(t, errOut, "kgsync.yaml:", args)
	}
	// The daemon refuses to start (a daemon that started would serve
	// until the context ends, then exit 0).
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var dout, errb bytes.Buffer
	code = run(ctx, []string{"daemon", "--config", cfg, "--listen", "127.0.0.1:0"}, &dout, &errb)
	require.Equal(t, 3, code, errb.String())
	require.Contains(t, errb.String(), `no source of the pipeline has a table "faqz"`)
	require.Equal(t, before, snapshot(), "nothing was written")
}
