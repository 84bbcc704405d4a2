package cypherl

import (
	"context"
	"flag"
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
		{float32(0.1), "0.10000000149011612"},
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
	sts, err := sink.Statements(sink.Memgraph, b, 0)
	require.NoError(t, err)
	require.Len(t, sts, 1)
	line, err := Inline(sts[0])
	require.NoError(t, err)
	require.True(t, splitsCleanly(line+";"))

	// The label holds "$rows" inside backticks: it must not be replaced.
	require.True(t, strings.HasPrefix(line, "UNWIND ["), line[:20])
	const tail = " AS row MERGE (n:`Doc$rows``x` {id: row.id}) SET n += row.props"
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

// TestGoldenFile pins one run's file. Reviewed against docs/memgraph.md:
// the index DDL of §3/§4 comes first (§7: Lab drops indexes on import, so
// they belong at the top), then the four UNWIND forms of §5 with the $rows
// list inlined; strings are double-quoted with DUMP's escapes (\" \' \\ \n),
// so the ';' inside the title sits inside a string that mgconsole skips;
// floats keep a '.' (-1.0) or an exponent without '+', and float32 vector
// values are widened exactly (0.1f is 0.10000000149011612); the three Chunk
// upserts are split 2 + 1; one statement per line, each ending in ';'.
func TestGoldenFile(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.open(t)
	require.NoError(t, s.Begin(7))
	st, err := s.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Equal(t, sink.Stats{Statements: 3, Batches: 1}, st)
	st, err = s.Write(t.Context(), goldenBatch())
	require.NoError(t, err)
	// 1 delete + 2 Chunk upserts (2 + 1 rows) + 1 Document upsert + 1 edge + 1 prune.
	require.Equal(t, sink.Stats{Statements: 6, Batches: 1}, st)
	require.NoError(t, s.Close(t.Context()))

	files := s.Files()
	require.Equal(t, []string{filepath.Join(tb.dir, "docs", "000001-run7.cypherl")}, files)
	got, err := os.ReadFile(files[0])
	require.NoError(t, err)
	path := filepath.Join("testdata", "run.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./sink/cypherl -update to create %s", path)
	require.Equal(t, string(want), string(got))

	// Every line is one statement as mgconsole splits it.
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	require.Len(t, lines, 9)
	for _, l := range lines {
		require.True(t, splitsCleanly(l), l)
	}
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
	entries, err := os.ReadDir(filepath.Join(tb.dir, "docs"))
	require.NoError(t, err)
	require.Empty(t, entries, "a no-op run must leave no file")

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
	require.Equal(t, 3, st.Statements)
	st, err = s.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st, "same sink: nothing new to write")
	require.NoError(t, s.Close(t.Context()))

	// A new Sink (the next run) reads schema.json: still nothing to write,
	// so no file either.
	s2 := tb.open(t)
	st, err = s2.Ensure(t.Context(), schema(3))
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)
	require.Empty(t, s2.Files())

	// A new label-property index: only its DDL.
	sch := schema(3)
	sch.Indexes = append(sch.Indexes, sink.Index{Label: "Term", Property: "id"})
	st, err = s2.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, 1, st.Statements)

	// A dimension change: drop, remove the old vectors, create.
	sch.VectorIndexes[0].Dimension = 5
	st, err = s2.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, 3, st.Statements)
	require.NoError(t, s2.Close(t.Context()))
	files := s2.Files()
	require.Len(t, files, 1)
	require.Equal(t, "000002-20260301T123005Z.cypherl", filepath.Base(files[0]), "numbering continues after the first sink's file")
	got, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Equal(t, "CREATE INDEX ON :`Term`(`id`);\n"+
		"DROP VECTOR INDEX `chunk_embedding`;\n"+
		"MATCH (n:`Chunk`) WHERE n.`embedding` IS NOT NULL REMOVE n.`embedding`;\n"+
		"CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 5, \"capacity\": 1000, \"metric\": \"cos\"};\n",
		string(got))

	// And the sidecar now records dimension 5.
	s3 := tb.open(t)
	st, err = s3.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)
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
	require.Equal(t, 4, st.Statements)
	require.NoError(t, s.Close(t.Context()))
	got, err := os.ReadFile(s.Files()[0])
	require.NoError(t, err)
	require.Contains(t, string(got), "CREATE TEXT INDEX `chunk_lex` ON :`Chunk`(`lex`);\n")

	// The next run's sink reads schema.json: Memgraph has no CREATE TEXT
	// INDEX IF NOT EXISTS, so the files must not create it twice.
	s2 := tb.open(t)
	st, err = s2.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, sink.Stats{}, st)
}
