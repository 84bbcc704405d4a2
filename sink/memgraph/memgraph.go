// Package memgraph is the Bolt sink: it writes a pipeline's graph operations
// to Memgraph (or Neo4j 5, with sink.Neo4j) through neo4j-go-driver/v5.
//
// Index DDL and SHOW … INFO run as auto-commit queries (session.Run), the
// only way Memgraph accepts them; each Batch is one explicit transaction
// (BeginTransaction) with its own retry loop, as docs/memgraph.md §2
// "Retrying correctly" recommends: only write conflicts, storage-access
// timeouts and lost connections are retried, everything else fails at once.
// Writes are idempotent (UNWIND … MERGE), so a retried or replayed batch is
// harmless.
package memgraph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/config"

	"github.com/kgsync/kgsync/sink"
)

// Defaults for zero Config fields.
const (
	DefaultBatchSize   = 1000
	DefaultMaxRetries  = 5
	DefaultTimeout     = 60 * time.Second
	DefaultRemoveBatch = 10000
	DefaultDeleteBatch = 10000
	// Back-off before retry n (0-based) is InitialBackoff·BackoffFactor^n,
	// ±20 % jitter, at most MaxBackoff (docs/memgraph.md §2: short initial
	// wait, small factor, jitter).
	InitialBackoff = 200 * time.Millisecond
	BackoffFactor  = 1.5
	MaxBackoff     = 10 * time.Second
)

// Config configures a Sink.
type Config struct {
	// URI is bolt://host:7687 (or bolt+s://, bolt+ssc://). neo4j:// routing
	// URIs are refused with the Memgraph dialect: routing works only against
	// Memgraph HA coordinators (docs/memgraph.md §1).
	URI string
	// Username and Password; an empty Username means no authentication.
	Username string
	Password string
	// Pipeline owns what this Sink writes (sink.PropPipeline): it is part of
	// every node's MERGE key and scopes every deletion and vector removal,
	// so pipelines sharing one Memgraph never touch each other's nodes.
	// Required.
	Pipeline string
	// Dialect is sink.Memgraph (default) or sink.Neo4j.
	Dialect sink.Dialect
	// BatchSize is the number of rows per UNWIND statement (default
	// DefaultBatchSize).
	BatchSize int
	// MaxRetries is how often a batch is retried after a transient error
	// (0 means DefaultMaxRetries, negative means never).
	MaxRetries int
	// Timeout bounds connecting, acquiring a connection and each
	// transaction (sent as the Bolt tx_timeout; default DefaultTimeout).
	Timeout time.Duration
	// VectorCapacity is the capacity given to vector indexes whose Capacity
	// is 0 (default sink.DefaultVectorCapacity).
	VectorCapacity int
	// RemoveBatch is how many nodes one REMOVE statement changes when a
	// vector index is recreated with another dimension (default
	// DefaultRemoveBatch).
	RemoveBatch int
	// DeleteBatchSize bounds the node deletions (DETACH DELETE) of one
	// transaction (default DefaultDeleteBatch): a batch that deletes more
	// runs them first, in transactions of this many rows, and the rest of
	// the batch with the last of them. Every deletion is idempotent, so a
	// failure after some of them committed is redone by the retried batch.
	DeleteBatchSize int
	// SleepFunc waits d before a retry, returning early with ctx's error.
	// Default: a timer. Tests replace it to record back-offs without waiting.
	SleepFunc func(ctx context.Context, d time.Duration) error
}

// Hit is one vector search result.
type Hit struct {
	// ID is the node's id property.
	ID string
	// Similarity is larger for nearer nodes: for Memgraph's cos metric the
	// absolute cosine, for l2sq 1/(1+d²) (docs/memgraph.md §4); for a text
	// search, the BM25 score.
	Similarity float64
}

// Sink writes to Memgraph over Bolt; it implements sink.Sink and is safe
// for concurrent use.
type Sink struct {
	cfg    Config
	d      sink.Dialect
	driver neo4j.DriverWithContext
	logger *slog.Logger

	mu       sync.Mutex
	vectors  map[string]sink.VectorIndex // ensured vector indexes by name
	server   *ServerInfo                 // once Server answered
	serverAt time.Time                   // when
}

var _ sink.Sink = (*Sink)(nil)

// New connects to cfg.URI and verifies the connection. A nil logger
// discards. Errors: an unsupported URI scheme (neo4j:// with the Memgraph
// dialect, see Config.URI), a driver or connectivity error.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Sink, error) {
	if err := sink.ValidName(cfg.Pipeline); err != nil {
		return nil, fmt.Errorf("memgraph sink: pipeline: %w", err)
	}
	if cfg.Dialect == nil {
		cfg.Dialect = sink.Memgraph
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.VectorCapacity <= 0 {
		cfg.VectorCapacity = sink.DefaultVectorCapacity
	}
	if cfg.RemoveBatch <= 0 {
		cfg.RemoveBatch = DefaultRemoveBatch
	}
	if cfg.DeleteBatchSize <= 0 {
		cfg.DeleteBatchSize = DefaultDeleteBatch
	}
	if cfg.SleepFunc == nil {
		cfg.SleepFunc = sleep
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	u, err := url.Parse(cfg.URI)
	if err != nil {
		return nil, fmt.Errorf("memgraph sink: URI: %w", err)
	}
	switch u.Scheme {
	case "bolt", "bolt+s", "bolt+ssc":
	case "neo4j", "neo4j+s", "neo4j+ssc":
		if cfg.Dialect.Name() == "memgraph" {
			return nil, fmt.Errorf("memgraph sink: URI %q: use bolt://host:7687; neo4j:// routing only works against "+
				"Memgraph HA coordinators and a single instance refuses it (docs/memgraph.md §1)", u.Redacted())
		}
	default:
		return nil, fmt.Errorf("memgraph sink: URI %q: scheme %q, want bolt://", u.Redacted(), u.Scheme)
	}
	auth := neo4j.NoAuth()
	if cfg.Username != "" {
		auth = neo4j.BasicAuth(cfg.Username, cfg.Password, "")
	}
	driver, err := neo4j.NewDriverWithContext(cfg.URI, auth, func(c *config.Config) {
		c.SocketConnectTimeout = cfg.Timeout
		c.ConnectionAcquisitionTimeout = cfg.Timeout
		c.UserAgent = "kgsync"
	})
	if err != nil {
		return nil, fmt.Errorf("memgraph sink: %w", err)
	}
	if err := driver.VerifyConnectivity(ctx); err != nil {
		_ = driver.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("memgraph sink: connect %s: %w", u.Redacted(), err)
	}
	return &Sink{cfg: cfg, d: cfg.Dialect, driver: driver, logger: logger, vectors: map[string]sink.VectorIndex{}}, nil
}

// Close closes the driver and its connections.
func (s *Sink) Close(ctx context.Context) error {
	if err := s.driver.Close(ctx); err != nil {
		return fmt.Errorf("memgraph sink: close: %w", err)
	}
	return nil
}

// Ensure checks the server (Check: version, edge properties for
// schema.Edges), reads the existing indexes (SHOW INDEX INFO, and SHOW
// VECTOR INDEX INFO when schema has vector indexes) and creates only what
// is missing, every statement auto-commit (docs/memgraph.md §2); each
// creation is confirmed: its notifications are read (from 3.8 a failed
// CREATE VECTOR INDEX is only an INFO notification "Error while creating
// vector index …", §12) and the listing is read again, and an index that
// is not there as asked is an error naming it.
//
// A vector index is kept when one of the same name exists on the same
// label and property with the same dimension and metric. Otherwise any
// index with that name or on that label and property is dropped and, when
// the dimension or the label and property differ, the old vectors of this
// pipeline's nodes are removed in batches of RemoveBatch (other
// pipelines' nodes are never touched). The index is then created unless
// other pipelines' nodes still hold vectors of another length under that
// label and property (the creation would fail on them, §4): it is then
// left to the last pipeline that changes, with a warning naming them.
// Afterwards Write checks vector lengths against the ensured dimensions.
// Stats counts every statement run, each its own transaction.
func (s *Sink) Ensure(ctx context.Context, schema sink.Schema) (sink.Stats, error) {
	if err := schema.Validate(); err != nil {
		return sink.Stats{}, fmt.Errorf("memgraph ensure: %w", err)
	}
	var stats sink.Stats
	var notes []neo4j.Notification
	run := func(st sink.Statement) ([]string, [][]any, error) {
		var res result
		res, retries, err := s.runAutoResult(ctx, st)
		stats.Statements++
		stats.Batches++
		stats.Retries += retries
		if err != nil {
			return nil, nil, fmt.Errorf("memgraph ensure: %s %q: %w", st.Kind, st.Target, err)
		}
		notes = res.notes
		return res.fields, res.rows, nil
	}
	info, err := s.Check(ctx, schema)
	if err != nil {
		return stats, err
	}
	// The stages: label-property indexes, text indexes (from the SHOW
	// INDEX INFO listing the first stage read last), vector indexes.
	fields, rows, err := s.ensureIndexes(ctx, schema.Indexes, run)
	if err != nil {
		return stats, err
	}
	if err := s.ensureText(ctx, info, schema.TextIndexes, fields, rows, run); err != nil {
		return stats, err
	}
	if len(schema.VectorIndexes) == 0 {
		return stats, nil
	}
	err = s.ensureVectors(ctx, schema, run, func() []neo4j.Notification { return notes })
	return stats, err
}

// ensureIndexes creates the label-property indexes of want that SHOW
// INDEX INFO does not list and confirms each in a second listing. It
// returns the last listing read (fields, rows), which lists the text
// indexes too.
func (s *Sink) ensureIndexes(ctx context.Context, want []sink.Index, run func(sink.Statement) ([]string, [][]any, error),
) ([]string, [][]any, error) {
	fields, rows, err := run(s.d.ShowIndexes())
	if err != nil {
		return nil, nil, err
	}
	have, err := s.d.ParseIndexes(fields, rows)
	if err != nil {
		return nil, nil, fmt.Errorf("memgraph ensure: %w", err)
	}
	var created []sink.Index
	for _, ix := range want {
		if containsIndex(have, ix) {
			continue
		}
		st, err := s.d.CreateIndex(ix)
		if err != nil {
			return nil, nil, fmt.Errorf("memgraph ensure: %w", err)
		}
		if _, _, err := run(st); err != nil {
			return nil, nil, err
		}
		have = append(have, ix)
		created = append(created, ix)
		s.logger.InfoContext(ctx, "created index", slog.String("label", ix.Label), slog.String("property", ix.Property))
	}
	if len(created) == 0 {
		return fields, rows, nil
	}
	fields, rows, err = run(s.d.ShowIndexes())
	if err != nil {
		return nil, nil, err
	}
	listed, err := s.d.ParseIndexes(fields, rows)
	if err != nil {
		return nil, nil, fmt.Errorf("memgraph ensure: %w", err)
	}
	for _, ix := range created {
		if !containsIndex(listed, ix) {
			return nil, nil, fmt.Errorf("memgraph ensure: index on :%s(%s) was created but %s does not list it",
				ix.Label, ix.Property, s.d.ShowIndexes().Query)
		}
	}
	return fields, rows, nil
}

// ensureVectors brings the vector indexes in line with schema (see
// Ensure): each index kept, replaced or created (ensureVector), the
// indexes the model no longer has dropped (dropRemovedVectorIndexes), and
// the created ones confirmed in a second listing (confirmVectors). notes
// returns the notifications of the last statement run.
func (s *Sink) ensureVectors(ctx context.Context, schema sink.Schema, run func(sink.Statement) ([]string, [][]any, error),
	notes func() []neo4j.Notification,
) error {
	fields, rows, err := run(s.d.ShowVectorIndexes())
	if err != nil {
		return err
	}
	existing, err := s.d.ParseVectorIndexes(fields, rows)
	if err != nil {
		return fmt.Errorf("memgraph ensure: %w", err)
	}
	var made []sink.VectorIndex
	for _, vi := range schema.VectorIndexes {
		vi = vi.WithDefaults(s.cfg.VectorCapacity)
		created, err := s.ensureVector(ctx, vi, existing, run, notes)
		if err != nil {
			return err
		}
		if created {
			made = append(made, vi)
		}
	}
	if err := s.dropRemovedVectorIndexes(ctx, schema, existing, run); err != nil {
		return err
	}
	return s.confirmVectors(made, run)
}

// ensureVector keeps vi when existing lists it as it is (listedAs) and
// nothing else displaces it; otherwise it drops the indexes vi displaces
// (and this pipeline's vectors under a label and property vi leaves),
// removes this pipeline's vectors of another length, and creates vi
// unless other pipelines' vectors of another length are there (then it
// warns). It reports whether vi was created; vi is remembered for Write's
// checks in every case but an error.
func (s *Sink) ensureVector(ctx context.Context, vi sink.VectorIndex, existing []sink.VectorIndex,
	run func(sink.Statement) ([]string, [][]any, error), notes func() []neo4j.Notification,
) (bool, error) {
	keep := false
	var stale []sink.VectorIndex
	for _, old := range existing {
		switch {
		case listedAs(old, vi):
			keep = true
		case vi.Displaces(old):
			stale = append(stale, old)
		}
	}
	for _, old := range stale { // keep: another index on the same label and property
		st, err := s.d.DropVectorIndex(old.Name)
		if err != nil {
			return false, fmt.Errorf("memgraph ensure: %w", err)
		}
		if _, _, err := run(st); err != nil {
			return false, err
		}
		s.logger.InfoContext(ctx, "dropped vector index", slog.String("index", old.Name),
			slog.Int("dimension", old.Dimension), slog.Int("want_dimension", vi.Dimension))
		if old.Label != vi.Label || old.Property != vi.Property {
			if err := s.removeProperty(ctx, old.Label, old.Property, 0, run); err != nil {
				return false, err
			}
		}
	}
	if keep {
		s.remember(vi)
		return false, nil
	}
	// This pipeline's vectors of another length go first (left by the old
	// index, or by a dimension change whose index another pipeline
	// already dropped): the new index would refuse them.
	if err := s.removeProperty(ctx, vi.Label, vi.Property, vi.Dimension, run); err != nil {
		return false, err
	}
	others, err := s.foreignVectors(vi, run)
	if err != nil {
		return false, err
	}
	if others != "" {
		s.logger.WarnContext(ctx, "vector index not created: other pipelines' vectors under its label and property have another dimension; "+
			"it is created when they change too", slog.String("index", vi.Name), slog.Int("dimension", vi.Dimension),
			slog.String("others", others))
		s.remember(vi)
		return false, nil
	}
	if err := s.createVectorIndex(ctx, vi, run, notes); err != nil {
		return false, err
	}
	s.logger.InfoContext(ctx, "created vector index", slog.String("index", vi.Name), slog.Int("dimension", vi.Dimension))
	s.remember(vi)
	return true, nil
}

// confirmVectors reads SHOW VECTOR INDEX INFO again after made were
// created and returns an error naming the first that is not listed, or
// listed on another label, property or dimension.
func (s *Sink) confirmVectors(made []sink.VectorIndex, run func(sink.Statement) ([]string, [][]any, error)) error {
	if len(made) == 0 {
		return nil
	}
	fields, rows, err := run(s.d.ShowVectorIndexes())
	if err != nil {
		return err
	}
	listed, err := s.d.ParseVectorIndexes(fields, rows)
	if err != nil {
		return fmt.Errorf("memgraph ensure: %w", err)
	}
	for _, vi := range made {
		i := slices.IndexFunc(listed, func(l sink.VectorIndex) bool { return l.Name == vi.Name })
		switch {
		case i < 0:
			return fmt.Errorf("memgraph ensure: vector index %q was created but %s does not list it",
				vi.Name, s.d.ShowVectorIndexes().Query)
		case listed[i].Label != vi.Label || listed[i].Property != vi.Property || listed[i].Dimension != vi.Dimension:
			return fmt.Errorf("memgraph ensure: vector index %q is listed on :%s(%s) with dimension %d, want :%s(%s) with %d",
				vi.Name, listed[i].Label, listed[i].Property, listed[i].Dimension, vi.Label, vi.Property, vi.Dimension)
		}
	}
	return nil
}

// listedAs reports whether l, as SHOW VECTOR INDEX INFO lists an index,
// is vi: the same name, label, property and dimension, and the same
// metric unless the listing has none (the metric column is optional,
// sink.MemgraphDialect.ParseVectorIndexes).
func listedAs(l, vi sink.VectorIndex) bool {
	return l.Name == vi.Name && l.Label == vi.Label && l.Property == vi.Property && l.Dimension == vi.Dimension &&
		(l.Metric == "" || l.Metric == vi.Metric)
}

// createVectorIndex runs CREATE VECTOR INDEX for vi and reads its outcome:
// an error, or (from 3.8) a notification whose title starts "Error" or
// whose code is IndexAlreadyExists. Another pipeline sharing the index may
// have created it a moment before (two runs starting together): Memgraph
// then answers "Given vector index already exists." (3.0–3.7) or "Error
// while creating vector index …" (3.8 and later; docs/memgraph.md §12). So
// a refused creation reads SHOW VECTOR INDEX INFO again, and an index of
// vi's name, label, property, dimension and metric there counts as
// success; anything else is an error naming the index and what is listed.
// notes returns the notifications of the last statement run.
func (s *Sink) createVectorIndex(ctx context.Context, vi sink.VectorIndex, run func(sink.Statement) ([]string, [][]any, error),
	notes func() []neo4j.Notification,
) error {
	st, err := s.d.CreateVectorIndex(vi)
	if err != nil {
		return fmt.Errorf("memgraph ensure: %w", err)
	}
	var refused string
	if _, _, err := run(st); err != nil {
		if !strings.Contains(err.Error(), "already exists") {
			return err
		}
		refused = err.Error()
	} else {
		for _, n := range notes() {
			if strings.HasPrefix(n.Title(), "Error") || n.Code() == "IndexAlreadyExists" {
				refused = n.Title()
				break
			}
		}
	}
	if refused == "" {
		return nil
	}
	fields, rows, err := run(s.d.ShowVectorIndexes())
	if err != nil {
		return err
	}
	listed, err := s.d.ParseVectorIndexes(fields, rows)
	if err != nil {
		return fmt.Errorf("memgraph ensure: %w", err)
	}
	for _, l := range listed {
		if l.Name != vi.Name {
			continue
		}
		if listedAs(l, vi) {
			s.logger.InfoContext(ctx, "vector index created by another client at the same time", slog.String("index", vi.Name))
			return nil
		}
		return fmt.Errorf("memgraph ensure: vector index %q on :%s(%s) was not created (%s): the server lists it on :%s(%s) with dimension %d, metric %s",
			vi.Name, vi.Label, vi.Property, refused, l.Label, l.Property, l.Dimension, l.Metric)
	}
	return fmt.Errorf("memgraph ensure: vector index %q on :%s(%s) was not created: %s", vi.Name, vi.Label, vi.Property, refused)
}

// foreignVectors describes the vectors of other pipelines (or of none)
// under vi's label and property whose length is not vi's dimension, e.g.
// "tables: 120 nodes of dimension 3"; "" when there are none.
func (s *Sink) foreignVectors(vi sink.VectorIndex, run func(sink.Statement) ([]string, [][]any, error)) (string, error) {
	st, err := s.d.CountVectors(vi.Label, vi.Property, s.cfg.Pipeline)
	if err != nil {
		return "", fmt.Errorf("memgraph ensure: %w", err)
	}
	fields, rows, err := run(st)
	if err != nil {
		return "", err
	}
	cols := map[string]int{}
	for i, f := range fields {
		cols[f] = i
	}
	var parts []string
	for _, r := range rows {
		dim, _ := r[cols["dimension"]].(int64)
		if int(dim) == vi.Dimension {
			continue
		}
		owner, _ := r[cols["pipeline"]].(string)
		if owner == "" {
			owner = "(no pipeline)"
		}
		n, _ := r[cols["nodes"]].(int64)
		parts = append(parts, fmt.Sprintf("%s: %d nodes of dimension %d", owner, n, dim))
	}
	return strings.Join(parts, "; "), nil
}

// ensureText creates the text indexes of want that the SHOW INDEX INFO
// result (fields, rows) does not list. An index counts as there only when
// its name, label and properties are want's: a same-named index on
// another label or other properties is an error naming both (text_search
// would search the wrong nodes, and CREATE TEXT INDEX of a taken name does
// nothing; docs/memgraph-text-search.md). Memgraph has no CREATE TEXT
// INDEX IF NOT EXISTS; from 3.6 a duplicate name is a notification, so
// after creating, the listing is read again and each created index must be
// in it as asked. On a server without text search (Memgraph before 3.6,
// ServerInfo.TextSearch) nothing is created: lexical search comes from
// kgsync's state (docs/memgraph-support.md).
func (s *Sink) ensureText(ctx context.Context, info ServerInfo, want []sink.TextIndex, fields []string, rows [][]any,
	run func(sink.Statement) ([]string, [][]any, error),
) error {
	if len(want) == 0 {
		return nil
	}
	if !info.TextSearch {
		s.logger.InfoContext(ctx, "no text indexes: the server has no text search; lexical search comes from kgsync's state",
			slog.String("version", info.Version), slog.Int("text_indexes", len(want)))
		return nil
	}
	have, err := s.d.ParseTextIndexes(fields, rows)
	if err != nil {
		return fmt.Errorf("memgraph ensure: %w", err)
	}
	var created []sink.TextIndex
	for _, ti := range want {
		present, err := textIndexListed(have, ti)
		if err != nil {
			return err
		}
		if present {
			continue
		}
		st, err := s.d.CreateTextIndex(ti)
		if err != nil {
			return fmt.Errorf("memgraph ensure: %w", err)
		}
		if _, _, err := run(st); err != nil {
			return err
		}
		created = append(created, ti)
		s.logger.InfoContext(ctx, "created text index", slog.String("index", ti.Name), slog.String("label", ti.Label))
	}
	if len(created) == 0 {
		return nil
	}
	fields, rows, err = run(s.d.ShowIndexes())
	if err != nil {
		return err
	}
	if have, err = s.d.ParseTextIndexes(fields, rows); err != nil {
		return fmt.Errorf("memgraph ensure: %w", err)
	}
	for _, ti := range created {
		present, err := textIndexListed(have, ti)
		if err != nil {
			return err
		}
		if !present {
			return fmt.Errorf("memgraph ensure: text index %q on %s was created but %s does not list it",
				ti.Name, describeText(ti), s.d.ShowIndexes().Query)
		}
	}
	return nil
}

// textIndexListed reports whether have lists ti (name, label and
// properties); a listed index of ti's name on another label or other
// properties is an error naming both.
func textIndexListed(have []sink.TextIndex, ti sink.TextIndex) (bool, error) {
	for _, h := range have {
		if h.Name != ti.Name {
			continue
		}
		if h.Label == ti.Label && slices.Equal(h.Properties, ti.Properties) {
			return true, nil
		}
		return false, fmt.Errorf("memgraph ensure: text index %q exists on %s, kgsync needs it on %s; drop it (DROP TEXT INDEX %s) and sync again",
			ti.Name, describeText(h), describeText(ti), sink.QuoteName(ti.Name))
	}
	return false, nil
}

// describeText is ":Label(p1, p2)".
func describeText(ti sink.TextIndex) string {
	return ":" + ti.Label + "(" + strings.Join(ti.Properties, ", ") + ")"
}

// removeProperty repeats the batched REMOVE until it reports 0 nodes.
func (s *Sink) removeProperty(ctx context.Context, label, property string, keep int,
	run func(sink.Statement) ([]string, [][]any, error),
) error {
	st, err := s.d.RemoveVectorProperty(label, property, s.cfg.Pipeline, keep, s.cfg.RemoveBatch)
	if err != nil {
		return fmt.Errorf("memgraph ensure: %w", err)
	}
	for total := 0; ; {
		fields, rows, err := run(st)
		if err != nil {
			return err
		}
		n := 0
		if len(rows) == 1 && len(fields) == 1 && fields[0] == "removed" {
			n64, _ := rows[0][0].(int64)
			n = int(n64)
		}
		total += n
		if n == 0 {
			s.logger.InfoContext(ctx, "removed old vectors", slog.String("label", label),
				slog.String("property", property), slog.Int("nodes", total))
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memgraph ensure: remove %q from %q: %w", property, label, err)
		}
	}
}

func containsIndex(have []sink.Index, ix sink.Index) bool {
	for _, h := range have {
		if h == ix {
			return true
		}
	}
	return false
}

func (s *Sink) remember(vi sink.VectorIndex) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vectors[vi.Name] = vi
}

// Write applies b in one explicit transaction: the statements of
// sink.Statements with BatchSize rows each, every result consumed, then
// COMMIT; only a batch with more than DeleteBatchSize node deletions is
// split (DeleteBatchSize). A batch writing edge properties to a server
// known to store none (Server) is refused, naming the flag and the types. Before sending, every vector property covered by an ensured vector
// index is checked to have the index's dimension (Memgraph would fail the
// whole transaction; docs/memgraph.md §4); the error names the node id.
// A write conflict, a storage-access timeout or a lost connection retries
// the whole transaction after a back-off (InitialBackoff, BackoffFactor,
// jitter) up to MaxRetries times; any other error is returned at once,
// naming the statement kind and label. An empty batch sends nothing.
func (s *Sink) Write(ctx context.Context, b *sink.Batch) (sink.Stats, error) {
	if b == nil || b.Len() == 0 {
		return sink.Stats{}, nil
	}
	if err := s.checkVectors(b); err != nil {
		return sink.Stats{}, fmt.Errorf("memgraph write: %w", err)
	}
	if err := s.checkEdgeProperties(b); err != nil {
		return sink.Stats{}, fmt.Errorf("memgraph write: %w", err)
	}
	opts := sink.Options{Pipeline: s.cfg.Pipeline, RowsPerStatement: min(s.cfg.BatchSize, s.cfg.DeleteBatchSize)}
	// Large deletions first, in bounded transactions; the last part goes
	// with the rest of the batch.
	var txs [][]sink.Statement
	rest := *b
	for len(rest.DeleteNodes) > s.cfg.DeleteBatchSize {
		part := &sink.Batch{DeleteNodes: rest.DeleteNodes[:s.cfg.DeleteBatchSize]}
		rest.DeleteNodes = rest.DeleteNodes[s.cfg.DeleteBatchSize:]
		sts, err := sink.Statements(s.d, part, opts)
		if err != nil {
			return sink.Stats{}, fmt.Errorf("memgraph write: %w", err)
		}
		txs = append(txs, sts)
	}
	opts.RowsPerStatement = s.cfg.BatchSize
	sts, err := sink.Statements(s.d, &rest, opts)
	if err != nil {
		return sink.Stats{}, fmt.Errorf("memgraph write: %w", err)
	}
	txs = append(txs, sts)
	var st sink.Stats
	for _, sts := range txs {
		err = s.retry(ctx, &st.Retries, func() error { return s.runTx(ctx, sts) })
		if err != nil {
			return st, fmt.Errorf("memgraph write: %w", err)
		}
		st.Statements += len(sts)
		st.Batches++
	}
	return st, nil
}

// retry runs f until it succeeds, fails with a non-retryable error, or
// MaxRetries retries are used up, counting retries in *retries.
func (s *Sink) retry(ctx context.Context, retries *int, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !Retryable(err) {
			return err
		}
		if attempt >= s.cfg.MaxRetries {
			return fmt.Errorf("gave up after %d retries: %w", *retries, err)
		}
		wait := Backoff(attempt, rand.Float64())
		s.logger.WarnContext(ctx, "transient error, retrying", slog.Int("attempt", attempt+1),
			slog.Duration("backoff", wait), slog.Any("err", err))
		if err := s.cfg.SleepFunc(ctx, wait); err != nil {
			return fmt.Errorf("retry wait: %w", err)
		}
		*retries++
	}
}

// runTx runs sts in one explicit transaction and commits it.
func (s *Sink) runTx(ctx context.Context, sts []sink.Statement) error {
	session := s.driver.NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeWrite})
	defer session.Close(context.WithoutCancel(ctx))
	tx, err := session.BeginTransaction(ctx, neo4j.WithTxTimeout(s.cfg.Timeout))
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	for _, st := range sts {
		res, err := tx.Run(ctx, st.Query, st.Params)
		if err == nil {
			// Conflicts surface on the PULL, so the result must be
			// consumed (docs/memgraph.md §2).
			_, err = res.Consume(ctx)
		}
		if err != nil {
			_ = tx.Close(context.WithoutCancel(ctx)) // rollback; the error that matters is err
			return fmt.Errorf("%s %q: %w", st.Kind, st.Target, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// runAuto runs st as an auto-commit query and collects its rows, retrying
// like Write.
func (s *Sink) runAuto(ctx context.Context, st sink.Statement) (fields []string, rows [][]any, retries int, err error) {
	res, retries, err := s.runAutoResult(ctx, st)
	return res.fields, res.rows, retries, err
}

// result is an auto-commit query's answer.
type result struct {
	fields []string
	rows   [][]any
	// notes are the summary's notifications (Memgraph reports index DDL
	// outcomes there, docs/memgraph.md §12).
	notes []neo4j.Notification
}

func (s *Sink) runAutoResult(ctx context.Context, st sink.Statement) (out result, retries int, err error) {
	err = s.retry(ctx, &retries, func() error {
		out = result{}
		session := s.driver.NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeWrite})
		defer session.Close(context.WithoutCancel(ctx))
		res, err := session.Run(ctx, st.Query, st.Params, neo4j.WithTxTimeout(s.cfg.Timeout))
		if err != nil {
			return err
		}
		records, err := res.Collect(ctx)
		if err != nil {
			return err
		}
		if out.fields, err = res.Keys(); err != nil {
			return err
		}
		for _, r := range records {
			out.rows = append(out.rows, r.Values)
		}
		sum, err := res.Consume(ctx)
		if err != nil {
			return err
		}
		out.notes = sum.Notifications()
		return nil
	})
	return out, retries, err
}

// Retryable reports whether err is worth retrying the transaction for: a
// Memgraph write-write conflict ("Cannot resolve conflicting transactions"
// on the statement, or "Unable to commit due to serialization error" at
// commit, a ClientError that ON_DISK storage and triggers report;
// docs/memgraph.md §2),
// a storage access timeout ("Cannot get … access to the storage"), or a
// connectivity failure (a dropped or reset connection, a pool timeout).
// Other Memgraph errors, TransientError or not, are not retried: timeouts,
// memory limits and terminations would fail the same way again
// (docs/memgraph.md §2).
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var nerr *neo4j.Neo4jError
	if errors.As(err, &nerr) {
		return strings.Contains(nerr.Msg, "Cannot resolve conflicting transactions") ||
			strings.Contains(nerr.Msg, "Unable to commit due to serialization error") ||
			strings.Contains(nerr.Msg, "Cannot get") && strings.Contains(nerr.Msg, "access to the storage")
	}
	var cerr *neo4j.ConnectivityError
	var nete net.Error
	return errors.As(err, &cerr) || errors.As(err, &nete) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Backoff is the wait before retry number attempt (0-based):
// InitialBackoff·BackoffFactor^attempt scaled by a jitter factor in
// [0.8, 1.2) taken from u in [0, 1), capped at MaxBackoff.
func Backoff(attempt int, u float64) time.Duration {
	d := float64(InitialBackoff) * math.Pow(BackoffFactor, float64(attempt)) * (0.8 + 0.4*u)
	return min(time.Duration(d), MaxBackoff)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkVectors verifies that each node property covered by an ensured
// vector index is nil or a numeric list of the index's dimension.
func (s *Sink) checkVectors(b *sink.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.vectors) == 0 {
		return nil
	}
	for _, n := range b.NodeUpserts {
		for _, vi := range s.vectors {
			if vi.Label != n.Label {
				continue
			}
			v, ok := n.Props[vi.Property]
			if !ok || v == nil {
				continue
			}
			l, ok := vectorLen(v)
			if !ok {
				return fmt.Errorf("node %q (label %q): property %q is %T, want a list of %d floats for vector index %q",
					n.ID, n.Label, vi.Property, v, vi.Dimension, vi.Name)
			}
			if l != vi.Dimension {
				return fmt.Errorf("node %q (label %q): property %q has %d dimensions, vector index %q has %d",
					n.ID, n.Label, vi.Property, l, vi.Name, vi.Dimension)
			}
		}
	}
	return nil
}

func vectorLen(v any) (int, bool) {
	switch v := v.(type) {
	case []float32:
		return len(v), true
	case []float64:
		return len(v), true
	case []int64:
		return len(v), true
	case []any:
		for _, e := range v {
			switch e.(type) {
			case float64, float32, int64, int:
			default:
				return 0, false
			}
		}
		return len(v), true
	}
	return 0, false
}

// VectorSearch returns the k nodes of the Sink's pipeline nearest to vec in
// the vector index called index, nearest first (ties by id) (Memgraph:
// vector_search.search, docs/memgraph.md §4). An index holds every
// pipeline's nodes of its label, and only the pipeline's are kept, so the
// index is asked for 4k nodes and, while fewer than k of those are the
// pipeline's and the index returned all it was asked for, for four times
// as many again (at most maxTextFetch). When the index was ensured by this
// Sink, vec must have its dimension: Memgraph silently accepts a query
// vector of the wrong length (issue #4476).
func (s *Sink) VectorSearch(ctx context.Context, index string, k int, vec []float32) ([]Hit, error) {
	s.mu.Lock()
	vi, known := s.vectors[index]
	s.mu.Unlock()
	if known && len(vec) != vi.Dimension {
		return nil, fmt.Errorf("vector search %q: query vector has %d dimensions, index has %d", index, len(vec), vi.Dimension)
	}
	for ask := min(4*k, maxTextFetch); ; ask = min(4*ask, maxTextFetch) {
		st, err := s.d.VectorSearch(index, s.cfg.Pipeline, k, ask, vec)
		if err != nil {
			return nil, err
		}
		fields, rows, _, err := s.runAuto(ctx, st)
		if err != nil {
			return nil, fmt.Errorf("vector search %q: %w", index, err)
		}
		fetched, hits, err := pairHits(fields, rows)
		if err != nil {
			return nil, fmt.Errorf("vector search %q: %w", index, err)
		}
		if len(hits) >= k || fetched < ask || ask >= maxTextFetch {
			return best(hits, k), nil
		}
	}
}

// maxTextFetch bounds how many nodes TextSearch and VectorSearch ask an
// index for while the pipeline's share of them stays below the limit.
const maxTextFetch = 1 << 16

// TextSearch returns up to limit nodes of the Sink's pipeline in the text
// index called index whose property matches any of terms, best first
// (ties by id), with their BM25 score in Hit.Similarity (Memgraph:
// text_search.search, docs/memgraph-text-search.md). A text index holds
// every pipeline's nodes of its label, and only the pipeline's are kept,
// so the index is asked for twice the limit and, while fewer than limit of
// those are the pipeline's and the index had more, for four times as many
// again (at most maxTextFetch): the top limit is the pipeline's own top
// limit however many nodes other pipelines share the index with. On a
// server that refuses the config-map limit (Memgraph 3.6–3.10 took it as
// a positional argument) the query is retried once in the older form; a
// server whose version Server read gets its form at once. On a Memgraph
// without text search (before 3.6, ServerInfo.TextSearch) it is an error
// before any query: the caller searches kgsync's state instead.
func (s *Sink) TextSearch(ctx context.Context, index, property string, terms []string, limit int) ([]Hit, error) {
	if limit < 1 {
		return nil, fmt.Errorf("text search %q: limit = %d, want >= 1", index, limit)
	}
	positional := false
	s.mu.Lock()
	server := s.server
	s.mu.Unlock()
	if server != nil && s.d.Name() == "memgraph" {
		if !server.TextSearch {
			return nil, fmt.Errorf("text search %q: Memgraph %s has no text search (kgsync creates text indexes on 3.6 or later); "+
				"lexical search comes from kgsync's state (docs/memgraph-support.md)", index, server.Version)
		}
		// 3.6–3.10 take the limit as a positional argument.
		positional = server.Features.TextIndexes && !server.Features.TextLimitInConfig
	}
	for ask := min(2*limit, maxTextFetch); ; ask = min(4*ask, maxTextFetch) {
		st, err := s.d.TextSearch(index, property, s.cfg.Pipeline, terms, ask)
		if err != nil {
			return nil, err
		}
		if positional {
			st.Query = strings.Replace(st.Query, "{limit: $limit}", "$limit", 1)
		}
		fields, rows, _, err := s.runAuto(ctx, st)
		if err != nil && !positional && strings.Contains(st.Query, "{limit: $limit}") && strings.Contains(strings.ToLower(err.Error()), "argument") {
			positional = true
			st.Query = strings.Replace(st.Query, "{limit: $limit}", "$limit", 1)
			fields, rows, _, err = s.runAuto(ctx, st)
		}
		if err != nil {
			return nil, fmt.Errorf("text search %q: %w", index, err)
		}
		fetched, hits, err := pairHits(fields, rows)
		if err != nil {
			return nil, fmt.Errorf("text search %q: %w", index, err)
		}
		if len(hits) >= limit || fetched < ask || ask >= maxTextFetch {
			return best(hits, limit), nil
		}
	}
}

// best is the n best of hits, best first, ties by id.
func best(hits []Hit, n int) []Hit {
	slices.SortStableFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Similarity, a.Similarity), strings.Compare(a.ID, b.ID))
	})
	return hits[:min(n, len(hits))]
}

// pairHits reads the one row of a sink.Dialect TextSearch or VectorSearch
// answer: the count the index yielded and the [id, score] pairs.
func pairHits(fields []string, rows [][]any) (int, []Hit, error) {
	fCol, hCol := slices.Index(fields, "fetched"), slices.Index(fields, "hits")
	if fCol < 0 || hCol < 0 {
		return 0, nil, fmt.Errorf("columns %q, want fetched and hits", fields)
	}
	if len(rows) != 1 {
		return 0, nil, fmt.Errorf("%d rows, want 1", len(rows))
	}
	fetched, ok := rows[0][fCol].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("fetched is %T", rows[0][fCol])
	}
	list, ok := rows[0][hCol].([]any)
	if !ok && rows[0][hCol] != nil {
		return 0, nil, fmt.Errorf("hits is %T", rows[0][hCol])
	}
	hits := make([]Hit, 0, len(list))
	for i, v := range list {
		pair, ok := v.([]any)
		if !ok || len(pair) != 2 {
			return 0, nil, fmt.Errorf("hit %d is %v, want [id, score]", i, v)
		}
		id, _ := pair[0].(string)
		score, ok := pair[1].(float64)
		if !ok {
			return 0, nil, fmt.Errorf("hit %d: score is %T", i, pair[1])
		}
		hits = append(hits, Hit{ID: id, Similarity: score})
	}
	return int(fetched), hits, nil
}
