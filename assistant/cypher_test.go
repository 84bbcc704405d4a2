package assistant_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink/memgraph"
)

// memgraphPlan stands in for Memgraph's planner in the Bolt test server
// (src/query/plan/read_write_type_checker.cpp): a plan with a write clause
// or a write procedure is "rw", a plan that reads the graph (MATCH, a read
// procedure) is "r", and one that reads nothing (RETURN 1) is "rw" too.
// A clause may follow a number with no space (1DELETE is 1 and DELETE to
// Memgraph's lexer, CypherLexer.g4).
var (
	planWrites = regexp.MustCompile(`(?i)(?:^|[^.\pL_{])(CREATE|MERGE|SET|REMOVE|DELETE|FOREACH|LOAD\s+CSV)\b|(?i)CALL\s+(create|merge|refactor|periodic|mg\.load|nxalg)`)
	planReads  = regexp.MustCompile(`(?i)\bMATCH\b|CALL\s+(vector_search|text_search|mg\.procedures)`)
	ddl        = regexp.MustCompile(`(?i)^\s*(CREATE|DROP)\s+(INDEX|CONSTRAINT|VECTOR|TEXT|EDGE|POINT)`)
	comments   = regexp.MustCompile(`(?s)//[^\r\n]*|/\*.*?\*/`)
)

// emulateMemgraph answers like Memgraph 3.x: DDL fails inside explicit
// transactions ("multicommand transactions", docs/memgraph.md §2), and
// each query gets its plan's type and whether it writes, which the Bolt
// test server turns into Memgraph's refusal in a read transaction.
func emulateMemgraph(srv *bolttest.Server) {
	srv.Answer(func(q bolttest.Query) (bolttest.Answer, bool) {
		q.Text = comments.ReplaceAllString(q.Text, " ")
		if ddl.MatchString(q.Text) && q.Tx != 0 {
			return bolttest.Answer{Fail: &bolttest.Failure{Code: bolttest.CodeClient,
				Message: "Index manipulation is not allowed in multicommand transactions. Please run it outside a transaction."}}, true
		}
		typ, writes := "rw", planWrites.MatchString(q.Text)
		if planReads.MatchString(q.Text) && !writes {
			typ = "r"
		}
		return bolttest.Answer{Fields: []string{"n"}, Rows: [][]any{{int64(1)}, {int64(2)}, {int64(3)}}, Type: typ, Writes: writes}, true
	})
}

// serveGraph serves the quick start's tables pipeline with its sink
// replaced by a Memgraph sink on a Bolt test server.
func serveGraph(t *testing.T, opts assistant.Options) (*bolttest.Server, *assistant.Server, *pipeline.Pipeline) {
	t.Helper()
	ctx := context.Background()
	_, store, ps, err := build(ctx, quickstart(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	var p *pipeline.Pipeline
	for _, q := range ps {
		_ = q.Sink.Close(ctx)
		if q.Name == "tables" {
			p = q
		}
	}
	srv := bolttest.Start(t)
	g, err := memgraph.New(ctx, memgraph.Config{URI: srv.URI(), Pipeline: p.Name}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(ctx) })
	p.Sink = g
	opts.Pipelines = []*pipeline.Pipeline{p}
	a, err := assistant.New(opts)
	require.NoError(t, err)
	return srv, a, p
}

// writeForms are the ways a query can write or change a Memgraph: every
// clause that writes, index and constraint DDL, write procedures, LOAD
// CSV, several statements, administration, and clauses hidden by
// comments, case or subqueries.
var writeForms = []string{
	"CREATE (n:guide {id: 'guide:99'})",
	"MATCH (g:guide) CREATE (g)-[:X]->(:guide)",
	"create (n)",
	"MERGE (n:guide {id: 'guide:99'}) RETURN n",
	"MATCH (n:guide) SET n.title = 'x' RETURN n",
	"MATCH (n:guide) SET n:Other",
	"MATCH (n:guide) REMOVE n.title",
	"MATCH (n:guide) DELETE n",
	"MATCH (n) DETACH DELETE n",
	"MATCH (n) FOREACH (x IN [1] | SET n.a = x)",
	"MATCH (n) CALL { WITH n CREATE (m:X) } RETURN n",
	"MATCH (n) CALL { WITH n SET n.a = 1 } IN TRANSACTIONS RETURN n",
	"DROP GRAPH",
	"DROP INDEX ON :guide(id)",
	"CREATE INDEX ON :guide(title)",
	"CREATE EDGE INDEX ON :REQUIRES_GUIDE",
	"CREATE VECTOR INDEX v ON :guide(title_embedding) WITH CONFIG {\"dimension\": 3, \"capacity\": 10}",
	"CREATE TEXT INDEX t ON :guide",
	"DROP VECTOR INDEX guide_title_embedding",
	"CREATE CONSTRAINT ON (n:guide) ASSERT n.id IS UNIQUE",
	"DROP CONSTRAINT ON (n:guide) ASSERT EXISTS (n.id)",
	"CALL create.node(['X'], {a: 1}) YIELD node RETURN node",
	"CALL merge.node(['X'], {a: 1}, {}, {}) YIELD node RETURN node",
	"CALL periodic.iterate('MATCH (n) RETURN n', 'DETACH DELETE n', {batch_size: 10}) YIELD success RETURN success",
	"CALL mg.load_all()",
	"CALL refactor.rename_label('guide', 'x') YIELD nodes_changed RETURN nodes_changed",
	"MATCH (n) CALL nxalg.pagerank() YIELD * RETURN n",
	"LOAD CSV FROM '/etc/passwd' NO HEADER AS row CREATE (:X {r: row})",
	"LOAD CSV FROM '/tmp/x.csv' WITH HEADER AS row RETURN row",
	"MATCH (n) RETURN n; CREATE (m:X)",
	"MATCH (n) RETURN count(n);\nMATCH (n) DETACH DELETE n",
	"MATCH (n) RETURN n /* read */ ; MERGE (x:X)",
	"MATCH (n) // just reading\nDETACH DELETE n",
	"MATCH (n) /* RETURN n */ DELETE n",
	"/* MATCH (n) RETURN n */ CREATE (n:X)",
	"// MATCH (n) RETURN n\nCREATE (n:X)",
	"MATCH (n) WITH n /* set nothing */ SET n.a = 1 RETURN n",
	"MATCH (n) WHERE n.title = 'it\\'s' SET n.a = 1",
	"MATCH (n) WHERE n.title = \"a \\\" b\" DELETE n",
	// A number ends where Memgraph's lexer ends it: the clause after it
	// is a clause (CypherLexer.g4, DecimalLiteral and FloatingLiteral).
	"MATCH (n) WHERE n.a = 1DELETE n",
	"MATCH (n) WHERE n.a = $1DELETE n",
	"MATCH (n) WHERE n.a = .5SET n.b = 1",
	"MATCH (n) WHERE n.a = 1e5SET n.b = 1",
	"MATCH (n) WHERE n.a = 0x1fREMOVE n.b",
	// Memgraph's lexer (CypherLexer.g4) ends a // comment at \r too, lets
	// $ continue a name (IdentifierPart: ID_Continue | Sc), and drops a
	// character no rule matches (a letter outside its BMP tables, a
	// string's unknown escape and what follows up to the failing
	// character): the parser reads on after it (parser.hpp sets no error
	// listener on the lexer).
	"MATCH (n) // just reading\rDETACH DELETE n",
	"MATCH (n) WITH n AS m$ DELETE m$",
	"MATCH (n) WITH n AS m$ SET m$.a = 1",
	"MATCH (n) \U0001D400DELETE n",
	"MATCH (n) WITH n AS m\U0001D400DELETE n",
	"MATCH (n) WITH n '\\q DELETE n //'",
	"MATCH (n) WITH n '\\u12' DELETE n //'",
	"USING PERIODIC COMMIT 10 MATCH (n) SET n.a = 1",
	"CREATE USER eve IDENTIFIED BY 'x'",
	"SET PASSWORD TO 'x' REPLACE 'y'",
	"GRANT ALL PRIVILEGES TO eve",
	"STORAGE MODE IN_MEMORY_ANALYTICAL",
	"FREE MEMORY",
	"TERMINATE TRANSACTIONS '1'",
	"ANALYZE GRAPH",
	"CREATE TRIGGER t ON CREATE AFTER COMMIT EXECUTE CREATE (:X)",
	"CREATE SNAPSHOT",
	"EXPLAIN MATCH (n) DELETE n",
	"PROFILE MATCH (n) SET n.a = 1",
	"USE DATABASE other",
	"RETURN 1",
	"UNWIND [1, 2] AS x RETURN x",
}

// TestCypherGuardWritesNothing sends every write form through the cypher
// tool over the Bolt test server: each is refused with a reason, and
// nothing the server saw was committed or ran outside a read
// transaction.
func TestCypherGuardWritesNothing(t *testing.T) {
	srv, a, _ := serveGraph(t, assistant.Options{})
	emulateMemgraph(srv)
	cs := connect(t, a)
	for _, q := range writeForms {
		msg := callErr(t, cs, "cypher", map[string]any{"query": q})
		require.NotEmpty(t, msg, "cypher accepted %q", q)
		require.True(t, strings.Contains(msg, "refused") || strings.Contains(msg, "rolled back"), "%q: %s", q, msg)
	}
	for _, q := range srv.Queries() {
		require.False(t, q.Committed, "committed: %q", q.Text)
		require.NotZero(t, q.Tx, "auto-commit query: %q", q.Text)
		require.Equal(t, "r", q.Meta["mode"], "not in a read transaction: %q", q.Text)
	}
	require.Empty(t, srv.Committed())
	// RETURN 1 passes the lexical check and is refused by the plan type.
	var sent []string
	for _, q := range srv.Queries() {
		sent = append(sent, q.Text)
	}
	require.ElementsMatch(t, []string{"RETURN 1", "UNWIND [1, 2] AS x RETURN x"}, sent)
}

// TestCypherRefusesWhatReachesTheServer checks the guard's later steps on
// their own: a write that reaches Memgraph (here through Read, which the
// tool calls after its lexical check) runs in a read transaction that is
// rolled back, and a plan typed "rw" is refused even when it reads.
func TestCypherReadTransaction(t *testing.T) {
	srv, _, p := serveGraph(t, assistant.Options{})
	emulateMemgraph(srv)
	g := p.Sink.(*memgraph.Sink)
	_, err := g.Read(context.Background(), "CREATE (n:X)", nil, memgraph.ReadOptions{})
	require.ErrorContains(t, err, "misaligned")
	res, err := g.Read(context.Background(), "MATCH (n) RETURN n", nil, memgraph.ReadOptions{MaxRows: 2})
	require.NoError(t, err)
	require.Equal(t, "r", res.Type)
	require.True(t, res.Truncated)
	require.Len(t, res.Rows, 2)
	for _, q := range srv.Queries() {
		require.False(t, q.Committed, q.Text)
		require.Equal(t, "r", q.Meta["mode"], q.Text)
		require.NotNil(t, q.Meta["tx_timeout"], q.Text)
	}
}

func TestCypherReads(t *testing.T) {
	srv, a, _ := serveGraph(t, assistant.Options{CypherMaxRows: 2})
	emulateMemgraph(srv)
	cs := connect(t, a)
	var out assistant.CypherOutput
	call(t, cs, "cypher", map[string]any{"query": "MATCH (n:guide) WHERE n._pipeline = 'tables' RETURN n.id // CREATE in a comment is no clause\n;"}, &out)
	require.Equal(t, []string{"n"}, out.Columns)
	require.Len(t, out.Rows, 2)
	require.True(t, out.Truncated)
	call(t, cs, "cypher", map[string]any{"query": "CALL vector_search.search('guide_title_embedding', 3, $vec) YIELD node RETURN node.id",
		"embed": map[string]string{"vec": "ceramics"}}, &out)
	qs := srv.Queries()
	last := qs[len(qs)-1]
	vec, ok := last.Params["vec"].([]any)
	require.True(t, ok, "%T", last.Params["vec"])
	require.Len(t, vec, 384)
	// A property or map key spelled like a clause is no clause.
	call(t, cs, "cypher", map[string]any{"query": "MATCH (n) RETURN n.set, {delete: 1} AS m"}, &out)
	// Names in other scripts, $ in a name and the escapes Memgraph knows
	// read as they are.
	call(t, cs, "cypher", map[string]any{"query": "MATCH (n:Документ) WITH n AS m$ WHERE m$.t <> 'a\\'b\\n\\u00e9\\U0001F600' RETURN m$.id"}, &out)
	msg := callErr(t, cs, "cypher", map[string]any{"query": "CALL db.labels()"})
	require.Contains(t, msg, `procedure "db.labels" is not allowed`)
	for _, q := range srv.Queries() {
		require.False(t, q.Committed, q.Text)
	}
}

// TestCypherRefusedOnOtherSink: with one pipeline on Memgraph and one on
// CYPHERL files, cypher is listed, and a call for the CYPHERL pipeline is
// refused naming it and the tools that answer instead; nothing reaches
// the Memgraph.
func TestCypherRefusedOnOtherSink(t *testing.T) {
	ctx := context.Background()
	_, store, ps, err := build(ctx, quickstart(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	srv := bolttest.Start(t)
	for _, p := range ps {
		if p.Name == "tables" {
			_ = p.Sink.Close(ctx)
			g, err := memgraph.New(ctx, memgraph.Config{URI: srv.URI(), Pipeline: p.Name}, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = g.Close(ctx) })
			p.Sink = g
		} else {
			t.Cleanup(func() { _ = p.Sink.Close(ctx) })
		}
	}
	a, err := assistant.New(assistant.Options{Pipelines: ps})
	require.NoError(t, err)
	cs := connect(t, a)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	require.Contains(t, names, "cypher")
	before := len(srv.Queries())
	msg := callErr(t, cs, "cypher", map[string]any{"pipeline": "docs", "query": "MATCH (n) RETURN n.id LIMIT 1"})
	require.Equal(t, "refused: pipeline docs's sink is not Memgraph; use rows, search or neighbors", msg)
	require.Len(t, srv.Queries(), before)
	msg = callErr(t, cs, "cypher", map[string]any{"query": "MATCH (n) RETURN n.id LIMIT 1"})
	require.Contains(t, msg, `name one in "pipeline" (docs, tables)`)
}
