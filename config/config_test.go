package config_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/config"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// unsetenv unsets key for the duration of the test (t.Setenv registers the
// restore; os.Unsetenv then removes it).
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	require.NoError(t, os.Unsetenv(key))
}

// TestBadConfigs loads every testdata/*.bad.yaml and checks that each
// expected problem is reported, with file:line and key path, and that
// nothing else is (one message per line of the joined error). The line
// numbers are those of the offending key in the file, or of its nearest
// written ancestor for a value that comes from a default.
func TestBadConfigs(t *testing.T) {
	unsetenv(t, "KGSYNC_TEST_UNSET_KEY")
	tests := map[string][]string{
		"unknown_key.bad.yaml": {
			`unknown_key.bad.yaml:6: unknown key "chunkng" in pipelines[0] (did you mean "chunking"?)`,
		},
		"unknown_top.bad.yaml": {
			`unknown_top.bad.yaml:1: unknown key "pipeline" at the top level (did you mean "pipelines"?)`,
		},
		"duplicate_key.bad.yaml": {
			`duplicate_key.bad.yaml:5: duplicate key "name" in pipelines[0] (first at line 2)`,
		},
		"env_unset.bad.yaml": {
			`env_unset.bad.yaml:9: pipelines[0].embedder.api_key: environment variable KGSYNC_TEST_UNSET_KEY is not set`,
		},
		"env_syntax.bad.yaml": {
			`env_syntax.bad.yaml:3: state.dsn: invalid environment variable name "PG PASSWORD"`,
			`env_syntax.bad.yaml:6: sink.cypherl.dir: unterminated "${"`,
		},
		"overlap.bad.yaml": {
			// max_tokens keeps its default 512; overlap 600 is at line 6,
			// max_tokens is not written, so the chunking key's line 5 is named.
			`overlap.bad.yaml:5: pipelines[0].chunking.max_tokens: must be > overlap_tokens (512 <= 600)`,
		},
		"chunking_limits.bad.yaml": {
			// Two pipelines inherit the top-level chunking: reported once.
			`chunking_limits.bad.yaml:2: chunking.max_tokens: must be >= 16, got 8`,
			`chunking_limits.bad.yaml:3: chunking.overlap_tokens: must be >= 0, got -1`,
			`chunking_limits.bad.yaml:4: chunking.tokenizer: must be one of cl100k_base, o200k_base, got "p50k_base"`,
		},
		"duplicate_pipeline.bad.yaml": {
			`duplicate_pipeline.bad.yaml:5: pipelines[1].name: "docs" is used twice`,
		},
		"source_kind.bad.yaml": {
			`source_kind.bad.yaml:4: pipelines[0].sources[0]: exactly one of files, csv, grist, http must be set, got 0`,
			`source_kind.bad.yaml:6: pipelines[1].sources: at least one source is required`,
		},
		"source_names.bad.yaml": {
			`source_names.bad.yaml:5: pipelines[0].sources[1].name: "files" is used twice in this pipeline`,
			`source_names.bad.yaml:6: pipelines[0].sources[2].name: must match ^[a-z0-9][a-z0-9_-]*$, got "Bad Name"`,
		},
		"review.bad.yaml": {
			`review.bad.yaml:6: pipelines[0].review.sources[0]: "nope" is not a files source of this pipeline`,
			`review.bad.yaml:8: pipelines[0].review.grist.server: must be an http(s) URL`,
			`review.bad.yaml:7: pipelines[0].review.grist.doc_id: required`,
			`review.bad.yaml:11: pipelines[0].review.grist.elements_table: must be a Grist table id`,
			`review.bad.yaml:15: pipelines[1].review: review needs a files source`,
		},
		"schedule.bad.yaml": {
			`schedule.bad.yaml:3: pipelines[0].schedule: "*/61 * * * *" is not a valid schedule: step /61`,
			`schedule.bad.yaml:7: pipelines[1].schedule: "CRON_TZ=Europe/Berlin 0 * * * *" is not a valid schedule: set the zone with time_zone`,
			`schedule.bad.yaml:11: pipelines[2].schedule: "@every 100ms" is not a valid schedule: @every interval must be at least 1s`,
		},
		"daemon.bad.yaml": {
			`daemon.bad.yaml:2: daemon.listen: must be host:port such as ":8080" or "127.0.0.1:8080", got "8080"`,
			`daemon.bad.yaml:3: daemon.debounce: must be >= 0, got -1s`,
			`daemon.bad.yaml:4: daemon.grace_period: must be >= 0, got -5s`,
			`daemon.bad.yaml:6: daemon.poll_interval: must be >= 0, got -2s`,
			`daemon.bad.yaml:5: daemon.max_body_bytes: must be >= 0, got -1`,
		},
		"time_zone.bad.yaml": {
			`time_zone.bad.yaml:3: pipelines[0].time_zone: "Mars/Olympus_Mons" is not an IANA time zone`,
		},
		"pipeline_name.bad.yaml": {
			`pipeline_name.bad.yaml:2: pipelines[0].name: must match ^[a-z0-9][a-z0-9_-]*$, got "Docs"`,
			`pipeline_name.bad.yaml:5: pipelines[1].name: required`,
		},
		"state.bad.yaml": {
			`state.bad.yaml:2: state.driver: must be one of sqlite, postgres, got "mysql"`,
		},
		"postgres.bad.yaml": {
			`postgres.bad.yaml:1: state.dsn: required for driver postgres`,
			`postgres.bad.yaml:3: state.schema: must match`,
		},
		"sink_type.bad.yaml": {
			`sink_type.bad.yaml:2: sink.type: must be one of cypherl, memgraph, got "neo4j"`,
		},
		"memgraph_uri.bad.yaml": {
			`memgraph_uri.bad.yaml:7: pipelines[0].sink.memgraph.uri: "neo4j://memgraph:7687" uses neo4j://, which Memgraph serves only on HA coordinators`,
			`memgraph_uri.bad.yaml:14: pipelines[1].sink.memgraph.uri: scheme must be bolt://, bolt+s:// or bolt+ssc://, got "http://memgraph:7687"`,
			`memgraph_uri.bad.yaml:18: pipelines[2].sink.memgraph: required for type memgraph`,
		},
		"memgraph_values.bad.yaml": {
			`memgraph_values.bad.yaml:3: sink.cypherl: set, but type is "memgraph"`,
			`memgraph_values.bad.yaml:7: sink.memgraph.dialect: must be one of memgraph, neo4j, got "janusgraph"`,
			`memgraph_values.bad.yaml:8: sink.memgraph.batch_size: must be > 0, got 0`,
			`memgraph_values.bad.yaml:9: sink.memgraph.max_retries: must be >= 0, got -1`,
			`memgraph_values.bad.yaml:10: sink.memgraph.vector_capacity: must be > 0, got 0`,
			`memgraph_values.bad.yaml:11: sink.memgraph.vector_metric: must be one of cos, l2sq, ip, got "euclid"`,
			`memgraph_values.bad.yaml:12: sink.memgraph.timeout: must be > 0, got 0s`,
		},
		"openai.bad.yaml": {
			`openai.bad.yaml:1: embedder.model: required for provider openai`,
			`openai.bad.yaml:1: embedder.base_url: required for provider openai`,
			`openai.bad.yaml:3: embedder.dimensions: must be in 1..65535`,
			`openai.bad.yaml:10: pipelines[0].embedder.base_url: must be an http:// or https:// URL`,
			`openai.bad.yaml:16: pipelines[1].embedder.provider: must be one of hashing, openai, got "cohere"`,
		},
		"embedder_values.bad.yaml": {
			// dimensions: 0 for hashing means "default" (384), so it is not reported.
			`embedder_values.bad.yaml:3: embedder.batch_size: must be > 0, got 0`,
			`embedder_values.bad.yaml:4: embedder.max_concurrency: must be > 0, got -2`,
			`embedder_values.bad.yaml:5: embedder.timeout: must be > 0, got -5s`,
			`embedder_values.bad.yaml:6: embedder.max_retries: must be >= 0, got -1`,
			`embedder_values.bad.yaml:7: embedder.max_input_tokens: must be > 0, got 0`,
		},
		"pipeline_values.bad.yaml": {
			`pipeline_values.bad.yaml:3: pipelines[0].batch_size: must be > 0, got 0`,
			`pipeline_values.bad.yaml:4: pipelines[0].max_delete_ratio: must be in (0, 1]`,
			`pipeline_values.bad.yaml:8: pipelines[1].max_delete_ratio: must be in (0, 1] (1 disables the guard), got 1.5`,
			`pipeline_values.bad.yaml:12: pipelines[2].batch_chunk_bytes: must be > 0, got 0`,
			`pipeline_values.bad.yaml:13: pipelines[2].writer_bytes: must be > 0, got -1`,
			`pipeline_values.bad.yaml:18: pipelines[3].writer_bytes: must be >= batch_chunk_bytes (33554432), got 16777216`,
		},
		"files.bad.yaml": {
			`files.bad.yaml:5: pipelines[0].sources[0].files.root: required`,
			`files.bad.yaml:6: pipelines[0].sources[0].files.include[0]: "docs/[abc" is not a valid glob pattern`,
			`files.bad.yaml:6: pipelines[0].sources[0].files.include[1]: "/abs/**" must be relative to root`,
			`files.bad.yaml:6: pipelines[0].sources[0].files.include[2]: "../**" has a ".." segment`,
			`files.bad.yaml:6: pipelines[0].sources[0].files.include[3]: "docs/../../x" has a ".." segment`,
			`files.bad.yaml:7: pipelines[0].sources[0].files.exclude[0]: empty pattern`,
			`files.bad.yaml:8: pipelines[0].sources[0].files.max_file_bytes: must be > 0, got 0`,
			`files.bad.yaml:9: pipelines[0].sources[0].files.anchor: must be a node label`,
		},
		"log.bad.yaml": {
			`log.bad.yaml:2: log.level: must be one of debug, info, warn, error, got "verbose"`,
			`log.bad.yaml:3: log.format: must be one of text, json, got "xml"`,
		},
		"types.bad.yaml": {
			`types.bad.yaml:3: pipelines[0].batch_size: expected an integer, got "abc"`,
			`types.bad.yaml:4: pipelines[0].max_delete_ratio: expected a number, got "half"`,
			`types.bad.yaml:6: pipelines[0].sources: expected a list, got a mapping`,
			`types.bad.yaml:8: pipelines[0].embedder.timeout: expected a duration with a unit such as "60s" or "2m", got "60"`,
			`types.bad.yaml:9: pipelines[0].chunking: expected a mapping, got the value "512"`,
		},
		"syntax.bad.yaml": {
			`syntax.bad.yaml:3: did not find expected node content`,
		},
		"two_documents.bad.yaml": {
			`two_documents.bad.yaml:2: a second YAML document is not allowed`,
		},
		"root.bad.yaml": {
			`root.bad.yaml:1: expected a mapping, got a list`,
		},
	}

	files, err := filepath.Glob("testdata/*.bad.yaml")
	require.NoError(t, err)
	require.Len(t, files, len(tests), "every testdata/*.bad.yaml needs an entry in this table, and every entry a file")
	for _, f := range files {
		name := filepath.Base(f)
		want, ok := tests[name]
		require.True(t, ok, "no expectations for %s", f)
		t.Run(name, func(t *testing.T) {
			c, err := config.Load(f)
			require.Error(t, err)
			require.Nil(t, c)
			msg := err.Error()
			for _, w := range want {
				require.Contains(t, msg, "testdata/"+w)
			}
			require.Len(t, strings.Split(msg, "\n"), len(want), "unexpected extra problems:\n%s", msg)
		})
	}
}

// TestGoodConfigs loads every testdata/*.good.yaml: each must be accepted,
// leave every pipeline with its sections filled in, and stay valid when
// validated again.
func TestGoodConfigs(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("PGPASSWORD", "pw")
	files, err := filepath.Glob("testdata/*.good.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 4)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := config.Load(f)
			require.NoError(t, err)
			require.NotEmpty(t, c.Pipelines)
			for _, p := range c.Pipelines {
				require.NotNil(t, p.Sink, p.Name)
				require.NotNil(t, p.Embedder, p.Name)
				require.NotNil(t, p.Chunking, p.Name)
				require.NotNil(t, p.MaxDeleteRatio, p.Name)
				require.NotNil(t, p.Embedder.MaxRetries, p.Name)
			}
			require.NoError(t, c.Validate())
		})
	}
}

// TestDefaults checks every default against the list in docs/config.md
// (and the field comments in config.go), on the smallest configuration.
func TestDefaults(t *testing.T) {
	dir := t.TempDir()
	c, err := config.Parse([]byte("pipelines:\n  - name: docs\n    sources:\n      - files: {root: corpus}\n"), dir)
	require.NoError(t, err)

	require.Equal(t, dir, c.Dir)
	require.Equal(t, config.State{Driver: "sqlite", Path: filepath.Join(dir, ".kgsync/state.db"), Schema: "kgsync"}, c.State)
	require.Equal(t, config.Log{Level: "info", Format: "text"}, c.Log)
	require.Equal(t, "127.0.0.1:8080", c.Daemon.Listen, "the daemon listens on loopback unless told otherwise")
	require.Nil(t, c.Sink, "top-level sections stay nil when not written")
	require.Nil(t, c.Embedder)
	require.Nil(t, c.Chunking)

	five, ratio := 5, 0.3
	want := config.Pipeline{
		Name:     "docs",
		TimeZone: "UTC",
		Sources: []config.Source{{
			Name:  "files",
			Files: &config.FilesSource{Root: filepath.Join(dir, "corpus"), MaxFileBytes: 64 << 20, Anchor: "Document"},
		}},
		Chunking: &config.Chunking{MaxTokens: 512, OverlapTokens: 64, Tokenizer: "cl100k_base"},
		Embedder: &config.Embedder{
			Provider: "hashing", Model: "hashing-v1", Dimensions: 384, BatchSize: 64, MaxConcurrency: 2,
			Timeout: 60 * time.Second, MaxRetries: &five, MaxInputTokens: 8191,
		},
		Sink:            &config.Sink{Type: "cypherl", Cypherl: &config.CypherlSink{Dir: filepath.Join(dir, ".kgsync/cypherl")}},
		BatchSize:       1000,
		BatchChunkBytes: 16 << 20,
		WriterBytes:     96 << 20,
		MaxDeleteRatio:  &ratio,
	}
	require.Equal(t, want, c.Pipelines[0])

	// Memgraph defaults, with only the URI written; the type is inferred
	// from the one subsection set.
	c, err = config.Parse([]byte("sink:\n  memgraph: {uri: \"bolt://m:7687\"}\n"), dir)
	require.NoError(t, err)
	eight := 8
	require.Equal(t, &config.Sink{Type: "memgraph", Memgraph: &config.MemgraphSink{
		URI: "bolt://m:7687", Dialect: "memgraph", BatchSize: 1000, DeleteBatchSize: 10000, MaxRetries: &eight,
		VectorCapacity: 10000, VectorMetric: "cos", Timeout: 60 * time.Second,
	}}, c.Sink)

	// Postgres: no SQLite path is invented; the schema defaults.
	c, err = config.Parse([]byte("state: {driver: postgres, dsn: \"postgres://x@db/k\"}\n"), dir)
	require.NoError(t, err)
	require.Equal(t, config.State{Driver: "postgres", DSN: "postgres://x@db/k", Schema: "kgsync"}, c.State)

	// An empty file is a valid configuration without pipelines.
	c, err = config.Parse(nil, dir)
	require.NoError(t, err)
	require.Empty(t, c.Pipelines)
	require.Equal(t, "sqlite", c.State.Driver)
}

// TestInheritance checks that pipelines copy top-level sections they do not
// set, that a section a pipeline writes replaces the top-level one as a whole
// (absent keys take the defaults, not the top-level values), and that written
// zeros are kept.
func TestInheritance(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	c, err := config.Load("testdata/full.good.yaml")
	require.NoError(t, err)
	dir := c.Dir

	docs, ok := c.Pipeline("docs")
	require.True(t, ok)
	regs, ok := c.Pipeline("regs-2")
	require.True(t, ok)
	_, ok = c.Pipeline("nope")
	require.False(t, ok)

	// docs inherits all three sections: equal values, separate copies.
	require.Equal(t, c.Chunking, docs.Chunking)
	require.Equal(t, c.Embedder, docs.Embedder)
	require.Equal(t, c.Sink, docs.Sink)
	require.NotSame(t, c.Chunking, docs.Chunking)
	require.NotSame(t, c.Embedder, docs.Embedder)
	require.NotSame(t, c.Embedder.MaxRetries, docs.Embedder.MaxRetries)
	require.NotSame(t, c.Sink.Cypherl, docs.Sink.Cypherl)
	docs.Embedder.BatchSize = 1
	require.Equal(t, 32, c.Embedder.BatchSize, "changing a pipeline's copy must not change the top level")

	// Written values, including zeros that differ from the defaults.
	require.Equal(t, config.Chunking{MaxTokens: 256, OverlapTokens: 0, Tokenizer: "o200k_base"}, *c.Chunking)
	require.Equal(t, 0, *c.Embedder.MaxRetries)
	require.Equal(t, 2*time.Minute, c.Embedder.Timeout)
	require.Equal(t, 256, c.Embedder.Dimensions)
	require.Equal(t, filepath.Join(dir, "out/cypherl"), c.Sink.Cypherl.Dir)
	require.Equal(t, filepath.Join(dir, "var/state.db"), c.State.Path)
	require.Equal(t, 1.0, *docs.MaxDeleteRatio)
	require.Equal(t, "Europe/Berlin", docs.TimeZone)
	require.Equal(t, "handbook", docs.Sources[0].Name)
	require.Equal(t, "files", docs.Sources[1].Name)
	require.Equal(t, "/srv/handbook", docs.Sources[0].Files.Root)
	require.Equal(t, filepath.Join(dir, "notes"), docs.Sources[1].Files.Root)
	require.Equal(t, []string{"**/*.md", "**/*.{html,pdf}"}, docs.Sources[0].Files.Include)
	require.Equal(t, int64(1048576), docs.Sources[0].Files.MaxFileBytes)

	// regs-2 writes its own chunking (partially) and sink: the absent
	// tokenizer is the default cl100k_base, not the top-level o200k_base.
	require.Equal(t, config.Chunking{MaxTokens: 1024, OverlapTokens: 128, Tokenizer: "cl100k_base"}, *regs.Chunking)
	require.Equal(t, "memgraph", regs.Sink.Type)
	require.Nil(t, regs.Sink.Cypherl)
	require.Equal(t, 3, *regs.Sink.Memgraph.MaxRetries)
	require.Equal(t, 30*time.Second, regs.Sink.Memgraph.Timeout)
	require.Equal(t, "neo4j", regs.Sink.Memgraph.Dialect)
	require.Equal(t, c.Embedder, regs.Embedder)
	require.Equal(t, 0.3, *regs.MaxDeleteRatio)
}

// TestAnchors checks YAML anchors, aliases and merge keys, and that
// top-level "x-" keys (holding anchors) are ignored.
func TestAnchors(t *testing.T) {
	c, err := config.Load("testdata/anchors.good.yaml")
	require.NoError(t, err)
	require.Len(t, c.Pipelines, 2)
	a, b := c.Pipelines[0], c.Pipelines[1]
	require.Equal(t, "a", a.Name)
	require.Equal(t, "b", b.Name, "a key written next to <<: overrides the merged one")
	for _, p := range []config.Pipeline{a, b} {
		f := p.Sources[0].Files
		require.Equal(t, filepath.Join(c.Dir, "a"), f.Root)
		require.Equal(t, int64(1000), f.MaxFileBytes)
		require.Equal(t, "Note", f.Anchor)
	}
	require.NotSame(t, a.Sources[0].Files, b.Sources[0].Files, "aliases decode into separate values")

	// An "x-" key is only ignored at the top level.
	_, err = config.Parse([]byte("log:\n  x-level: debug\n"), "")
	require.ErrorContains(t, err, `line 2: unknown key "x-level" in log`)
}

// TestAliasLimits checks that self-referencing aliases and exponential alias
// expansion end in errors, quickly.
func TestAliasLimits(t *testing.T) {
	// Each level merges the previous one twice: 2^40 entries if expanded naively.
	var b strings.Builder
	b.WriteString("x-l0: &l0 {name: a}\n")
	for i := 1; i <= 40; i++ {
		b.WriteString("x-l" + strconv.Itoa(i) + ": &l" + strconv.Itoa(i) + " {<<: [*l" + strconv.Itoa(i-1) + ", *l" + strconv.Itoa(i-1) + "]}\n")
	}
	b.WriteString("pipelines:\n  - <<: *l40\n")
	start := time.Now()
	_, err := config.Parse([]byte(b.String()), "")
	require.ErrorContains(t, err, "document too complex")
	require.Less(t, time.Since(start), 5*time.Second)

	_, err = config.Parse([]byte("pipelines:\n  - &p\n    name: a\n    <<: *p\n"), "")
	require.Error(t, err)
}

// TestEnvExpansion checks ${VAR}, ${VAR:-default} and $$ in values after
// parsing: typed fields take expanded text, keys and comments are never
// expanded, and a YAML special character inside a variable stays data.
func TestEnvExpansion(t *testing.T) {
	t.Setenv("KGSYNC_TEST_KEY", "sk-123")
	t.Setenv("KGSYNC_TEST_BATCH", "48")
	t.Setenv("KGSYNC_TEST_EMPTY", "")
	t.Setenv("KGSYNC_TEST_YAML", "a: [b, c] # not yaml")
	unsetenv(t, "KGSYNC_TEST_UNSET")
	const data = `# ${KGSYNC_TEST_UNSET} in a comment is not expanded
state:
  driver: postgres
  dsn: "postgres://u:${KGSYNC_TEST_YAML}@db/k"
embedder:
  provider: openai
  base_url: ${KGSYNC_TEST_UNSET:-https://api.example.com/v1}
  model: ${KGSYNC_TEST_EMPTY:-text-embedding-3-small}
  api_key: ${KGSYNC_TEST_KEY}
  batch_size: ${KGSYNC_TEST_BATCH}
  timeout: ${KGSYNC_TEST_UNSET:-90s}
pipelines:
  - name: docs
    sources:
      - name: costs
        files:
          root: "$$HOME/price$list"
          anchor: Doc${KGSYNC_TEST_EMPTY}
`
	c, err := config.Parse([]byte(data), "")
	require.NoError(t, err)
	require.Equal(t, "postgres://u:a: [b, c] # not yaml@db/k", c.State.DSN)
	require.Equal(t, "https://api.example.com/v1", c.Embedder.BaseURL, "unset: default")
	require.Equal(t, "text-embedding-3-small", c.Embedder.Model, "set but empty: default")
	require.Equal(t, "sk-123", c.Embedder.APIKey)
	require.Equal(t, 48, c.Embedder.BatchSize)
	require.Equal(t, 90*time.Second, c.Embedder.Timeout)
	require.Equal(t, "$HOME/price$list", c.Pipelines[0].Sources[0].Files.Root, `"$$" is "$"; a lone "$" stays`)
	require.Equal(t, "Doc", c.Pipelines[0].Sources[0].Files.Anchor, "set but empty without default: empty")

	// Keys are not expanded: "${X}" as a key is an unknown key.
	t.Setenv("KGSYNC_TEST_KEYNAME", "log")
	_, err = config.Parse([]byte("${KGSYNC_TEST_KEYNAME}:\n  level: info\n"), "")
	require.ErrorContains(t, err, `line 1: unknown key "${KGSYNC_TEST_KEYNAME}" at the top level`)

	// An expanded value that is not a number, in a number field.
	t.Setenv("KGSYNC_TEST_BATCH", "many")
	_, err = config.Parse([]byte("embedder: {batch_size: \"${KGSYNC_TEST_BATCH}\"}\n"), "")
	require.ErrorContains(t, err, `line 1: embedder.batch_size: expected an integer, got "many"`)
	t.Setenv("KGSYNC_TEST_BATCH", "")
	_, err = config.Parse([]byte("embedder: {batch_size: \"${KGSYNC_TEST_BATCH}\"}\n"), "")
	require.ErrorContains(t, err, `line 1: embedder.batch_size: expected an integer, got ""`)

	// Every unset variable is reported, each with its path.
	_, err = config.Parse([]byte("state: {dsn: \"${KGSYNC_TEST_UNSET}\"}\nsink: {cypherl: {dir: \"${KGSYNC_TEST_UNSET}\"}}\n"), "")
	require.ErrorContains(t, err, "line 1: state.dsn: environment variable KGSYNC_TEST_UNSET is not set")
	require.ErrorContains(t, err, "line 2: sink.cypherl.dir: environment variable KGSYNC_TEST_UNSET is not set")
}

// TestUnknownKeyLines checks the line and path of unknown keys at several
// depths, from Parse ("line N") and from Load ("file:N"). Line numbers are
// counted in the literals below.
func TestUnknownKeyLines(t *testing.T) {
	const data = `log:
  level: info
pipelines:
  - name: a
    sources:
      - files: {root: x}
  - name: b
    sources:
      - files:
          root: y
          exclud: ["*.tmp"]
    sink:
      memgraph:
        url: bolt://m:7687
    embeder: {}
`
	_, err := config.Parse([]byte(data), "")
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, []string{
		`line 11: unknown key "exclud" in pipelines[1].sources[0].files (did you mean "exclude"?)`,
		`line 14: unknown key "url" in pipelines[1].sink.memgraph (did you mean "uri"?)`,
		`line 15: unknown key "embeder" in pipelines[1] (did you mean "embedder"?)`,
	}, lines)

	path := filepath.Join(t.TempDir(), "kgsync.yaml")
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	_, err = config.Load(path)
	require.ErrorContains(t, err, path+`:11: unknown key "exclud"`)

	// No suggestion when nothing is close.
	_, err = config.Parse([]byte("log: {verbosity: 3}\n"), "")
	require.EqualError(t, err, `line 1: unknown key "verbosity" in log`)
}

// TestRelativePaths checks that state.path, sink.cypherl.dir and files.root
// are resolved against the config file's directory exactly once (inherited
// copies are not resolved again), and that absolute paths are kept.
func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, "elsewhere")
	data := `state: {path: data/state.db}
sink: {cypherl: {dir: out}}
pipelines:
  - name: a
    sources: [{files: {root: docs}}]
  - name: b
    sources: [{files: {root: "` + abs + `"}}]
    sink: {cypherl: {dir: ../b-out}}
`
	path := filepath.Join(dir, "conf", "kgsync.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))

	c, err := config.Load(path)
	require.NoError(t, err)
	conf := filepath.Join(dir, "conf")
	require.Equal(t, conf, c.Dir)
	require.Equal(t, filepath.Join(conf, "data/state.db"), c.State.Path)
	require.Equal(t, filepath.Join(conf, "out"), c.Sink.Cypherl.Dir)
	require.Equal(t, filepath.Join(conf, "out"), c.Pipelines[0].Sink.Cypherl.Dir)
	require.Equal(t, filepath.Join(conf, "docs"), c.Pipelines[0].Sources[0].Files.Root)
	require.Equal(t, abs, c.Pipelines[1].Sources[0].Files.Root)
	require.Equal(t, filepath.Join(dir, "b-out"), c.Pipelines[1].Sink.Cypherl.Dir)

	// A relative dir given to Parse is joined once, even for inherited copies.
	c, err = config.Parse([]byte(data), "conf")
	require.NoError(t, err)
	require.Equal(t, filepath.Join("conf", "out"), c.Pipelines[0].Sink.Cypherl.Dir)
	require.Equal(t, filepath.Join("conf", "data/state.db"), c.State.Path)

	// dir "" leaves paths as written.
	c, err = config.Parse([]byte(data), "")
	require.NoError(t, err)
	require.Equal(t, "out", c.Pipelines[0].Sink.Cypherl.Dir)
	require.Equal(t, "docs", c.Pipelines[0].Sources[0].Files.Root)

	_, err = config.Load(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "read config:")
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestValidateBuiltInGo checks Validate on a Config built in Go: no file
// positions, nil pipeline sections allowed, all problems in one error.
func TestValidateBuiltInGo(t *testing.T) {
	ratio := 2.0
	c := &config.Config{
		State: config.State{Driver: "postgres"},
		Log:   config.Log{Level: "info", Format: "text"},
		Pipelines: []config.Pipeline{
			{Name: "a", TimeZone: "UTC", BatchSize: 1, BatchChunkBytes: 1, WriterBytes: 1, Sources: []config.Source{{Name: "f", Files: &config.FilesSource{Root: "/x", MaxFileBytes: 1, Anchor: "Doc"}}}},
			{Name: "a", BatchSize: 1, BatchChunkBytes: 1, WriterBytes: 1, MaxDeleteRatio: &ratio, Sources: []config.Source{{Name: "f", Files: &config.FilesSource{Root: "/x", MaxFileBytes: 1, Anchor: "Doc"}}},
				Chunking: &config.Chunking{MaxTokens: 100, OverlapTokens: 100, Tokenizer: "cl100k_base"}},
		},
	}
	err := c.Validate()
	require.Error(t, err)
	require.Equal(t, []string{
		`state.dsn: required for driver postgres, e.g. "postgres://kgsync:${PGPASSWORD}@db:5432/kgsync"`,
		`state.schema: must match ^[a-z_][a-z0-9_]*$, got ""`,
		`pipelines[1].max_delete_ratio: must be in (0, 1] (1 disables the guard), got 2`,
		`pipelines[1].name: "a" is used twice (also pipelines[0])`,
		`pipelines[1].chunking.max_tokens: must be > overlap_tokens (100 <= 100)`,
	}, strings.Split(err.Error(), "\n"))

	c.State = config.State{Driver: "sqlite", Path: "/tmp/s.db"}
	c.Pipelines = c.Pipelines[:1]
	require.NoError(t, c.Validate())
}

// TestSchedules checks the cron forms the daemon accepts: five fields,
// optional seconds, descriptors; and rejects the rest.
func TestSchedules(t *testing.T) {
	tests := []struct {
		spec string
		ok   bool
	}{
		{"*/5 * * * *", true},
		{"0 */15 * * * *", true},
		{"30 6 * * MON-FRI", true},
		{"@hourly", true},
		{"@every 5m", true},
		{"@every 1s", true},
		{"0 0 1 */3 *", true},
		{"*/59 * * * *", true},
		{"*/60 * * * *", false},
		{"61 * * * *", false},
		{"* * * *", false},
		{"@every", false},
		{"@every soon", false},
		{"@fortnightly", false},
		{"TZ=UTC * * * * *", false},
		{"TZ=", false},
		{"0 0 * * 7/8", false},
	}
	for _, tt := range tests {
		data := "pipelines:\n  - name: p\n    schedule: \"" + tt.spec + "\"\n    sources: [{files: {root: x}}]\n"
		_, err := config.Parse([]byte(data), "")
		if tt.ok {
			require.NoError(t, err, tt.spec)
		} else {
			require.ErrorContains(t, err, "line 3: pipelines[0].schedule: ", tt.spec)
		}
	}
}

// TestDocsExamples parses every ```yaml block of docs/config.md, so the
// documentation cannot drift from the code.
func TestDocsExamples(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("GRIST_API_KEY", "grist-test")
	t.Setenv("PGPASSWORD", "pw")
	md, err := os.ReadFile("../docs/config.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(md), -1)
	require.GreaterOrEqual(t, len(blocks), 2)
	for i, b := range blocks {
		_, err := config.Parse([]byte(b[1]), t.TempDir())
		require.NoError(t, err, "docs/config.md yaml block %d:\n%s", i, b[1])
	}
}

// TestReviewDefaults: a review section names only its Grist document; the
// tables default to Documents and Elements.
func TestReviewDefaults(t *testing.T) {
	c, err := config.Load("testdata/review.good.yaml")
	require.NoError(t, err)
	g := c.Pipelines[0].Review.Grist
	require.Equal(t, "Documents", g.DocumentsTable)
	require.Equal(t, "Elements", g.ElementsTable)
	require.Empty(t, c.Pipelines[0].Review.Sources, "every files source")
}

// TestAssistantPlaybookResolved: assistant.playbook is relative to the
// config file, like every path.
func TestAssistantPlaybookResolved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kgsync.yaml")
	data := "assistant:\n  playbook: prompts/playbook.md\npipelines:\n  - name: docs\n    sources:\n      - files: {root: docs}\n"
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	c, err := config.Load(path)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "prompts", "playbook.md"), c.Assistant.Playbook)
	_, err = config.Parse([]byte("assistant: {play_book: x}\n"), "")
	require.ErrorContains(t, err, `unknown key "play_book" in assistant`)
}

// TestCheckPathsPlaybook: validate reports an assistant.playbook file that
// is not there, with its line, before an assistant asks for the prompt.
func TestCheckPathsPlaybook(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "corpus"), 0o755))
	yaml := "pipelines:\n  - name: docs\n    sources:\n      - files: {root: corpus}\nassistant:\n  playbook: playbook.md\n"
	c, err := config.Parse([]byte(yaml), dir)
	require.NoError(t, err)
	errs := config.CheckPaths(c)
	require.Len(t, errs, 1)
	require.Contains(t, errs[0].Error(), "6: assistant.playbook: "+filepath.Join(dir, "playbook.md")+": no such file or directory")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "playbook.md"), []byte("# Playbook\n"), 0o644))
	require.Empty(t, config.CheckPaths(c))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "dir.md"), 0o755))
	c, err = config.Parse([]byte("assistant: {playbook: dir.md}\n"), dir)
	require.NoError(t, err)
	errs = config.CheckPaths(c)
	require.Len(t, errs, 1)
	require.Contains(t, errs[0].Error(), "is a directory, not a file")
}
