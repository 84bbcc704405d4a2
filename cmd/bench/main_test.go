package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgsync/kgsync/internal/corpus"
)

// TestParseDims checks -dims: lengths in the order given, repeats
// dropped, anything outside 1..65535 refused.
func TestParseDims(t *testing.T) {
	valid := map[string][]int{
		"384":               {384},
		"384,1536":          {384, 1536},
		" 1536 , 384 ,1536": {1536, 384},
		"1,65535":           {1, 65535},
	}
	for in, want := range valid {
		got, err := parseDims(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseDims(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "65536", "-384", "384,", "384;1536", "big"} {
		if got, err := parseDims(in); err == nil {
			t.Errorf("parseDims(%q) = %v, want an error", in, got)
		}
	}
}

// TestEnvDims syncs one corpus document through the pipeline table's
// environment at 1,536 dimensions and finds the chunks' vector index of
// that dimension in the CYPHERL output.
func TestEnvDims(t *testing.T) {
	shared, err := corpus.Locate()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := newEnv(ctx, filepath.Join(shared, "corpus", "docs"), []string{"rfc7239.txt"}, 1536)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	if got := e.p.Embedder.Dimensions(); got != 1536 {
		t.Fatalf("embedder dimensions %d, want 1536", got)
	}
	c, _, err := e.sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.ChunksEmbedded == 0 {
		t.Fatalf("no chunk embedded: %+v", c)
	}
	if err := e.p.Sink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = filepath.WalkDir(filepath.Join(e.dir, "cypherl"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 1536,"
	if !strings.Contains(out.String(), want) {
		t.Errorf("the CYPHERL output has no %s", want)
	}
}
