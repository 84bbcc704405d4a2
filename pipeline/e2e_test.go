package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/internal/pgtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/postgres"
)

// TestPostgresStateMemgraphSink runs the production wiring: Postgres state
// (own schema) and the Memgraph sink over Bolt, against the Bolt test server.
func TestPostgresStateMemgraphSink(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn, schema := pgtest.Schema(t)
	store, err := postgres.Open(ctx, dsn, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	srv := bolttest.Start(t)
	schemaState := srv.EmulateSchema()
	mg, err := memgraph.New(ctx, memgraph.Config{URI: srv.URI(), Pipeline: "docs", BatchSize: 100, MaxRetries: 3}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mg.Close(ctx) })

	root := copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md")
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	src, err := files.New("docs", config.FilesSource{Root: root, Anchor: "Document", MaxFileBytes: 1 << 20}, chunker.Formats(), nil)
	require.NoError(t, err)
	p := &pipeline.Pipeline{
		Name: "docs", Sources: []sources.Source{src}, Embedder: hashing.New("hashing-v1", 32),
		Sink: mg, Store: store, BatchSize: 1, MaxDeleteRatio: 1, Fingerprint: 1,
		Chunking: chunker.Options{MaxTokens: 256, OverlapTokens: 32, Tokenizer: tok},
	}
	res, err := p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, 2, res.Run.Counts.RecordsNew)

	qs := srv.Committed()
	require.NotEmpty(t, qs)
	firstMerge := -1
	var ddl []string
	for i, q := range qs {
		if strings.Contains(q.Text, "MERGE") && firstMerge < 0 {
			firstMerge = i
		}
		if strings.HasPrefix(q.Text, "CREATE") {
			require.Less(t, i, max(firstMerge, len(qs)), "DDL %q after the first MERGE", q.Text)
			require.Zero(t, q.Tx, "DDL runs in auto-commit transactions")
			ddl = append(ddl, q.Text)
		}
	}
	// Label-property indexes on id for Document, Section, Element, Term and
	// Chunk, on Term(name_lower) for exact term look-up, the text indexes
	// of chunks, elements and terms, and the chunk and term vector indexes.
	require.Len(t, ddl, 11)
	require.Contains(t, ddl, "CREATE TEXT INDEX `chunk_lex` ON :`Chunk`(`lex`)")
	require.Contains(t, strings.Join(ddl, "\n"), `"dimension": 32`)
	require.Equal(t, 6, schemaState.Indexes())
	require.Equal(t, 32, schemaState.VectorDimension("chunk_embedding"))
	// Each batch is its own transaction: two documents, batch size 1.
	txs := map[int]bool{}
	for _, q := range qs {
		if q.Tx != 0 {
			txs[q.Tx] = true
		}
	}
	require.Len(t, txs, 2)
	runs, err := store.RunList(ctx, "docs", 1)
	require.NoError(t, err)
	require.Equal(t, state.StatusSucceeded, runs[0].Status)

	// A no-op run sends no write.
	srv.Reset()
	res, err = p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Zero(t, res.Run.Counts.SinkStatements)
	for _, q := range srv.Queries() {
		require.NotContains(t, q.Text, "MERGE")
	}

	// A transient conflict on the next write is retried and the run succeeds.
	require.NoError(t, os.Remove(filepath.Join(root, "rfc7239.txt")))
	srv.Reset()
	srv.FailNext(1, func(q string) bool { return strings.Contains(q, "DETACH DELETE") }, bolttest.Conflict())
	res, err = p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Run.Counts.RecordsDeleted)
	deletes := 0
	for _, q := range srv.Committed() {
		if strings.Contains(q.Text, "DETACH DELETE") {
			deletes++
		}
	}
	require.Positive(t, deletes)
}

// TestEmbedderChangeRecreatesVectorIndex changes the embedder's dimension:
// every chunk is re-embedded and the vector index recreated, so vectors of
// two models never share an index.
func TestEmbedderChangeRecreatesVectorIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, copyCorpus(t, "rfc7239.txt"), 256, 32)
	dir := t.TempDir()
	sk, err := cypherl.New(dir, "docs", sink.Memgraph)
	require.NoError(t, err)
	b.p.Sink = sk
	first := b.sync(t, pipeline.Mode{})

	b.p.Embedder = hashing.New("hashing-v1", 48)
	b.p.Fingerprint = pipeline.Fingerprint(&config.Pipeline{Chunking: &config.Chunking{MaxTokens: 256, OverlapTokens: 32}}, b.p.Embedder)
	plan, err := b.p.Plan(ctx, pipeline.Mode{})
	require.NoError(t, err)
	require.Len(t, plan.Items, 1)
	require.Equal(t, "config changed", string(plan.Items[0].Reason))
	second := b.sync(t, pipeline.Mode{})
	require.Equal(t, first.ChunksEmbedded, second.ChunksEmbedded, "every chunk is embedded with the new model")
	require.NoError(t, sk.Close(ctx))

	files := sk.Files()
	require.Len(t, files, 2)
	body, err := os.ReadFile(files[1])
	require.NoError(t, err)
	text := string(body)
	drop := strings.Index(text, "DROP VECTOR INDEX `chunk_embedding`")
	remove := strings.Index(text, "MATCH (n:`Chunk`) WHERE n._pipeline = \"docs\" AND n.`embedding` IS NOT NULL REMOVE n.`embedding`")
	merge := strings.Index(text, "MERGE")
	require.True(t, drop >= 0 && remove > drop && merge > remove,
		"drop, then remove this pipeline's old vectors, then write:\n%.600s", text)
	// The index is created with the new dimension after the data.
	vec, err := os.ReadFile(filepath.Join(dir, "docs", cypherl.VectorIndexFile))
	require.NoError(t, err)
	require.Contains(t, string(vec), `"dimension": 48`)
	require.NotContains(t, string(vec), `"dimension": 32`)
}
