package chunker_test

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

var updateVersion = flag.Bool("update-version", false, "rewrite testdata/version.txt with chunker.Version and the corpus output's hash")

// TestVersionFollowsOutput: chunker.Version is in every pipeline's config
// fingerprint, so state built by an older chunker is rechunked once. This
// test records a hash of what Parse and Split make of every corpus document
// (element trees, citations, noise, terms, cross-references, chunks) next to the Version that made
// it: output that changes under the same Version fails here, so a change
// to parsing or grouping cannot land without the bump that rechunks the
// documents users already synced. After bumping, run
// `go test ./chunker -run TestVersionFollowsOutput -update-version`.
func TestVersionFollowsOutput(t *testing.T) {
	h := sha256.New()
	for _, name := range corpusDocs {
		root := parseDoc(t, name)
		fmt.Fprintf(h, "doc %s\n", name)
		for _, n := range root.Noise {
			fmt.Fprintf(h, "noise %q %q %d\n", n.Reason, n.Text, n.Line)
		}
		hashTree(h, root, "")
		// Terms and cross-references become graph nodes and edges
		// (pipeline/docgraph.go) from the same parse: a change to them
		// needs the bump as much as a change to the tree.
		for _, term := range chunker.Terms(root) {
			fmt.Fprintf(h, "term %q %q %q\n", term.Name, term.Definition, term.Address)
		}
		refs := chunker.CrossRefs(root)
		resolved, _ := chunker.Resolve(root, refs)
		for i, r := range refs {
			fmt.Fprintf(h, "ref %q %q %q %q\n", r.From, r.Text, r.Target, resolved[i])
		}
		chunks, err := chunker.Split(name, root, testOpts)
		require.NoError(t, err)
		for _, c := range chunks {
			fmt.Fprintf(h, "chunk %q %q %q %q %q %q %q\n", c.ID, c.Address, c.Context, c.Text, c.Parent, c.Citation, strings.Join(c.Elements, "|"))
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	path := filepath.Join("testdata", "version.txt")
	if *updateVersion {
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("%d %s\n", chunker.Version, sum)), 0o644))
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	fields := strings.Fields(string(raw))
	require.Len(t, fields, 2, "%s: \"VERSION SHA256\"", path)
	version, err := strconv.Atoi(fields[0])
	require.NoError(t, err)
	if sum != fields[1] {
		require.NotEqual(t, version, chunker.Version,
			"Parse or Split output changed on the corpus under chunker.Version %d: bump chunker.Version (chunker/chunker.go) so synced documents are rechunked, then run go test ./chunker -run TestVersionFollowsOutput -update-version", version)
		t.Fatalf("chunker.Version is %d, %s records %d: run go test ./chunker -run TestVersionFollowsOutput -update-version", chunker.Version, path, version)
	}
	require.Equal(t, version, chunker.Version, "%s records the output of chunker.Version %d; the output is unchanged, so the bump is not needed (or rewrite the file)", path, version)
}

func hashTree(h hash.Hash, e *chunker.Element, path string) {
	fmt.Fprintf(h, "el %q %s %q %q %q %q %d", path, e.Kind, e.Address, e.Citation, e.Title, e.Text, e.HeaderRows)
	for _, l := range e.Links {
		fmt.Fprintf(h, " link %q %q", l.Text, l.Href)
	}
	h.Write([]byte{'\n'})
	for _, c := range e.Children {
		hashTree(h, c, path+chunker.PathSep+c.Address)
	}
}
