package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
)

// FuzzParse feeds arbitrary bytes to Parse, seeded with every testdata file.
// Parse must never panic, and whatever it accepts must satisfy the promises
// of Load: every pipeline has its sections, and the result validates again.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(f, err)
	for _, name := range files {
		data, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("pipelines: [{<<: {name: x}, sources: [{files: {root: ${HOME:-/}}}]}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, "/cfg")
		if err != nil {
			require.Nil(t, c)
			return
		}
		for _, p := range c.Pipelines {
			require.NotNil(t, p.Sink)
			require.NotNil(t, p.Embedder)
			require.NotNil(t, p.Chunking)
		}
		require.NoError(t, c.Validate())
	})
}
