// Package pipeline runs one pipeline end to end, as design.md's "One run,
// step by step" describes: lock → open run → read → diff → map → chunk →
// embed → write → commit → close.
//
// A batch's new state is committed with a write-ahead intent before its
// sink write, and the intent is removed once the sink acknowledged the
// write (writeAndCommit); sink writes are idempotent (MERGE), so a crash
// anywhere means the next run marks at most one batch as interrupted,
// redoes it and converges.
// Deletions happen only after a source's listing completed without error,
// and never beyond the mass-delete guard.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
)

// Labels and relationship types of the default document mapping
// (design.md, "Graph shape written to Memgraph").
const (
	LabelSection = "Section"
	LabelChunk   = "Chunk"
	RelPartOf    = "PART_OF"
	RelInSection = "IN_SECTION"
	RelNext      = "NEXT"
	// PropEmbedding is the chunk's vector property.
	PropEmbedding = "embedding"
	// ChunkVectorIndex is the name of the chunks' vector index.
	ChunkVectorIndex = "chunk_embedding"
)

// Mode selects a run's variant (design.md, "resync variants").
type Mode struct {
	// Full ignores stored record hashes: every record is rewritten.
	Full bool
	// Reembed ignores the embedding cache: every chunk is embedded again.
	Reembed bool
	// RebuildGraph rewrites the graph from state and the embedding cache,
	// without reading sources (zero embedding calls when the cache is whole).
	RebuildGraph bool
	// AllowMassDelete lets a run delete more than MaxDeleteRatio of the records.
	AllowMassDelete bool
}

// Pipeline is one configured flow, ready to run.
type Pipeline struct {
	// Name identifies the pipeline in state.
	Name string
	// Sources feed the pipeline; each has its own anchor via its records.
	Sources []sources.Source
	// Embedder embeds chunk texts.
	Embedder embed.Embedder
	// Sink receives the graph writes.
	Sink sink.Sink
	// Store keeps state and the embedding cache.
	Store state.Store
	// LockHeld says the caller holds the pipeline's lock (Store.Lock) for
	// the run, as a daemon's job does: Run does not take it.
	LockHeld bool
	// Chunking configures the chunker.
	Chunking chunker.Options
	// DocumentTimeout is the time budget of one document's parse and
	// chunking; a document over it is skipped as too complex (0 =
	// DefaultDocumentTimeout).
	DocumentTimeout time.Duration
	// DocumentMemory is the memory budget of one document's parse and
	// chunking: how far the heap may grow, in bytes (0 =
	// DefaultDocumentMemory); over it the document is skipped as too
	// complex.
	DocumentMemory int64
	// Model maps tables to anchors, attributes and links (nil = default mapping).
	Model *Model
	// Mandatory are element pairs always retrieved together (MANDATORY edges).
	Mandatory []MandatoryLink
	// Review is the expert review of the pipeline's documents in Grist
	// (pipeline/review); nil = none.
	Review *review.Review
	// BatchSize is the number of records per write-and-commit batch; a
	// batch also ends once its documents hold 8 MiB.
	BatchSize int
	// BatchChunkBytes ends a batch once the chunks its records map to, and
	// the stored chunks they replace, hold this many bytes of text (see
	// prepareBatch); the rest of its records go into the next batch,
	// counted in state.Counts.BatchesCut (0 =
	// config.DefaultPipelineBatchChunkBytes).
	BatchChunkBytes int
	// WriterBytes bounds the bytes of the prepared batches the writer holds
	// in flight (see batchWriter.submit); one batch is always handed over
	// (0 = config.DefaultPipelineWriterBytes).
	WriterBytes int
	// InFlightFunc, when set, is called with the bytes of the batches the
	// writer holds in flight each time they change, on the run's goroutine;
	// a run that made any call ends with a call with 0.
	InFlightFunc func(bytes int)
	// MaxDeleteRatio is the mass-delete guard (0 < r <= 1; 1 disables it).
	MaxDeleteRatio float64
	// Fingerprint is the hash of the config that shapes records' output
	// (Fingerprint func); a change reprocesses every record.
	Fingerprint uint64
	// Settings are the values of Fingerprint (Settings func); nil in a
	// Pipeline built without them (plan then cannot name a change).
	Settings map[string]any
	// VectorCapacity is the initial capacity of the chunk vector index.
	VectorCapacity int
	// Search tunes searches of the pipeline (Searcher); the zero value
	// means retrieval.DefaultConfig.
	Search retrieval.Config
	// Logger receives run logs; nil discards.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Progress, when set, is called after each committed batch.
	Progress func(p Progress)
}

// Progress reports a running run's advance.
type Progress struct {
	Source  string
	Records int // records read so far in this run
	Counts  state.Counts
}

// Result is a finished run.
type Result struct {
	Run      state.Run
	Duration time.Duration
}

// runBeginner is a sink that scopes its output to a run (the CYPHERL sink
// names its file after the run id).
type runBeginner interface {
	Begin(runID int64) error
}

// schemaForgetter is a sink that remembers the indexes it wrote (the CYPHERL
// sink); a graph rebuild writes them again.
type schemaForgetter interface {
	ForgetSchema()
}

// ErrMassDelete is returned when a run would delete more records than the
// mass-delete guard allows.
var ErrMassDelete = errors.New("mass-delete guard")

func (p *Pipeline) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

func (p *Pipeline) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

// Schema is the set of indexes the pipeline's graph needs.
func (p *Pipeline) Schema(anchors []string) sink.Schema {
	s := sink.Schema{}
	seen := map[string]bool{}
	for _, l := range append(append([]string{}, anchors...), LabelSection, LabelElement, LabelTerm, LabelChunk) {
		if l != "" && !seen[l] {
			seen[l] = true
			s.Indexes = append(s.Indexes, sink.Index{Label: l, Property: "id"})
		}
	}
	capacity := p.VectorCapacity
	if capacity <= 0 {
		capacity = 10000
	}
	s.VectorIndexes = append(s.VectorIndexes, sink.VectorIndex{
		Name: ChunkVectorIndex, Label: LabelChunk, Property: PropEmbedding,
		Dimension: p.Embedder.Dimensions(), Metric: "cos", Capacity: capacity,
	})
	s.Indexes = append(s.Indexes, sink.Index{Label: LabelTerm, Property: "name_lower"})
	s.VectorIndexes = append(s.VectorIndexes, sink.VectorIndex{
		Name: TermVectorIndex, Label: LabelTerm, Property: PropEmbedding,
		Dimension: p.Embedder.Dimensions(), Metric: "cos", Capacity: capacity,
	})
	s.TextIndexes = append(s.TextIndexes,
		sink.TextIndex{Name: ChunkTextIndex, Label: LabelChunk, Properties: []string{PropLex}},
		sink.TextIndex{Name: ElementTextIndex, Label: LabelElement, Properties: []string{PropLex}},
		sink.TextIndex{Name: TermTextIndex, Label: LabelTerm, Properties: []string{PropLex}})
	s.Edges = edgeTypes(p.hasDocuments(), p.Model)
	emb := p.Model.Embeddable()
	for _, label := range slices.Sorted(maps.Keys(emb)) {
		s.TextIndexes = append(s.TextIndexes, sink.TextIndex{Name: TextIndexName(label), Label: label, Properties: []string{PropRowLex}})
		for _, attr := range emb[label] {
			s.VectorIndexes = append(s.VectorIndexes, sink.VectorIndex{
				Name: VectorIndexName(label, attr), Label: label, Property: VectorProperty(attr),
				Dimension: p.Embedder.Dimensions(), Metric: "cos", Capacity: capacity,
			})
		}
	}
	return s
}

// edgeTypes are the relationship types whose edges carry properties, as
// far as the config tells: a document source's cross-references (keyed,
// with the citing text) and MANDATORY edges (keyed, with a note), and each
// link table's edges (keyed by the row, with its columns). A sink checks
// them before the first write (Memgraph needs
// --storage-properties-on-edges for them); others, such as properties a
// source puts on its links, are checked when written.
func edgeTypes(documents bool, m *Model) []sink.EdgeType {
	var out []sink.EdgeType
	if documents {
		out = append(out, sink.EdgeType{Type: RelCrossRef, Keyed: true, Properties: []string{"text"}},
			sink.EdgeType{Type: RelMandatory, Keyed: true, Properties: []string{"note", "source", "corrected_by", "corrected_at"}})
	}
	if m != nil {
		for _, lt := range m.cfg.LinkTables {
			out = append(out, sink.EdgeType{Type: lt.Name, Keyed: true, Properties: slices.Clone(lt.Properties)})
		}
	}
	return out
}

// hasDocuments reports whether a source is a folder of documents.
func (p *Pipeline) hasDocuments() bool {
	for _, src := range p.Sources {
		if _, ok := src.(*files.Source); ok {
			return true
		}
	}
	return false
}

// Run executes the pipeline once. The run is recorded in state with its
// counts and outcome, also when it fails; the returned error wraps the
// cause (state.ErrLocked when another process runs the pipeline).
func (p *Pipeline) Run(ctx context.Context, trigger state.Trigger, mode Mode) (res Result, err error) {
	start := p.now()
	unlock := func() error { return nil }
	if !p.LockHeld {
		if unlock, err = p.Store.Lock(ctx, p.Name); err != nil {
			return res, fmt.Errorf("pipeline %q: lock: %w", p.Name, err)
		}
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("pipeline %q: unlock: %w", p.Name, uerr)
		}
	}()
	// Holding the lock, no other run of the pipeline can be going on: a run
	// still marked running was left by a process that died.
	if err := p.closeAbandoned(ctx); err != nil {
		return res, fmt.Errorf("pipeline %q: %w", p.Name, err)
	}
	run, err := p.Store.RunOpen(ctx, p.Name, trigger)
	if err != nil {
		return res, fmt.Errorf("pipeline %q: open run: %w", p.Name, err)
	}
	log := p.logger().With(slog.String("pipeline", p.Name), slog.Int64("run_id", run.ID))
	log.Info("run started", slog.String("trigger", string(trigger)))

	r := &runner{p: p, run: &run, mode: mode, log: log}
	if b, ok := p.Sink.(runBeginner); ok {
		err = b.Begin(run.ID)
	}
	if f, ok := p.Sink.(schemaForgetter); ok && mode.RebuildGraph {
		f.ForgetSchema()
	}
	if err == nil {
		err = r.execute(ctx)
	}

	run.FinishedAt = p.now()
	run.Status = state.StatusSucceeded
	if qs, qerr := p.Store.QuarantineList(context.WithoutCancel(ctx), p.Name); qerr == nil {
		run.Counts.Quarantined = len(qs)
		if len(qs) > 0 {
			run.Status = state.StatusPartial
		}
	}
	if err != nil {
		run.Status = state.StatusFailed
		if ctx.Err() != nil {
			run.Status = state.StatusCancelled // stopped, not broken
		}
		run.Error = err.Error()
	}
	if total, cerr := p.Store.ChunkCount(context.WithoutCancel(ctx), p.Name); cerr == nil {
		run.Counts.ChunksTotal = total
	}
	if cerr := p.Store.RunClose(context.WithoutCancel(ctx), run); cerr != nil && err == nil {
		err = fmt.Errorf("close run: %w", cerr)
	}
	res = Result{Run: run, Duration: p.now().Sub(start)}
	if err != nil {
		// At info level: the caller reports the error once (the CLI in
		// the run's summary, the daemon in its own log line).
		log.Info("run ended", slog.String("status", string(run.Status)), slog.String("err", err.Error()))
		return res, fmt.Errorf("pipeline %q: %w", p.Name, err)
	}
	if run.Status == state.StatusPartial {
		log.Warn("run partial: records in quarantine keep their last good version and are retried next run",
			slog.Int("quarantined", run.Counts.Quarantined))
	}
	log.Info("run finished",
		slog.Int("read", run.Counts.RecordsRead), slog.Int("new", run.Counts.RecordsNew),
		slog.Int("changed", run.Counts.RecordsChanged), slog.Int("deleted", run.Counts.RecordsDeleted),
		slog.Int("chunks_embedded", run.Counts.ChunksEmbedded), slog.Int("sink_statements", run.Counts.SinkStatements))
	return res, nil
}

// closeAbandoned marks runs left "running" by a process that died (killed,
// or its machine lost) as failed.
func (p *Pipeline) closeAbandoned(ctx context.Context) error {
	runs, err := p.Store.RunList(ctx, p.Name, 20)
	if err != nil {
		return fmt.Errorf("list runs: %w", err)
	}
	for _, run := range runs {
		if run.Status != state.StatusRunning {
			continue
		}
		run.Status = state.StatusAbandoned
		run.FinishedAt = p.now()
		run.Error = "abandoned: the process running it stopped before closing it"
		if err := p.Store.RunClose(ctx, run); err != nil {
			return fmt.Errorf("close abandoned run %d: %w", run.ID, err)
		}
		p.logger().Warn("abandoned run closed", slog.String("pipeline", p.Name), slog.Int64("run_id", run.ID))
	}
	return nil
}
