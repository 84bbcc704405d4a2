package config

import (
	"path/filepath"
	"time"
)

// Defaults, as documented on the fields in config.go and in docs/config.md.
const (
	DefaultStatePath          = ".kgsync/state.db"
	DefaultStateSchema        = "kgsync"
	DefaultCypherlDir         = ".kgsync/cypherl"
	DefaultHashingModel       = "hashing-v1"
	DefaultHashingDimensions  = 384
	DefaultEmbedBatchSize     = 64
	DefaultEmbedConcurrency   = 2
	DefaultEmbedTimeout       = 60 * time.Second
	DefaultEmbedMaxRetries    = 5
	DefaultMaxInputTokens     = 8191
	DefaultMaxTokens          = 512
	DefaultOverlapTokens      = 64
	DefaultTokenizer          = "cl100k_base"
	DefaultMemgraphBatchSize  = 1000
	DefaultDeleteBatchSize    = 10000
	DefaultMemgraphMaxRetries = 8
	DefaultVectorCapacity     = 10000
	DefaultVectorMetric       = "cos"
	DefaultDialect            = "memgraph"
	DefaultMemgraphTimeout    = 60 * time.Second
	DefaultPipelineBatchSize  = 1000
	DefaultMaxDeleteRatio     = 0.3
	DefaultAnchor             = "Document"
	DefaultMaxFileBytes       = 64 << 20 // 64 MiB
	DefaultTimeZone           = "UTC"
	DefaultDaemonListen       = "127.0.0.1:8080" // loopback: other machines need api_token (see daemon.ErrOpenAPI)
	DefaultDaemonDebounce     = 2 * time.Second
	DefaultDaemonGracePeriod  = 30 * time.Second
	DefaultDaemonMaxBodyBytes = 1 << 20 // 1 MiB
	// DefaultDaemonWebhookBufferRows bounds the webhook rows kept per pipeline.
	DefaultDaemonWebhookBufferRows = 10000
	// DefaultDaemonWebhookBufferBytes bounds the estimated bytes of the
	// webhook rows kept per pipeline (RowBytes).
	DefaultDaemonWebhookBufferBytes int64 = 64 << 20
	DefaultDaemonPollInterval             = 2 * time.Second
	DefaultDaemonRunTimeout               = 6 * time.Hour
	DefaultDaemonMaxAttempts              = 5
	DefaultDaemonRetryBackoff             = 10 * time.Second
	DefaultDaemonVerify                   = time.Hour
	DefaultReviewDocumentsTable           = "Documents"
	DefaultReviewElementsTable            = "Elements"
)

// The pipeline's bounds in bytes (pipelines[].batch_chunk_bytes,
// writer_bytes; pipeline.Pipeline.BatchChunkBytes, WriterBytes).
const (
	DefaultPipelineBatchChunkBytes = 16 << 20 // 16 MiB
	DefaultPipelineWriterBytes     = 96 << 20 // 96 MiB
)

// The setDefaults methods fill the defaults that do not depend on other
// fields. The decoder calls them on a section before decoding its keys, so a
// key written in the file always wins, even when it is 0 or "". Defaults that
// depend on other fields (the embedder's model, the sink type, the SQLite
// path) and nil pointers are filled by complete after decoding.

func (c *Config) setDefaults() {
	c.State.setDefaults()
	c.Log.setDefaults()
	c.Daemon.setDefaults()
}

func (d *Daemon) setDefaults() {
	setZero(&d.Listen, DefaultDaemonListen)
	setZero(&d.Debounce, DefaultDaemonDebounce)
	setZero(&d.GracePeriod, DefaultDaemonGracePeriod)
	setZero(&d.MaxBodyBytes, DefaultDaemonMaxBodyBytes)
	setZero(&d.WebhookBufferRows, DefaultDaemonWebhookBufferRows)
	setZero(&d.WebhookBufferBytes, DefaultDaemonWebhookBufferBytes)
	setZero(&d.PollInterval, DefaultDaemonPollInterval)
	setZero(&d.RunTimeout, DefaultDaemonRunTimeout)
	setZero(&d.MaxAttempts, DefaultDaemonMaxAttempts)
	setZero(&d.RetryBackoff, DefaultDaemonRetryBackoff)
	setZero(&d.VerifyInterval, DefaultDaemonVerify)
}

func (s *State) setDefaults() {
	setZero(&s.Driver, "sqlite")
	setZero(&s.Schema, DefaultStateSchema)
}

func (l *Log) setDefaults() {
	setZero(&l.Level, "info")
	setZero(&l.Format, "text")
}

func (p *Pipeline) setDefaults() {
	setZero(&p.TimeZone, DefaultTimeZone)
	setZero(&p.BatchSize, DefaultPipelineBatchSize)
	setZero(&p.BatchChunkBytes, DefaultPipelineBatchChunkBytes)
	setZero(&p.WriterBytes, DefaultPipelineWriterBytes)
}

func (f *FilesSource) setDefaults() {
	setZero(&f.MaxFileBytes, DefaultMaxFileBytes)
	setZero(&f.Anchor, DefaultAnchor)
}

func (g *ReviewGrist) setDefaults() {
	setZero(&g.DocumentsTable, DefaultReviewDocumentsTable)
	setZero(&g.ElementsTable, DefaultReviewElementsTable)
}

func (c *Chunking) setDefaults() {
	setZero(&c.MaxTokens, DefaultMaxTokens)
	setZero(&c.OverlapTokens, DefaultOverlapTokens)
	setZero(&c.Tokenizer, DefaultTokenizer)
}

func (e *Embedder) setDefaults() {
	setZero(&e.Provider, "hashing")
	setZero(&e.BatchSize, DefaultEmbedBatchSize)
	setZero(&e.MaxConcurrency, DefaultEmbedConcurrency)
	setZero(&e.Timeout, DefaultEmbedTimeout)
	setZero(&e.MaxInputTokens, DefaultMaxInputTokens)
}

func (c *CypherlSink) setDefaults() {
	setZero(&c.Dir, DefaultCypherlDir)
}

func (m *MemgraphSink) setDefaults() {
	setZero(&m.Dialect, DefaultDialect)
	setZero(&m.BatchSize, DefaultMemgraphBatchSize)
	setZero(&m.DeleteBatchSize, DefaultDeleteBatchSize)
	setZero(&m.VectorCapacity, DefaultVectorCapacity)
	setZero(&m.VectorMetric, DefaultVectorMetric)
	setZero(&m.Timeout, DefaultMemgraphTimeout)
}

func setZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

func ptr[T any](v T) *T { return &v }

// complete fills the defaults that depend on other fields, once decoding is
// done: the SQLite path, and for the top-level sections those of complete on
// each type.
func (c *Config) complete() {
	if c.State.Driver == "sqlite" {
		setZero(&c.State.Path, DefaultStatePath)
	}
	if c.Sink != nil {
		c.Sink.complete()
	}
	if c.Embedder != nil {
		c.Embedder.complete()
	}
}

// complete infers Type from the one subsection set (cypherl when neither or
// both are) and creates the cypherl section with its defaults when needed.
func (s *Sink) complete() {
	if s.Type == "" {
		s.Type = "cypherl"
		if s.Memgraph != nil && s.Cypherl == nil {
			s.Type = "memgraph"
		}
	}
	if s.Type == "cypherl" && s.Cypherl == nil {
		s.Cypherl = &CypherlSink{}
		s.Cypherl.setDefaults()
	}
	if s.Memgraph != nil && s.Memgraph.MaxRetries == nil {
		s.Memgraph.MaxRetries = ptr(DefaultMemgraphMaxRetries)
	}
}

// complete fills the hashing provider's model and dimensions and the retry
// default.
func (e *Embedder) complete() {
	if e.Provider == "hashing" {
		setZero(&e.Model, DefaultHashingModel)
		setZero(&e.Dimensions, DefaultHashingDimensions)
	}
	if e.MaxRetries == nil {
		e.MaxRetries = ptr(DefaultEmbedMaxRetries)
	}
}

// complete fills the pipeline's own defaults (source names, the delete
// guard) and its sections: its own when set, otherwise a copy of the
// top-level one, otherwise a fresh default. Own sections get their relative
// paths resolved; copies were resolved already at the top level.
func (p *Pipeline) complete(c *Config) {
	if p.MaxDeleteRatio == nil {
		p.MaxDeleteRatio = ptr(DefaultMaxDeleteRatio)
	}
	if p.Eval != nil {
		p.Eval.Golden = c.resolve(p.Eval.Golden)
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.Name == "" {
			switch {
			case s.Files != nil:
				s.Name = "files"
			case s.CSV != nil:
				s.Name = "csv"
			case s.Grist != nil:
				s.Name = "grist"
			case s.HTTP != nil:
				s.Name = "http"
			}
		}
		if s.Files != nil {
			s.Files.Root = c.resolve(s.Files.Root)
		}
		if s.CSV != nil {
			for j := range s.CSV.Tables {
				s.CSV.Tables[j].Path = c.resolve(s.CSV.Tables[j].Path)
			}
		}
	}
	switch {
	case p.Sink != nil:
		p.Sink.complete()
		c.resolveSink(p.Sink)
	case c.Sink != nil:
		p.Sink = c.Sink.clone()
	default:
		p.Sink = &Sink{}
		p.Sink.complete()
		c.resolveSink(p.Sink)
	}
	switch {
	case p.Embedder != nil:
		p.Embedder.complete()
	case c.Embedder != nil:
		p.Embedder = c.Embedder.clone()
	default:
		p.Embedder = &Embedder{}
		p.Embedder.setDefaults()
		p.Embedder.complete()
	}
	if p.Search == nil && c.Search != nil {
		sc := *c.Search
		p.Search = &sc
	}
	switch {
	case p.Chunking != nil:
	case c.Chunking != nil:
		ch := *c.Chunking
		p.Chunking = &ch
	default:
		p.Chunking = &Chunking{}
		p.Chunking.setDefaults()
	}
}

// resolve makes a relative path relative to c.Dir; "" and absolute paths,
// and every path when c.Dir is "", are returned unchanged.
func (c *Config) resolve(p string) string {
	if p == "" || c.Dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir, p)
}

func (c *Config) resolveSink(s *Sink) {
	if s.Cypherl != nil {
		s.Cypherl.Dir = c.resolve(s.Cypherl.Dir)
	}
}

// clone returns a deep copy of s.
func (s *Sink) clone() *Sink {
	out := *s
	if s.Cypherl != nil {
		c := *s.Cypherl
		out.Cypherl = &c
	}
	if s.Memgraph != nil {
		m := *s.Memgraph
		if m.MaxRetries != nil {
			m.MaxRetries = ptr(*m.MaxRetries)
		}
		out.Memgraph = &m
	}
	return &out
}

// clone returns a deep copy of e.
func (e *Embedder) clone() *Embedder {
	out := *e
	if e.MaxRetries != nil {
		out.MaxRetries = ptr(*e.MaxRetries)
	}
	return &out
}
