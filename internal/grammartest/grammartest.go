// Package grammartest parses Cypher statements with Memgraph's own
// openCypher grammar of a release tag: it takes the grammar files
// (src/query/frontend/opencypher/grammar/*.g4) from a bare clone of
// github.com/memgraph/memgraph, generates a Java parser with the antlr4
// tool, compiles it with Check.java and runs it. Nothing generated is
// committed: the parser is built under the user's cache directory, once
// per tag.
//
// Its tests are built with the tag grammar (go test -tags grammar
// ./internal/grammartest), so the default suite neither runs nor skips
// them; with the tag they need KGSYNC_TEST_MEMGRAPH_REPO naming the bare
// clone (`git clone --bare https://github.com/memgraph/memgraph`) and
// antlr4, javac and java installed (Debian: apt-get install antlr4
// default-jdk-headless), and fail without them.
package grammartest

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

//go:embed Check.java
var checkJava []byte

// RepoEnv names the environment variable holding the bare clone's path.
const RepoEnv = "KGSYNC_TEST_MEMGRAPH_REPO"

// runtimeJar is the ANTLR runtime Debian's antlr4 package installs.
const runtimeJar = "/usr/share/java/antlr4-runtime.jar"

var grammarFiles = []string{"Cypher.g4", "CypherLexer.g4", "MemgraphCypher.g4", "MemgraphCypherLexer.g4", "UnicodeCategories.g4"}

// Parser parses statements with one tag's grammar.
type Parser struct {
	Tag string
	dir string // compiled classes
}

// Open returns the parser of tag (e.g. "v3.4.0"), building it when the
// cache has none; it fails t when the repository or the tools are
// missing or the build fails.
func Open(t testing.TB, tag string) *Parser {
	t.Helper()
	repo := os.Getenv(RepoEnv)
	if repo == "" {
		t.Fatalf("%s is not set: no Memgraph repository to take the grammar from", RepoEnv)
	}
	for _, tool := range []string{"antlr4", "javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed", tool)
		}
	}
	if _, err := os.Stat(runtimeJar); err != nil {
		t.Fatalf("no ANTLR runtime at %s", runtimeJar)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "kgsync-memgraph-grammar", tag)
	classes := filepath.Join(dir, "classes")
	if _, err := os.Stat(filepath.Join(classes, "Check.class")); err == nil {
		return &Parser{Tag: tag, dir: classes}
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range grammarFiles {
		out, err := exec.Command("git", "-C", repo, "show", tag+":src/query/frontend/opencypher/grammar/"+f).Output()
		if err != nil {
			if f == "UnicodeCategories.g4" {
				continue
			}
			t.Fatalf("git show %s:%s: %v", tag, f, err)
		}
		if err := os.WriteFile(filepath.Join(src, f), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "Check.java"), checkJava, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("antlr4", "-Dlanguage=Java", "MemgraphCypherLexer.g4", "MemgraphCypher.g4")
	javas, _ := filepath.Glob(filepath.Join(src, "*.java"))
	tmp := classes + ".tmp"
	_ = os.RemoveAll(tmp)
	run("javac", append([]string{"-nowarn", "-cp", runtimeJar, "-d", tmp}, javas...)...)
	if err := os.Rename(tmp, classes); err != nil {
		t.Fatal(err)
	}
	return &Parser{Tag: tag, dir: classes}
}

// Check parses each statement (one line, without its ';') and returns,
// per statement, nil or the grammar's first syntax error.
func (p *Parser) Check(t testing.TB, stmts []string) []error {
	t.Helper()
	var in bytes.Buffer
	for _, s := range stmts {
		if strings.ContainsAny(s, "\n\r") {
			t.Fatalf("statement spans lines: %.80s", s)
		}
		in.WriteString(s)
		in.WriteByte('\n')
	}
	cmd := exec.Command("java", "-cp", runtimeJar+string(os.PathListSeparator)+p.dir, "Check")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s parser: %v", p.Tag, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(stmts) {
		t.Fatalf("%s parser: %d answers for %d statements", p.Tag, len(lines), len(stmts))
	}
	errs := make([]error, len(stmts))
	for i, l := range lines {
		if l != "ok" {
			errs[i] = fmt.Errorf("%s: %s", p.Tag, strings.TrimPrefix(l, "error: "))
		}
	}
	return errs
}
