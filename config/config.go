// Package config holds kgsync's YAML configuration: the types, loading with
// strict decoding and ${ENV} expansion, defaults, and validation whose
// messages name the path of the offending key
// (for example "pipelines[0].chunking.max_tokens: must be > overlap_tokens").
//
// config is a leaf package: it imports no other kgsync package. Each
// connector's constructor takes its own section of the config.
package config

import "time"

// Config is the whole configuration file.
//
// Top-level Sink, Embedder and Chunking are defaults: a pipeline that leaves
// its own section unset inherits them (see Load).
type Config struct {
	// State is where kgsync keeps its sync state.
	State State `yaml:"state"`
	// Sink is the default sink for pipelines that set none.
	Sink *Sink `yaml:"sink,omitempty"`
	// Embedder is the default embedder for pipelines that set none.
	Embedder *Embedder `yaml:"embedder,omitempty"`
	// Chunking is the default chunking for pipelines that set none.
	Chunking *Chunking `yaml:"chunking,omitempty"`
	// Search is the default search tuning for pipelines that set none.
	Search *Search `yaml:"search,omitempty"`
	// Log configures logging.
	Log Log `yaml:"log"`
	// Daemon configures `kgsync daemon`: its HTTP server, webhooks, API and
	// shutdown.
	Daemon Daemon `yaml:"daemon"`
	// Assistant configures the assistant tools (`kgsync mcp`, the
	// daemon's /mcp).
	Assistant Assistant `yaml:"assistant,omitempty"`
	// Pipelines are the configured flows, run in the order given.
	Pipelines []Pipeline `yaml:"pipelines"`

	// Dir is the directory of the config file (absolute after Load; the dir
	// argument of Parse); relative paths in the file are resolved against it.
	// Not read from YAML.
	Dir string `yaml:"-"`

	// src maps key paths to lines of the file for Validate's messages; nil
	// for a Config built in Go.
	src *source
}

// State selects and configures the state store.
type State struct {
	// Driver is "sqlite" (default) or "postgres".
	Driver string `yaml:"driver"`
	// Path is the SQLite database file (driver sqlite). Default ".kgsync/state.db"
	// relative to the config file; Load makes it absolute (joined to Dir).
	Path string `yaml:"path"`
	// DSN is the Postgres connection string (driver postgres), e.g.
	// "postgres://kgsync:${PGPASSWORD}@db:5432/kgsync". Secrets come from ${ENV}.
	DSN string `yaml:"dsn"`
	// Schema is the Postgres schema kgsync's tables live in (default "kgsync").
	Schema string `yaml:"schema"`
}

// Log configures the slog logger.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `yaml:"level"`
	// Format is "text" (default) or "json".
	Format string `yaml:"format"`
}

// Daemon configures `kgsync daemon` (see docs/daemon.md). Secrets come from
// ${ENV}. In a Config built in Go, a zero PollInterval, MaxBodyBytes,
// RunTimeout, MaxAttempts or RetryBackoff means the default.
type Daemon struct {
	// Listen is the HTTP server's address, host:port (default
	// "127.0.0.1:8080", this machine only). An address other machines can
	// reach (":8080", "0.0.0.0:8080", a public IP) needs APIToken, or
	// `kgsync daemon --insecure-no-auth`.
	Listen string `yaml:"listen"`
	// WebhookSecret is compared (constant time) with the Authorization header
	// of Grist webhook deliveries, either the whole header or what follows
	// "Bearer "; empty = webhooks are refused (403).
	WebhookSecret string `yaml:"webhook_secret,omitempty"`
	// APIToken is the bearer token of /api/...; empty = the API needs none
	// (allowed on a loopback Listen only, unless --insecure-no-auth).
	APIToken string `yaml:"api_token,omitempty"`
	// AnonymousWrites lets callers without APIToken make state-changing
	// calls (POST /api/...) when APIToken is empty. Off by default: without
	// a token they get 403, since any web page the machine's browser opens
	// could otherwise send them (reads stay open on a loopback Listen).
	AnonymousWrites bool `yaml:"anonymous_writes,omitempty"`
	// AllowedHosts are Host header names (without port) the API answers
	// besides loopback names and IPs when it listens on loopback, such as
	// the name a reverse proxy on this machine passes on. Any other Host
	// gets 403 (DNS rebinding).
	AllowedHosts []string `yaml:"allowed_hosts,omitempty"`
	// Debounce is how long the daemon collects webhook deliveries for one
	// pipeline before triggering one run for all of them (default 2s; 0 =
	// trigger at once).
	Debounce time.Duration `yaml:"debounce"`
	// GracePeriod is how long a stopping daemon lets running runs finish
	// before cancelling them; a cancelled run stops before its next commit
	// (default 30s).
	GracePeriod time.Duration `yaml:"grace_period"`
	// MaxBodyBytes caps a webhook delivery's body; larger ones get 413
	// (default 1 MiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// WebhookBufferRows bounds, per pipeline, the webhook rows kept between
	// a delivery and the end of the run it triggers (default 10000); rows
	// beyond it are dropped and counted, never the run they trigger (the
	// run reads what changed from Grist, the rows are hints).
	WebhookBufferRows int `yaml:"webhook_buffer_rows"`
	// WebhookBufferBytes bounds, per pipeline, the estimated bytes of the
	// webhook rows kept, in the debounce window and until the run they
	// trigger succeeds, each (default 64 MiB): rows of new ids beyond it
	// are dropped and counted like rows beyond WebhookBufferRows.
	WebhookBufferBytes int64 `yaml:"webhook_buffer_bytes"`
	// PollInterval is how often a replica polls River for jobs, snoozes a
	// job whose pipeline another replica is running, and looks for jobs
	// left running by a replica that died (taken over after two polls;
	// default 2s).
	PollInterval time.Duration `yaml:"poll_interval"`
	// RunTimeout bounds one run: its context is cancelled after it (the
	// run stops before its next commit) and the job is retried (default
	// 6h). River's own rescue of a job stuck in a live replica waits this
	// long plus a minute.
	RunTimeout time.Duration `yaml:"run_timeout"`
	// MaxAttempts is how often a failing job is tried before it is
	// discarded (default 5; attempts that found the pipeline locked do not
	// count).
	MaxAttempts int `yaml:"max_attempts"`
	// RetryBackoff is the wait before the first retry of a failed job; it
	// doubles with each further attempt, up to 10 minutes or RetryBackoff
	// when that is longer (default 10s).
	RetryBackoff time.Duration `yaml:"retry_backoff"`
	// VerifyInterval is how often the daemon compares each pipeline's graph
	// with state (counts and vector indexes, `kgsync verify --sample -1`),
	// also once at start-up (default 1h; 0 = never). In a Config built in
	// Go, 0 means never.
	VerifyInterval time.Duration `yaml:"verify_interval"`
}

// Pipeline is one configured flow: sources → mapping → chunking → embedding → sink.
type Pipeline struct {
	// Name identifies the pipeline in state, CLI and API: [a-z0-9_-]+.
	Name string `yaml:"name"`
	// Schedule is a robfig/cron/v3 spec ("*/5 * * * *", "0 */15 * * * *",
	// "@every 5m"), parsed with ScheduleFields; empty = no schedule.
	Schedule string `yaml:"schedule,omitempty"`
	// TimeZone is the IANA zone of Schedule (default "UTC"; Load sets it, so
	// time.LoadLocation(TimeZone) can be used directly).
	TimeZone string `yaml:"time_zone,omitempty"`
	// Sources feed the pipeline; names must be unique within it.
	Sources []Source `yaml:"sources"`
	// Model is the data model tables map through (default mapping when unset).
	Model *Model `yaml:"model,omitempty"`
	// Mandatory are pairs of document elements that must always be
	// retrieved together (MANDATORY edges).
	Mandatory []Mandatory `yaml:"mandatory,omitempty"`
	// Chunking overrides the top-level chunking.
	Chunking *Chunking `yaml:"chunking,omitempty"`
	// Search overrides the top-level search tuning.
	Search *Search `yaml:"search,omitempty"`
	// Eval is the pipeline's golden set, run by the daemon after each run
	// that changed the graph (kgsync_eval_* metrics).
	Eval *Eval `yaml:"eval,omitempty"`
	// Embedder overrides the top-level embedder.
	Embedder *Embedder `yaml:"embedder,omitempty"`
	// Sink overrides the top-level sink.
	Sink *Sink `yaml:"sink,omitempty"`
	// BatchSize is how many records form one write-and-commit batch (default 1000, DefaultPipelineBatchSize; a batch also ends once its documents hold 8 MiB).
	BatchSize int `yaml:"batch_size,omitempty"`
	// BatchChunkBytes ends a batch early, in bytes, once the chunks its
	// records map to and the stored chunks they replace hold this much
	// text (default 16 MiB, DefaultPipelineBatchChunkBytes): a chunking
	// change then makes more, smaller batches instead of larger ones.
	BatchChunkBytes int64 `yaml:"batch_chunk_bytes,omitempty"`
	// WriterBytes bounds, in bytes, the prepared batches a run hands to its
	// writer and that are not written yet: the JSON properties of their
	// records and chunks and their float32 vectors (default 96 MiB,
	// DefaultPipelineWriterBytes; at least BatchChunkBytes). One batch is
	// always handed over, whatever its size.
	WriterBytes int64 `yaml:"writer_bytes,omitempty"`
	// MaxDeleteRatio is the mass-delete guard: a run that would delete more
	// than this share of the pipeline's records stops before deleting
	// (default 0.3; 1 disables the guard).
	MaxDeleteRatio *float64 `yaml:"max_delete_ratio,omitempty"`
	// Review publishes the pipeline's parsed documents to a Grist table
	// pair where experts correct them, and reads their corrections back
	// (docs/review.md). Only for pipelines with a files source.
	Review *Review `yaml:"review,omitempty"`
}

// Review is the expert review of a files pipeline's documents in Grist:
// kgsync keeps one row per document and one per element there, and an
// expert's corrected text, exclusion or mandatory link reaches the graph on
// the next run.
type Review struct {
	// Grist is the document holding the review tables.
	Grist *ReviewGrist `yaml:"grist"`
	// Sources are the files sources reviewed (default: every files source
	// of the pipeline).
	Sources []string `yaml:"sources,omitempty"`
}

// ReviewGrist is the Grist document of a review and its two tables, which
// kgsync creates with their columns when missing (and `kgsync grist review
// install PIPELINE` creates explicitly).
type ReviewGrist struct {
	// Server is the Grist server or team site URL, as for a grist source.
	Server string `yaml:"server"`
	// DocID is the document id from the document's URL.
	DocID string `yaml:"doc_id"`
	// APIKey is the API key of the account kgsync writes as; use ${ENV}.
	// It needs edit access (owner access to create the tables).
	APIKey string `yaml:"api_key"`
	// DocumentsTable is the table of documents (default "Documents").
	DocumentsTable string `yaml:"documents_table,omitempty"`
	// ElementsTable is the table of elements (default "Elements").
	ElementsTable string `yaml:"elements_table,omitempty"`
	// MaxInFlight bounds concurrent requests to the document (default 4,
	// at most 10).
	MaxInFlight int `yaml:"max_in_flight,omitempty"`
	// FullEvery is the interval of full reads of the experts' columns
	// (default 24h); between them only what /compare reports is read.
	FullEvery time.Duration `yaml:"full_every,omitempty"`
}

// Source configures one source; exactly one of its kinds is set.
type Source struct {
	// Name identifies the source within its pipeline (default: the kind, e.g. "files").
	Name string `yaml:"name"`
	// Files reads a directory of documents.
	Files *FilesSource `yaml:"files,omitempty"`
	// CSV reads CSV files as tables.
	CSV *CSVSource `yaml:"csv,omitempty"`
	// Grist reads the tables of a Grist document.
	Grist *GristSource `yaml:"grist,omitempty"`
	// HTTP reads a paginated JSON API.
	HTTP *HTTPSource `yaml:"http,omitempty"`
}

// FilesSource reads documents from a directory tree.
type FilesSource struct {
	// Root is the directory; relative to the config file's directory (Load
	// joins it to Config.Dir).
	Root string `yaml:"root"`
	// Include are glob patterns (with ** for any depth) matched against the
	// slash-separated path relative to Root. Default: every file of a known format.
	Include []string `yaml:"include,omitempty"`
	// Exclude are glob patterns; a path matching any is skipped.
	Exclude []string `yaml:"exclude,omitempty"`
	// MaxFileBytes caps the size of one file (default 64 MiB); larger files
	// are reported and skipped.
	MaxFileBytes int64 `yaml:"max_file_bytes,omitempty"`
	// Anchor is the node label of documents (default "Document").
	Anchor string `yaml:"anchor,omitempty"`
}

// Search tunes `kgsync search` and `kgsync eval` (docs/retrieval.md). Unset
// keys take retrieval's defaults, measured on the golden set.
type Search struct {
	// K is the number of hits (default 5).
	K int `yaml:"k,omitempty"`
	// Budget is the token budget of an expanded context (default 2500).
	Budget int `yaml:"budget,omitempty"`
	// RRFK is the rank constant of reciprocal rank fusion (default 10).
	RRFK float64 `yaml:"rrf_k,omitempty"`
	// OverFetch is how many candidates each signal ranks per hit asked for
	// (default 10, at least 50 in all).
	OverFetch int `yaml:"over_fetch,omitempty"`
	// Weights are the fusion weights of the signals; 0 turns one off.
	Weights *SearchWeights `yaml:"weights,omitempty"`
	// Floor is the relevance floor.
	Floor *SearchFloor `yaml:"floor,omitempty"`
}

// Eval names a pipeline's golden set (`kgsync eval`, docs/retrieval.md).
type Eval struct {
	// Golden is the golden set file (JSON Lines), relative to the config
	// file.
	Golden string `yaml:"golden"`
}

// Assistant configures the MCP server of the assistant tools
// (docs/assistant-tools.md).
type Assistant struct {
	// Playbook is a Markdown file served as the prompt "playbook" (which
	// tools in which order for which kind of question), relative to the
	// config file; empty serves the built-in playbook.
	Playbook string `yaml:"playbook,omitempty"`
}

// SearchWeights are the reciprocal rank fusion weights; unset keys keep
// their defaults.
type SearchWeights struct {
	Vector  *float64 `yaml:"vector,omitempty"`
	Lexical *float64 `yaml:"lexical,omitempty"`
	Element *float64 `yaml:"element,omitempty"`
	Term    *float64 `yaml:"term,omitempty"`
	Address *float64 `yaml:"address,omitempty"`
	// Proximity weighs the best candidates re-ranked by how much of the
	// query one window of their text holds.
	Proximity *float64 `yaml:"proximity,omitempty"`
}

// SearchFloor is the relevance floor: a search whose evidence (the largest
// share of the query's weight of words one of the best hits holds within
// a window, plus ScoreWeight × the best fused score) is below MinEvidence
// answers "nothing relevant", unless an address matched or the query asks
// what a defined term means (docs/retrieval.md#the-relevance-floor).
type SearchFloor struct {
	// Disabled turns the floor off.
	Disabled bool `yaml:"disabled,omitempty"`
	// MinEvidence is the least evidence, in [0, 2] (default 0.76, for the
	// hashing embedder); `kgsync eval` prints the value calibrated for the
	// pipeline's embedder and the trade-off curve.
	MinEvidence *float64 `yaml:"min_evidence,omitempty"`
	// ScoreWeight is the weight of the best fused score in the evidence,
	// in [0, 1] (default 0.4).
	ScoreWeight *float64 `yaml:"score_weight,omitempty"`
	// MinCoverage is the least share of the query's weight of words the
	// best hits hold between them, in [0, 1] (default 0: not checked).
	MinCoverage *float64 `yaml:"min_coverage,omitempty"`
	// MinScore is the least fused score of the best hit, in [0, 1].
	MinScore *float64 `yaml:"min_score,omitempty"`
	// QuantityShare, for a question asking a quantity ("how many",
	// "сколько"), is the least share of the window's weight of words the
	// best hits must hold near a number, in [0, 1] (default 0.5; 0: not
	// checked).
	QuantityShare *float64 `yaml:"quantity_share,omitempty"`
	// Hits is how many of the best hits the coverage reads (default 3).
	Hits int `yaml:"hits,omitempty"`
	// DeclineEvidence is the evidence below which a search whose hits no
	// other signal vouches for answers "nothing relevant", in [0, 2]
	// (default 0.42); between it and MinEvidence the hits are returned
	// with confidence low.
	DeclineEvidence *float64 `yaml:"decline_evidence,omitempty"`
	// Calibration is the file `kgsync eval --calibrate` writes the floor's
	// calibration to, per embedder fingerprint, and searches read it from
	// (default .kgsync/floor-calibration.json beside the config file); a
	// calibration of another embedder is not used.
	Calibration string `yaml:"calibration,omitempty"`
}

// Chunking configures the structural chunker.
type Chunking struct {
	// MaxTokens is the upper bound of a chunk's size in tokens (default 512).
	MaxTokens int `yaml:"max_tokens"`
	// OverlapTokens is how many tokens of the previous neighbouring chunk of
	// the same parent are repeated at the start of a chunk (default 64).
	OverlapTokens int `yaml:"overlap_tokens"`
	// Tokenizer is "cl100k_base" (default) or "o200k_base".
	Tokenizer string `yaml:"tokenizer,omitempty"`
	// DocumentTimeout is the time budget of parsing and chunking one
	// document (0 = pipeline.DefaultDocumentTimeout, 60s). A document over
	// it is skipped, reported as "too complex", and the run goes on; it is
	// not part of the fingerprint.
	DocumentTimeout time.Duration `yaml:"document_timeout,omitempty"`
}

// Embedder configures the embedding provider.
type Embedder struct {
	// Provider is "hashing" (local, lexical, offline; default) or "openai"
	// (any OpenAI-compatible /v1/embeddings endpoint).
	Provider string `yaml:"provider"`
	// Model is the model name sent to the provider (default "hashing-v1" for hashing).
	Model string `yaml:"model,omitempty"`
	// Dimensions is the vector length, 1..65535 (default 384 for hashing; for
	// openai, sent as "dimensions" when set, 0 = the model's default).
	Dimensions int `yaml:"dimensions,omitempty"`
	// BaseURL is the API root, e.g. "https://api.openai.com/v1" (openai).
	BaseURL string `yaml:"base_url,omitempty"`
	// APIKey is the bearer token; use ${ENV} (openai).
	APIKey string `yaml:"api_key,omitempty"`
	// BatchSize is the number of texts per request (default 64).
	BatchSize int `yaml:"batch_size,omitempty"`
	// MaxConcurrency is the number of requests in flight (default 2).
	MaxConcurrency int `yaml:"max_concurrency,omitempty"`
	// Timeout bounds one request (default 60s).
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// MaxRetries bounds retries of 429/5xx (default 5).
	MaxRetries *int `yaml:"max_retries,omitempty"`
	// MaxInputTokens is the model's input limit; longer chunk texts are split
	// by the chunker, never truncated (default 8191).
	MaxInputTokens int `yaml:"max_input_tokens,omitempty"`
}

// Sink configures where the graph is written.
type Sink struct {
	// Type is "cypherl" (default) or "memgraph". When unset and only Memgraph
	// is given, Load infers "memgraph". Only the matching subsection may be set.
	Type string `yaml:"type"`
	// Cypherl configures the CYPHERL file sink; Load creates it with its
	// defaults for type cypherl.
	Cypherl *CypherlSink `yaml:"cypherl,omitempty"`
	// Memgraph configures the Bolt sink.
	Memgraph *MemgraphSink `yaml:"memgraph,omitempty"`
}

// CypherlSink writes statements to .cypherl files, one file per run.
type CypherlSink struct {
	// Dir is the output directory (default ".kgsync/cypherl" relative to the
	// config file; Load joins it to Config.Dir).
	Dir string `yaml:"dir"`
	// MemgraphVersion is the Memgraph version the files are written for,
	// "3.1" or later (default sink.DefaultCypherlMemgraphVersion): it
	// decides whether they create text indexes (3.6 or later) and whether
	// vector-indexes.cypherl drops each index before creating it (3.0–3.7);
	// docs/memgraph-support.md.
	MemgraphVersion string `yaml:"memgraph_version,omitempty"`
}

// MemgraphSink writes over Bolt with neo4j-go-driver/v5.
type MemgraphSink struct {
	// URI is the Bolt address, "bolt://host:7687" (also bolt+s://, bolt+ssc://).
	// Not neo4j://: Memgraph serves routing only on HA coordinators (see
	// docs/memgraph.md §1); neo4j:// is accepted only with Dialect "neo4j".
	URI string `yaml:"uri"`
	// Username and Password authenticate; empty for Memgraph's default no-auth.
	Username string `yaml:"username,omitempty"`
	Password string `yaml:"password,omitempty"`
	// Dialect is "memgraph" (default) or "neo4j".
	Dialect string `yaml:"dialect,omitempty"`
	// BatchSize is the number of rows per UNWIND statement (default 1000).
	BatchSize int `yaml:"batch_size,omitempty"`
	// DeleteBatchSize bounds the node deletions of one transaction (default
	// 10000); a batch deleting more commits them in several.
	DeleteBatchSize int `yaml:"delete_batch_size,omitempty"`
	// MaxRetries bounds retries of transient errors per transaction (default 8).
	MaxRetries *int `yaml:"max_retries,omitempty"`
	// VectorCapacity is the initial capacity of created vector indexes (default 10000).
	VectorCapacity int `yaml:"vector_capacity,omitempty"`
	// VectorMetric is the vector index metric (default "cos").
	VectorMetric string `yaml:"vector_metric,omitempty"`
	// Timeout bounds one transaction (default 60s).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}
