package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/bolttest"
)

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestValidateOnline: validate --online asks each Memgraph sink's server
// for its version and probes edge properties; a bare Memgraph binary
// (edge properties off) fails a pipeline of documents with the flag named.
func TestValidateOnline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, bare := bolttest.Start(t), bolttest.Start(t)
	good.EmulateMemgraph(bolttest.Memgraph{Version: "3.8.1"})
	bare.EmulateMemgraph(bolttest.Memgraph{NoEdgeProperties: true})
	cfg := func(uri string) string {
		return writeFile(t, filepath.Join(dir, "kgsync-"+filepath.Base(uri)+".yaml"), `
state: {driver: sqlite, path: state.db}
sink: {type: memgraph, memgraph: {uri: "`+uri+`"}}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: .}}]
`)
	}
	code, out, errOut := kgsync(t, "validate", "--online", "--config", cfg(good.URI()))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "server: Memgraph 3.8.1, edge properties on")

	code, out, errOut = kgsync(t, "validate", "--online", "--config", cfg(bare.URI()))
	require.Equal(t, 3, code, out)
	require.Contains(t, errOut, "--storage-properties-on-edges=true")
	require.Contains(t, errOut, "CROSS_REF (_key, text)")
}

// TestValidateSharedIndex: two pipelines writing to one graph with
// different embedding dimensions would share chunk_embedding; validate
// refuses the config.
func TestValidateSharedIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "kgsync.yaml"), `
state: {driver: sqlite, path: state.db}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: .}}]
  - name: more
    embedder: {provider: hashing, dimensions: 32}
    sources: [{name: more, files: {root: .}}]
`)
	code, _, errOut := kgsync(t, "validate", "--config", path)
	require.Equal(t, 3, code)
	require.Contains(t, errOut, `pipelines "docs" and "more" share vector index name chunk_embedding`)
}
