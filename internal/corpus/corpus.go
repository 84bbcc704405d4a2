// Package corpus locates the shared test data — real documents and tables
// (corpus/MANIFEST.md) and real Grist captures (docs/grist-samples) — for
// tests, benchmarks and the bench tool. It uses "../shared" beside the
// repository when it is there (the project's machines and CI), and the copy
// in testdata/shared otherwise, so that `go test ./...` runs from a fresh
// clone. The data is read-only: a test that edits a file copies it into
// t.TempDir() first.
package corpus

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Locate returns the shared data directory (holding corpus/ and docs/),
// searching upwards from the working directory for the repository root.
func Locate() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	for _, dir := range []string{filepath.Join(root, "..", "shared"), filepath.Join(root, "testdata", "shared")} {
		if _, err := os.Stat(filepath.Join(dir, "corpus", "MANIFEST.md")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("corpus: neither ../shared nor testdata/shared holds corpus/MANIFEST.md")
}

// RepoRoot returns the directory holding go.mod, searching upwards from the
// working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("corpus: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Shared returns the shared data directory, failing t when it is missing.
func Shared(t testing.TB) string {
	t.Helper()
	dir, err := Locate()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Dir returns the corpus directory.
func Dir(t testing.TB) string { t.Helper(); return filepath.Join(Shared(t), "corpus") }

// Docs returns the corpus's docs directory.
func Docs(t testing.TB) string { t.Helper(); return filepath.Join(Dir(t), "docs") }

// Tables returns the corpus's tables directory.
func Tables(t testing.TB) string { t.Helper(); return filepath.Join(Dir(t), "tables") }

// Doc returns the path of one document, e.g. Doc(t, "rfc7231.txt").
func Doc(t testing.TB, name string) string { t.Helper(); return filepath.Join(Docs(t), name) }

// Table returns the path of one table, e.g. Table(t, "harmonized-system.csv").
func Table(t testing.TB, name string) string { t.Helper(); return filepath.Join(Tables(t), name) }

// GristSample returns the path of a Grist capture under
// docs/grist-samples, e.g. GristSample(t, "real/README.md").
func GristSample(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(Shared(t), "docs", "grist-samples", rel)
}

// DocPath returns the path of docs/<name>: in the shared data directory
// when it holds the file, else among the repository's documents waiting
// for the shared corpus (testdata/corpus-new; testdata/shared stays an
// exact copy of the shared corpus).
func DocPath(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Docs(t), name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if q, ok := RepoCopy(name); ok {
		return q
	}
	return p
}

// RepoCopy returns the path of docs/<name> among the repository's
// documents waiting for the shared corpus (testdata/corpus-new/docs, listed
// in its MANIFEST.md) when the file is there.
func RepoCopy(name string) (string, bool) {
	root, err := RepoRoot()
	if err != nil {
		return "", false
	}
	p := filepath.Join(root, "testdata", "corpus-new", "docs", name)
	if _, err := os.Stat(p); err != nil {
		return "", false
	}
	return p, true
}
