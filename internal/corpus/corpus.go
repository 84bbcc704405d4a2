// Package corpus locates the shared test corpus (real documents and tables,
// see ../shared/corpus/MANIFEST.md) for tests and benchmarks. The corpus sits
// beside the repository ("../shared/corpus" from the directory holding
// go.mod) on every machine of the project and in CI, so a missing corpus
// fails the test; it is never skipped. The corpus is read-only: a test that
// edits a file copies it into t.TempDir() first.
package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the corpus directory, failing t when it cannot be found.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("corpus: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("corpus: go.mod not found above the test directory")
		}
		dir = parent
	}
	c := filepath.Join(dir, "..", "shared", "corpus")
	if _, err := os.Stat(filepath.Join(c, "MANIFEST.md")); err != nil {
		t.Fatalf("corpus: the shared test corpus must sit beside the repository: %v", err)
	}
	return c
}

// Docs returns the corpus's docs directory.
func Docs(t testing.TB) string { t.Helper(); return filepath.Join(Dir(t), "docs") }

// Tables returns the corpus's tables directory.
func Tables(t testing.TB) string { t.Helper(); return filepath.Join(Dir(t), "tables") }

// Doc returns the path of one document, e.g. Doc(t, "rfc7231.txt").
func Doc(t testing.TB, name string) string { t.Helper(); return filepath.Join(Docs(t), name) }

// Table returns the path of one table, e.g. Table(t, "harmonized-system.csv").
func Table(t testing.TB, name string) string { t.Helper(); return filepath.Join(Tables(t), name) }
