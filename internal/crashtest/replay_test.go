package crashtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDuplicateVectorIndexNotice: from 3.8 a CREATE VECTOR INDEX whose
// name is taken is only a notification, whose title names the label and
// property before 3.11 and the index from 3.11 (Memgraph
// src/query/interpreter.cpp v3.10.0:4680, v3.11.0:4725); before 3.8 it
// fails.
func TestDuplicateVectorIndexNotice(t *testing.T) {
	t.Parallel()
	const create = "CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 3, \"capacity\": 10, \"metric\": \"cos\"}"
	for minor, want := range map[int]string{
		7:  "",
		8:  "Error while creating vector index on label Chunk, property embedding, for more information check the logs.",
		10: "Error while creating vector index on label Chunk, property embedding, for more information check the logs.",
		11: "Error while creating vector index chunk_embedding, for more information check the logs.",
	} {
		g := NewGraphMinor(minor)
		_, err := g.Apply(create)
		require.NoError(t, err, minor)
		_, err = g.Apply(create)
		if want == "" {
			require.ErrorContains(t, err, "Given vector index already exists.", minor)
			continue
		}
		require.NoError(t, err, minor)
		require.Equal(t, []string{want}, g.Notices, minor)
	}
}

// TestParseLiteralFloatNeedsFraction: Memgraph's FloatingLiteral takes a
// '.' with no digits after it only before an exponent (CypherLexer.g4
// v3.0.0:164–167, unchanged to v3.12.0:166–169), so "1." is refused while
// "1.e5", "1.5" and ".5" are floats.
func TestParseLiteralFloatNeedsFraction(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]float64{"1.e5": 1e5, "1.5": 1.5, ".5": 0.5, "-2.5e-3": -2.5e-3} {
		v, err := ParseWholeLiteral(lit)
		require.NoError(t, err, lit)
		require.Equal(t, want, v, lit)
	}
	for _, lit := range []string{"1.", "[1., 2.0]", "-3."} {
		_, err := ParseWholeLiteral(lit)
		require.Error(t, err, lit)
	}
}

// TestReplayDirVersion: ReplayDir and ReplayStream answer like the version
// they are given. A text index with a property list is a syntax error
// before 3.5 and runs from 3.6; a duplicate CREATE VECTOR INDEX fails
// before 3.8 and is a notification from 3.8 on.
func TestReplayDirVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const vec = "CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 3, \"capacity\": 10, \"metric\": \"cos\"};\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000000-schema.cypherl"),
		[]byte("CREATE INDEX ON :`Chunk`(`id`);\nCREATE TEXT INDEX `chunk_lex` ON :`Chunk`(`lex`);\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000001-run.cypherl"), []byte(vec+vec), 0o644))
	for _, replay := range []func(string, int) (*Graph, ReplayStats, error){ReplayDir, ReplayStream} {
		_, _, err := replay(dir, 4)
		require.ErrorContains(t, err, "no property list before 3.5")
		_, _, err = replay(dir, 7)
		require.ErrorContains(t, err, "Given vector index already exists.")
		for _, minor := range []int{8, 12} {
			g, st, err := replay(dir, minor)
			require.NoError(t, err, minor)
			require.Equal(t, 4, st.Statements)
			require.True(t, g.HasTextIndex("chunk_lex"))
			require.Len(t, g.Notices, 1)
		}
	}
}
