package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgsync/kgsync/config"
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

// TestConfigDims checks that the scale tables' and the peer scenarios'
// configurations ask for the vector length they are given.
func TestConfigDims(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hs.csv")
	if err := os.WriteFile(file, []byte("id,hscode,description,parent,level\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dims := range []int{384, 1536} {
		for name, yaml := range map[string]string{
			"csv":   csvConfig(dir, file, dims),
			"grist": gristConfig(dir, "http://127.0.0.1:1", true, dims),
			"files": docsConfig(dir, dir, dims),
		} {
			c, err := config.Parse([]byte(yaml), dir)
			if err != nil {
				t.Fatalf("%s at %d dims: %v\n%s", name, dims, err, yaml)
			}
			if got := c.Pipelines[0].Embedder.Dimensions; got != dims {
				t.Errorf("%s: embedder dimensions %d, want %d", name, got, dims)
			}
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

// TestScenarioTable checks the per-scenario table: a row per scenario in
// the order of edit.py's steps, a column per system.
func TestScenarioTable(t *testing.T) {
	cells := make([][]string, 2)
	for j := range peerScenarios {
		cells[0] = append(cells[0], fmt.Sprint(j))
		cells[1] = append(cells[1], fmt.Sprint(10*j))
	}
	var b strings.Builder
	scenarioTable(&b, []string{"kgsync (384 dims)", "LangChain.js"}, cells)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2+len(peerScenarios) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 2+len(peerScenarios), b.String())
	}
	for _, want := range []string{
		"| scenario | kgsync (384 dims) | LangChain.js |",
		"| --- | --- | --- |",
		"| s1: first index | 0 | 0 |",
		"| s8b: the original rfc7231 removed | 8 | 80 |",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in:\n%s", want, b.String())
		}
	}
}
