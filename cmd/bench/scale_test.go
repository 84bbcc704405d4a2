package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgsync/kgsync/config"
)

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
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("no line %q in:\n%s", want, b.String())
		}
	}
}

// TestMedianOf checks the pipeline table's time cell: the median, then
// every run in the order run (the runs themselves left in that order).
func TestMedianOf(t *testing.T) {
	ds := []time.Duration{3 * time.Millisecond, time.Millisecond, 2*time.Millisecond + 400*time.Microsecond}
	if got, want := medianOf(ds), "2ms (3ms, 1ms, 2ms)"; got != want {
		t.Errorf("medianOf = %q, want %q", got, want)
	}
	if ds[0] != 3*time.Millisecond {
		t.Errorf("medianOf sorted its argument: %v", ds)
	}
}
