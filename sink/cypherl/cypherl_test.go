package cypherl

import (
	"context"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/internal/crashtest"
	"github.com/kgsync/kgsync/sink"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var nastyStrings = []string{
	"",
	"plain",
	`double "quoted"`,
	"single 'quoted'",
	`back\slash`,
	`\"`,
	`ends with backslash\`,
	"\\'; DROP GRAPH; //",
	"semi;colon;",
	"new\nline",
	"cr\r\nlf",
	"tab\tbell\a nul\x00 esc\x1b del\x7f",
	"form\ffeed back\bspace",
	"c1 control \u0085 ls \u2028 ps \u2029",
	"`backtick` ``double``",
	"$rows $limit",
	"unicode: Größe, 名前, emoji 🚀, rtl שלום, fullwidth ＂；｀",
	"/* comment */ // comment",
}

func TestLiteralStringRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range nastyStrings {
		lit, err := Literal(s)
		require.NoError(t, err)
		require.NotContains(t, lit, "\n", "%q", s)
		require.NotContains(t, lit, "\r", "%q", s)
		got, err := crashtest.ParseWholeLiteral(lit)
		require.NoError(t, err, "literal %s", lit)
		require.Equal(t, s, got, "literal %s", lit)
		// mgconsole must see one statement ending at the final ';'.
		require.True(t, splitsCleanly("RETURN "+lit+";"), "literal %s", lit)
	}
	// DUMP's escapes (docs/memgraph.md §7, Memgraph utils::Escape) exactly.
	lit, err := Literal("a\\b'c\"d\ne\rf\tg")
	require.NoError(t, err)
	require.Equal(t, `"a\\b\'c\"d\ne\rf\tg"`, lit)
	_, err = Literal("bad \xff")
	require.ErrorContains(t, err, "UTF-8")
}

func TestLiteralNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want string
	}{
		// An integral float must keep a '.', else Memgraph reads an integer.
		{1.0, "1.0"},
		{-2.0, "-2.0"},
		{0.1, "0.1"},
		// 'g' writes 1e+21; the lexer's exponent takes '-' only.
		{1e21, "1e21"},
		{1.5e-7, "1.5e-07"},
		{math.MaxFloat64, "1.7976931348623157e308"},
		{math.SmallestNonzeroFloat64, "5e-324"},
		// A float32 takes the fewest digits that read back as the same
		// float32 (what an f32 vector index holds), not its float64's 17.
		{float32(0.1), "0.1"},
		{float32(1e-9), "1e-09"},
		{float32(16777217), "1.6777216e07"},
		{float32(math.MaxFloat32), "3.4028235e38"},
		{float32(2.5), "2.5"},
		{float32(-3), "-3.0"},
		{int64(42), "42"},
		{int64(-7), "-7"},
		{int64(math.MaxInt64), "9223372036854775807"},
		{int64(math.MinInt64), "(-9223372036854775807 - 1)"},
		{7, "7"},
		{true, "true"},
		{nil, "null"},
	}
	for _, tt := range tests {
		got, err := Literal(tt.in)
		require.NoError(t, err, "%v", tt.in)
		require.Equal(t, tt.want, got, "%v", tt.in)
		back, err := crashtest.ParseWholeLiteral(got)
		require.NoError(t, err, got)
		if f, ok := tt.in.(float32); ok {
			require.IsType(t, float64(0), back, got)
			require.Equal(t, f, float32(back.(float64)), "round trip of %s", got)
			continue
		}
		require.Equal(t, generic(tt.in), back, "round trip of %s", got)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := Literal(f)
		require.Error(t, err)
	}
	_, err := Literal(struct{}{})
	require.ErrorContains(t, err, "no Cypher literal for struct {}")
	_, err = Literal(map[string]any{"a;b": 1})
	require.ErrorContains(t, err, `"a;b"`)
}

func TestInlineMatchesParams(t *testing.T) {
	t.Parallel()
	var props []map[string]any
	for i, s := range nastyStrings {
		props = append(props, map[string]any{
			"text": s, "n": int64(i), "f": float64(i) / 3, "v": []float32{0.1, -2, 3.5e-8},
			"tags": []string{s, "x"}, "nested": map[string]any{"weird`key": []any{s, nil, true}}, "gone": nil,
		})
	}
	b := &sink.Batch{}
	for i, p := range props {
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: "Doc$rows`x", ID: nastyStrings[i] + "#id", Props: p})
	}
	sts, err := sink.Statements(sink.Memgraph, b, sink.Options{Pipeline: "docs"})
	require.NoError(t, err)
	require.Len(t, sts, 1)
	line, err := Inline(sts[0])
	require.NoError(t, err)
	require.True(t, splitsCleanly(line+";"))

	// The label holds "$rows" inside backticks: it must not be replaced.
	require.True(t, strings.HasPrefix(line, "UNWIND ["), line[:20])
	const tail = " AS row MERGE (n:`Doc$rows``x` {id: row.id, _pipeline: \"docs\"}) SET n += row.props"
	require.True(t, strings.HasSuffix(line, tail), "%s", line[max(0, len(line)-len(tail)-10):])
	list := strings.TrimSuffix(strings.TrimPrefix(line, "UNWIND "), tail)
	got, err := crashtest.ParseWholeLiteral(list)
	require.NoError(t, err)
	require.Equal(t, generic(sts[0].Params["rows"]), got)

	_, err = Inline(sink.Statement{Query: "RETURN $missing", Kind: "test", Target: "x"})
	require.ErrorContains(t, err, "no value for parameter $missing")
	q, err := Inline(sink.Statement{Query: "RETURN '$a' + \"\\\"$a\" + $a", Params: map[string]any{"a": "v"}})
	require.NoError(t, err)
	require.Equal(t, "RETURN '$a' + \"\\\"$a\" + \"v\"", q)
}

type testBundle struct {
	dir string
	now time.Time
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{dir: t.TempDir(), now: time.Date(2026, 3, 1, 12, 30, 5, 0, time.UTC)}
}

func (tb *testBundle) open(t *testing.T) *Sink {
	t.Helper()
	s, err := New(tb.dir, "docs", sink.Memgraph, WithClock(func() time.Time { return tb.now }), WithRowsPerStatement(2))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
	return s
}

func schema(dim int) sink.Schema {
	return sink.Schema{
		Indexes:       []sink.Index{{Label: "Document", Property: "id"}, {Label: "Chunk", Property: "id"}},
		VectorIndexes: []sink.VectorIndex{{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: dim}},
	}
}

func goldenBatch() *sink.Batch {
	return &sink.Batch{
		DeleteNodes: []sink.NodeRef{{Label: "Chunk", ID: "old.md#0"}},
		NodeUpserts: []sink.NodeUpsert{
			{Label: "Document", ID: "guide.md", Props: map[string]any{"title": `Guide "v2"; it's new`, "pages": int64(3), "stale": nil}},
			{Label: "Chunk", ID: "guide.md#0", Props: map[string]any{"text": "line 1\nline 2", "embedding": []float32{0.25, -1, 0.5}}},
			{Label: "Chunk", ID: "guide.md#1", Props: map[string]any{"text": `C:\path`, "embedding": []float32{1, 0, 2}}},
			{Label: "Chunk", ID: "guide.md#2", Props: map[string]any{"text": "tail", "embedding": []float32{0.1, 0, 1e-9}}},
		},
		EdgeUpserts: []sink.EdgeUpsert{{Type: "HAS_CHUNK", From: sink.NodeRef{Label: "Document", ID: "guide.md"},
			To: sink.NodeRef{Label: "Chunk", ID: "guide.md#0"}, Props: map[string]any{"position": int64(0)}}},
		EdgePrunes: []sink.EdgePrune{{Type: "HAS_CHUNK", From: sink.NodeRef{Label: "Document", ID: "guide.md"},
			ToLabel: "Chunk", Keep: []string{"guide.md#0"}}},
	}
}

// TestGoldenFile pins what `cat docs/*.cypherl | mgconsole` reads after one
// run: the three files in glob order. Reviewed against docs/memgraph.md:
// 000000-schema.cypherl sorts first and creates the label-property indexes
// of the MERGE keys (§3; Lab drops indexes on import, §7, so they belong in
// the files; a repeated CREATE INDEX ON is a notification on every
// version); the run's file holds the UNWIND forms of §5 with $rows and
// $pipeline inlined, every node matched by id and its owning pipeline;
// strings are double-quoted with DUMP's escapes (\" \' \\ \n), so the ';'
// inside the title sits inside a string that mgconsole skips; floats keep a
// '.' (-1.0) or an exponent without '+', and float32 vector values take
// the fewest digits that read back as the same float32 (0.1f is 0.1, not
// its float64's 0.10000000149011612; 1e-9f is 1e-09), which is what an f32
// vector index holds (§4); the three Chunk upserts are
// split 2 + 1; the NEXT edge has no properties and so no SET (§12: with
// --storage-properties-on-edges off even SET e += {} fails);
// vector-indexes.cypherl sorts last and drops (a notification when
// missing, §12) then creates the vector index over the loaded vectors, so
// the whole directory replays twice, or after another pipeline's files,
// on 3.0–3.7, where a second CREATE VECTOR INDEX is an error (§12). One
// statement per line, each ending in ';'.
func TestGoldenFile(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.open(t)
	require.NoError(t, s.Begin(7))
	st, err := s.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Equal(t, sink.Stats{Statements: 4, Batches: 2}, st, "2 CREATE INDEX, DROP + CREATE VECTOR INDEX")
	b := goldenBatch()
	b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: "NEXT", From: sink.NodeRef{Label: "Chunk", ID: "guide.md#0"},
		To: sink.NodeRef{Label: "Chunk", ID: "guide.md#1"}})
	st, err = s.Write(t.Context(), b)
	require.NoError(t, err)
	// 1 delete + 2 Chunk upserts (2 + 1 rows) + 1 Document upsert + 2 edges + 1 prune.
	require.Equal(t, sink.Stats{Statements: 7, Batches: 1}, st)
	require.NoError(t, s.Close(t.Context()))

	files := s.Files()
	require.Equal(t, []string{filepath.Join(tb.dir, "docs", "000001-run7.cypherl")}, files)
	got := catGlob(t, filepath.Join(tb.dir, "docs", "*.cypherl"))
	path := filepath.Join("testdata", "replay.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./sink/cypherl -update to create %s", path)
	require.Equal(t, string(want), got)

	// Every line is one statement as mgconsole splits it.
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	require.Len(t, lines, 11)
	for _, l := range lines {
		require.True(t, splitsCleanly(l), l)
	}
}

// catGlob is `cat pattern`: the files in the shell's (lexical) order.
func catGlob(t *testing.T, pattern string) string {
	t.Helper()
	names, err := filepath.Glob(pattern)
	require.NoError(t, err)
	var sb strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(n)
		require.NoError(t, err)
		sb.Write(data)
	}
	return sb.String()
}

func TestNoFileWithoutWork(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.open(t)
	st, err := s.Write(t.Context(), &sink.Batch{})
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)
	st, err = s.Write(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)
	st, err = s.Ensure(t.Context(), sink.Schema{})
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)
	require.NoError(t, s.Begin(2))
	require.NoError(t, s.Close(t.Context()))
	require.Empty(t, s.Files())
	_, err = os.Stat(filepath.Join(tb.dir, "docs"))
	require.ErrorIs(t, err, fs.ErrNotExist, "a no-op run must leave no file, not even the directory")

	// An invalid batch writes nothing either.
	s2 := tb.open(t)
	_, err = s2.Write(t.Context(), &sink.Batch{NodeUpserts: []sink.NodeUpsert{{Label: "a;b", ID: "1"}}})
	require.ErrorContains(t, err, `"a;b"`)
	require.Empty(t, s2.Files())
}

func TestSchemaSidecar(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.open(t)
	st, err := s.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Equal(t, 4, st.Statements)
	st, err = s.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st, "same sink: nothing new to write")
	require.NoError(t, s.Close(t.Context()))
	require.Empty(t, s.Files(), "schema statements go to the schema files, not to a numbered file")

	// A new Sink (the next run) reads schema.json: still nothing to write.
	s2 := tb.open(t)
	st, err = s2.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)
	require.Empty(t, s2.Files())

	// A new label-property index: the schema file is rewritten with it.
	sch := schema(3)
	sch.Indexes = append(sch.Indexes, sink.Index{Label: "Term", Property: "id"})
	st, err = s2.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, sink.Stats{Statements: 4, Batches: 1}, st)
	require.Equal(t, "CREATE INDEX ON :`Document`(`id`);\nCREATE INDEX ON :`Chunk`(`id`);\nCREATE INDEX ON :`Term`(`id`);\n"+
		"DROP VECTOR INDEX `chunk_embedding`;\n",
		read(t, filepath.Join(tb.dir, "docs", IndexFile)))

	// A dimension change: the numbered file drops the index and removes
	// this pipeline's old vectors; the vector index file creates the new
	// one (without a DROP: from 3.8 a duplicate CREATE is a notification),
	// and the schema file, which drops it, is rewritten too.
	sch.VectorIndexes[0].Dimension = 5
	st, err = s2.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, sink.Stats{Statements: 7, Batches: 3}, st)
	require.NoError(t, s2.Close(t.Context()))
	files := s2.Files()
	require.Len(t, files, 1)
	require.Equal(t, "000001-20260301T123005Z.cypherl", filepath.Base(files[0]))
	require.Equal(t, "DROP VECTOR INDEX `chunk_embedding`;\n"+
		"MATCH (n:`Chunk`) WHERE n._pipeline = \"docs\" AND n.`embedding` IS NOT NULL REMOVE n.`embedding`;\n",
		read(t, files[0]))
	require.Equal(t, "CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 5, \"capacity\": 1000, \"metric\": \"cos\"};\n",
		read(t, filepath.Join(tb.dir, "docs", VectorIndexFile)))

	// And the sidecar now records dimension 5.
	s3 := tb.open(t)
	st, err = s3.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)

	// A rebuild repeats the schema file at the top of its file.
	require.NoError(t, s3.Begin(9))
	s3.ForgetSchema()
	st, err = s3.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, sink.Stats{Statements: 4, Batches: 1}, st)
	require.NoError(t, s3.Close(t.Context()))
	require.Equal(t, read(t, filepath.Join(tb.dir, "docs", IndexFile)), read(t, s3.Files()[0]))
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func TestFileOrder(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.open(t)
	one := &sink.Batch{NodeUpserts: []sink.NodeUpsert{{Label: "Doc", ID: "a"}}}
	for run := int64(1); run <= 3; run++ {
		require.NoError(t, s.Begin(run))
		_, err := s.Write(t.Context(), one)
		require.NoError(t, err)
		_, err = s.Write(t.Context(), one) // same run, same file
		require.NoError(t, err)
	}
	require.NoError(t, s.Begin(4)) // nothing written in run 4
	require.NoError(t, s.Close(t.Context()))
	var names []string
	for _, f := range s.Files() {
		names = append(names, filepath.Base(f))
	}
	require.Equal(t, []string{"000001-run1.cypherl", "000002-run2.cypherl", "000003-run3.cypherl"}, names)
	data, err := os.ReadFile(s.Files()[0])
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(data), "\n"))

	_, err = s.Write(t.Context(), one)
	require.ErrorContains(t, err, "closed")

	_, err = New(tb.dir, "../escape", sink.Memgraph)
	require.ErrorContains(t, err, "single path element")
	_, err = New(tb.dir, "a;b", sink.Memgraph)
	require.Error(t, err)
}

func TestTextIndexDDLOnce(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	sch := schema(3)
	sch.TextIndexes = []sink.TextIndex{{Name: "chunk_lex", Label: "Chunk", Properties: []string{"lex"}}}
	s := tb.open(t)
	st, err := s.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, 5, st.Statements, "2 CREATE INDEX and the text index in the schema file, DROP + CREATE VECTOR INDEX")
	require.NoError(t, s.Close(t.Context()))
	got := read(t, filepath.Join(tb.dir, "docs", IndexFile))
	require.Contains(t, got, "CREATE TEXT INDEX `chunk_lex` ON :`Chunk`(`lex`);\n")

	// The next run's sink reads schema.json: Memgraph has no CREATE TEXT
	// INDEX IF NOT EXISTS (a duplicate is a notification from 3.6), so
	// the statement stays once in the schema file.
	s2 := tb.open(t)
	st, err = s2.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)
}

// TestSchemaFilesHaveTheRunFilesMode: the files Ensure replaces (schema,
// vector indexes, sidecar) are as readable as the run files, for a loader
// (mgconsole) running as another user.
func TestSchemaFilesHaveTheRunFilesMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.open(t)
	require.NoError(t, s.Begin(7))
	_, err := s.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	_, err = s.Write(t.Context(), goldenBatch())
	require.NoError(t, err)
	require.NoError(t, s.Close(t.Context()))
	run, err := os.Stat(filepath.Join(tb.dir, "docs", "000001-run7.cypherl"))
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(tb.dir, "docs"))
	require.NoError(t, err)
	require.Greater(t, len(entries), 2)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, run.Mode().Perm(), info.Mode().Perm(), e.Name())
	}
}

// TestRemovedVectorIndexDropped: a vector index the schema no longer has
// (its attribute removed from the model, or renamed) leaves schema.json and
// vector-indexes.cypherl, and the run's file drops it, so that a replay
// onto a loaded graph does not keep it.
func TestRemovedVectorIndexDropped(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.open(t)
	sch := schema(3)
	sch.VectorIndexes = append(sch.VectorIndexes, sink.VectorIndex{Name: "faq_question_embedding", Label: "faq", Property: "question_embedding", Dimension: 3})
	_, err := s.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Contains(t, read(t, filepath.Join(tb.dir, "docs", VectorIndexFile)), "faq_question_embedding")
	require.NoError(t, s.Close(t.Context()))

	s2 := tb.open(t)
	st, err := s2.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Positive(t, st.Statements)
	require.NoError(t, s2.Close(t.Context()))
	require.NotContains(t, read(t, filepath.Join(tb.dir, "docs", VectorIndexFile)), "faq_question_embedding")
	require.NotContains(t, read(t, filepath.Join(tb.dir, "docs", SchemaFile)), "faq_question_embedding")
	require.Len(t, s2.Files(), 1)
	require.Equal(t, "DROP VECTOR INDEX `faq_question_embedding`;\n", read(t, s2.Files()[0]))

	s3 := tb.open(t)
	st, err = s3.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st, "dropped once")
}
