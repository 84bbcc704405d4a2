// Package state defines what kgsync remembers between runs — runs, record
// hashes, chunk ids and hashes, the embedding cache, cursors — and the Store
// contract that state/postgres and state/sqlite implement. Both pass the
// shared conformance suite in state/statetest.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned when a run or cursor does not exist.
var ErrNotFound = errors.New("state: not found")

// ErrLocked is returned by Lock when another process holds the pipeline's lock.
var ErrLocked = errors.New("state: pipeline is locked by another process")

// ErrFenced is returned by a commit or a lock check of a run whose pipeline
// lock is no longer held: its session ended (fail-over, a dropped
// connection, pg_terminate_backend), or a newer holder took the lock and
// with it a newer fencing token (LockChecker).
var ErrFenced = errors.New("state: the pipeline's lock is no longer held by this run")

// LockChecker is a store whose pipeline locks can be lost while held (a
// Postgres session lock ends with its session). state/postgres implements
// it; a run checks it before every sink write, and the store checks the
// fencing token in every commit of a pipeline it holds the lock of.
type LockChecker interface {
	// CheckLock returns an error wrapping ErrFenced when the lock this
	// store took for pipeline is no longer held, or its fencing token is
	// no longer the newest; nil when the store does not hold the lock.
	CheckLock(ctx context.Context, pipeline string) error
}

// Trigger says what started a run.
type Trigger string

// Triggers.
const (
	TriggerManual  Trigger = "manual"
	TriggerCron    Trigger = "cron"
	TriggerWebhook Trigger = "webhook"
	TriggerResync  Trigger = "resync"
)

// Status is a run's outcome.
type Status string

// Statuses.
const (
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	// StatusPartial: the run finished, but records it could not read,
	// parse or embed are in quarantine (Counts.Quarantined); they keep
	// their last good version and are retried on the next run.
	StatusPartial Status = "partial"
	StatusFailed  Status = "failed"
	// StatusCancelled: the run was stopped (SIGTERM, the daemon's
	// shutdown) before its end; what it committed stays, the rest is
	// redone by the next run.
	StatusCancelled Status = "cancelled"
	// StatusAbandoned: the process running it died (SIGKILL, a crash)
	// before closing it; the next run of the pipeline closes it so, and
	// redoes what it left.
	StatusAbandoned Status = "abandoned"
)

// Counts are a run's counters, as printed by `kgsync sync --json`.
type Counts struct {
	RecordsRead      int `json:"read"`
	RecordsNew       int `json:"new"`
	RecordsChanged   int `json:"changed"`
	RecordsUnchanged int `json:"unchanged"`
	RecordsDeleted   int `json:"deleted"`
	// RecordsRenamed counts records moved to a new key (a renamed table or
	// a changed key value): neither new nor deleted.
	RecordsRenamed int `json:"renamed"`
	RecordsSkipped int `json:"skipped"`
	ChunksTotal    int `json:"chunks_total"`
	ChunksEmbedded int `json:"chunks_embedded"`
	ChunksReused   int `json:"chunks_reused"`
	ChunksDeleted  int `json:"chunks_deleted"`
	SinkStatements int `json:"sink_statements"`
	SinkBatches    int `json:"sink_batches"`
	// BatchesCut counts the batches the run ended early because their
	// chunks reached the pipeline's batch_chunk_bytes (their other records
	// went into the next batch).
	BatchesCut int `json:"batches_cut,omitempty"`
	// SinkRetries counts transient-error retries of sink calls (sink.Stats.Retries).
	SinkRetries int `json:"sink_retries"`
	// EmbedRequests counts calls to the embedding provider (embed.Stats.Calls).
	EmbedRequests int `json:"embed_requests"`
	// EmbedErrors counts embedding steps that failed after the provider's own retries.
	EmbedErrors int `json:"embed_errors"`
	// RecordsRebuilt and ChunksRebuilt count what a graph rebuild
	// (resync --rebuild-graph) rewrote from state: it reads no source.
	RecordsRebuilt int `json:"rebuilt"`
	ChunksRebuilt  int `json:"chunks_rebuilt"`
	// Quarantined is how many of the pipeline's records (or failed parts
	// of listings) are in quarantine when the run ends (state.Quarantined).
	Quarantined int `json:"quarantined"`
	// Review counts of a pipeline with an expert review in Grist: rows of
	// the Elements table read back and those whose expert columns changed,
	// rows written (added, updated, deleted), corrections newly flagged
	// for review (parsed text changed, element gone) and HTTP requests.
	ReviewRowsRead      int `json:"review_rows_read,omitempty"`
	ReviewExpertChanges int `json:"review_expert_changes,omitempty"`
	ReviewRowsWritten   int `json:"review_rows_written,omitempty"`
	ReviewConflicts     int `json:"review_conflicts,omitempty"`
	ReviewRequests      int `json:"review_requests,omitempty"`
	// ReviewNeedsReview is the number of elements needing review when the
	// run ended (a state, not a delta).
	ReviewNeedsReview int `json:"review_needs_review,omitempty"`
}

// Run is one execution of a pipeline.
type Run struct {
	ID         int64     `json:"run_id"`
	Pipeline   string    `json:"pipeline"`
	Trigger    Trigger   `json:"trigger"`
	Status     Status    `json:"status"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"` // zero while running
	Counts     Counts    `json:"counts"`
	Error      string    `json:"error,omitempty"` // failure message, "" on success
	// Warnings are what the run asks the user to act on (a table or column
	// renamed upstream whose old name the config still uses, with the
	// config lines to change); a run with warnings still succeeds.
	Warnings []string `json:"warnings,omitempty"`
}

// MarshalJSON writes a Run with "finished_at" left out while it is zero
// (a running run has not finished; no 0001-01-01 date is made up).
func (r Run) MarshalJSON() ([]byte, error) {
	type plain Run
	out := struct {
		plain
		FinishedAt *time.Time `json:"finished_at,omitempty"`
	}{plain: plain(r)}
	if !r.FinishedAt.IsZero() {
		f := r.FinishedAt
		out.FinishedAt = &f
	}
	return json.Marshal(out)
}

// Record is the stored state of one source record.
type Record struct {
	Pipeline string
	Source   string
	Key      string
	// Hash is the record's content hash (diff.RecordHash).
	Hash uint64
	// Fingerprint is the hash of the config that shaped the record's output
	// (mapping, chunking, embedder model and dimensions).
	Fingerprint uint64
	// Anchor is the node label the record was written as.
	Anchor string
	// Props is the node's property map as JSON, enough to rewrite the node
	// from state (resync --rebuild-graph).
	Props []byte
	// Ord is the record's place in its source's listing order, as the run
	// that last wrote it placed it: records of a source ordered by (Ord,
	// Key) follow the order the source lists them in, so a run can compare
	// a listing with state as two streams. 0 for records stored before
	// state kept it.
	Ord int64
	// Origin is the record's upstream row (a Grist tableRef and row id),
	// zero when the source has none.
	Origin Origin
}

// Origin names a record's upstream row by ids that outlive renames and key
// changes (sources.Origin): Scope "" means none.
type Origin struct {
	Scope string
	ID    int64
}

// OriginIndex looks stored records up by origin. state/sqlite and
// state/postgres implement it (the pipeline checks for it by type
// assertion); a source reads it through sources.RowIndex.
type OriginIndex interface {
	// RecordOriginsOf returns origin id -> record key of the records of a
	// pipeline's source whose Origin.Scope is scope and whose Origin.ID is
	// one of ids (ids not stored are absent; scope "" is no origin; of two
	// records with one origin, either). It answers through the origin
	// index, a query per few hundred ids, so a source asks for a page of
	// rows at a time, never a whole scope.
	RecordOriginsOf(ctx context.Context, pipeline, source, scope string, ids []int64) (map[int64]string, error)
	// MaxRecordOrigin returns the largest Origin.ID of the records of a
	// pipeline's source in scope, 0 when it holds none (or scope is ""):
	// one look-up at the end of the origin index. A source knows from it
	// that a row with a larger id is not stored, without asking
	// RecordOriginsOf (sources.RowIDBound).
	MaxRecordOrigin(ctx context.Context, pipeline, source, scope string) (int64, error)
}

// RecordPos is a place in a source's listing order: records sort by Ord,
// then by Key in byte order.
type RecordPos struct {
	Ord int64
	Key string
}

// Less reports whether p sorts before q.
func (p RecordPos) Less(q RecordPos) bool {
	return p.Ord < q.Ord || p.Ord == q.Ord && p.Key < q.Key
}

// RecordEntry is a stored record without its props: its key, place in the
// listing order and summary.
type RecordEntry struct {
	RecordPos
	RecordSummary
}

// RecordStats are a source's stored record count and largest Ord.
type RecordStats struct {
	Count  int
	MaxOrd int64
}

// RecordSummary is a stored record's hash and config fingerprint.
type RecordSummary struct {
	Hash        uint64
	Fingerprint uint64
	// Origin is the record's stored origin.
	Origin Origin
}

// Chunk is the stored state of one chunk of a record.
type Chunk struct {
	Pipeline  string
	Source    string
	RecordKey string
	ID        string
	// Hash is the chunk's content hash (diff.ChunkHash): text, address, context, position.
	Hash uint64
	// TextHash keys the embedding cache (diff.TextHash of EmbedText).
	TextHash uint64
	Position int
	// Props is the chunk node's property map as JSON without the vector.
	Props []byte
}

// Commit is everything one batch changes in state, applied in one transaction
// after the sink acknowledged the batch.
type Commit struct {
	Pipeline string
	// Records are upserted by (Source, Key).
	Records []Record
	// DeleteRecords are removed with all their chunks.
	DeleteRecords []RecordRef
	// ReplaceChunks maps each listed record to its full new chunk list: the
	// record's stored chunks are replaced by it (an empty list removes all).
	ReplaceChunks map[RecordRef][]Chunk
	// Cursors are upserted by source name (absent = unchanged).
	Cursors map[string]string
	// LexicalDeletes remove rows of the lexical index; LexicalUpserts then
	// insert or replace rows (by Source, RecordKey, ID). A row belongs to a
	// stored record: its record is upserted by the same commit or stored
	// before it, else Commit fails and writes nothing (a row of a record the
	// commit deletes is dropped). DeleteRecords remove all the records' rows
	// too. A run lists only the rows of the chunks, elements and terms it
	// changed, so an edit updates the index in proportion to the edit.
	LexicalDeletes []LexicalRef
	LexicalUpserts []LexicalRow
	// SetOrigins sets the origin of stored records, leaving the rest of
	// them as they are (records stored before origins were kept); refs not
	// stored are ignored.
	SetOrigins map[RecordRef]Origin
	// LinkDocs upserts the link index entries of documents (state keeps
	// the bytes as given); an empty entry removes the record's entry.
	// DeleteRecords remove the records' entries too.
	LinkDocs map[RecordRef][]byte
	// Ords sets the listing place (Record.Ord) of stored records that are
	// not rewritten (records that moved in the listing); refs not stored
	// are ignored.
	Ords map[RecordRef]int64
	// Intent, when set, is stored in the same transaction; IntentList
	// returns it until a later commit lists its ID in IntentsDone.
	Intent *Intent
	// IntentsDone are the IDs of intents removed in the same transaction
	// (IDs not stored are ignored).
	IntentsDone []int64
}

// Kinds of lexical index rows.
const (
	LexicalChunk   = "chunk"
	LexicalElement = "element"
	LexicalTerm    = "term"
	// LexicalNode is a table row's node: its embeddable attributes' text.
	LexicalNode = "node"
)

// LexicalRef names one row of the lexical index.
type LexicalRef struct {
	Source    string
	RecordKey string
	// ID is the graph node the row stands for (a chunk, element, term or
	// row node id).
	ID string
}

// LexicalRow is one row of the lexical index: the text of a chunk, an
// element, a term (name and definition) or a table row's embeddable
// attributes, already normalized by the lexical analyzer
// (retrieval.LexicalText): words of letters and digits joined by single
// spaces. Stores tokenize it on whitespace only and keep term frequencies,
// row lengths and document frequencies for BM25.
type LexicalRow struct {
	LexicalRef
	// Kind is one of LexicalChunk, LexicalElement, LexicalTerm, LexicalNode.
	Kind string
	Text string
}

// LexicalStats are the collection statistics BM25 needs for one pipeline's
// rows of one kind.
type LexicalStats struct {
	// Rows is the number of rows; TotalLen the sum of their lengths in terms.
	Rows     int
	TotalLen int64
	// DF is, for each query term, the number of rows containing it (terms
	// no row contains are absent).
	DF map[string]int
}

// LexicalMatch is one row containing at least one query term.
type LexicalMatch struct {
	LexicalRef
	// Len is the row's length in terms; TF the count of each query term in
	// it (terms it lacks are absent).
	Len int
	TF  map[string]int
}

// Intent is a batch's write-ahead entry: a run commits it with the batch's
// records before it writes the batch to the sink, and removes it once the
// sink acknowledged the batch. An intent still stored when a run starts
// belongs to a batch whose sink write may or may not have happened; the
// pipeline then marks its records as interrupted.
type Intent struct {
	// ID is chosen by the caller, unique within the pipeline.
	ID int64
	// Data is the pipeline's encoding of the batch (opaque to state).
	Data []byte
}

// RecordRef names one record of a pipeline.
type RecordRef struct {
	Source string
	Key    string
}

// Store is the state contract. All methods are safe for concurrent use.
type Store interface {
	// Migrate applies the embedded, versioned migrations (idempotent).
	Migrate(ctx context.Context) error
	// Lock takes the pipeline's lock for one run: a Postgres advisory lock
	// (released by Postgres if the process dies) or a file lock for SQLite.
	// It returns ErrLocked at once when another process holds it.
	Lock(ctx context.Context, pipeline string) (unlock func() error, err error)

	// RunOpen records the start of a run with StatusRunning.
	RunOpen(ctx context.Context, pipeline string, trigger Trigger) (Run, error)
	// RunClose records the run's outcome, counts and error message.
	RunClose(ctx context.Context, run Run) error
	// RunGet returns one run or ErrNotFound.
	RunGet(ctx context.Context, id int64) (Run, error)
	// RunList returns the newest runs of a pipeline ("" = all), newest first.
	RunList(ctx context.Context, pipeline string, limit int) ([]Run, error)

	// RecordList returns the stored records of a pipeline's source, by key.
	RecordList(ctx context.Context, pipeline, source string) (map[string]Record, error)
	// RecordIndex calls fn with the key, hash and fingerprint of every
	// stored record of a pipeline's source, without their props: what a run
	// needs to classify a listing. Order is unspecified.
	RecordIndex(ctx context.Context, pipeline, source string, fn func(key string, s RecordSummary)) error
	// RecordGet returns the named records of a pipeline's source, by key;
	// keys not stored are absent.
	RecordGet(ctx context.Context, pipeline, source string, keys []string) (map[string]Record, error)
	// RecordScan returns up to limit stored records of a pipeline's
	// source, without props, in listing order (Ord, then Key in byte
	// order), starting after the position after (nil: from the first):
	// the stored side of a run's comparison with a listing, read a page at
	// a time so that memory does not grow with the source.
	RecordScan(ctx context.Context, pipeline, source string, after *RecordPos, limit int) ([]RecordEntry, error)
	// RecordSummaries returns the named records of a pipeline's source
	// without props, by key; keys not stored are absent.
	RecordSummaries(ctx context.Context, pipeline, source string, keys []string) (map[string]RecordEntry, error)
	// RecordStats counts a pipeline's source's stored records and gives
	// their largest Ord (0 when there are none).
	RecordStats(ctx context.Context, pipeline, source string) (RecordStats, error)
	// RecordKeysWithPrefix returns the stored keys of a pipeline's source
	// that start with one of prefixes, sorted (the children of records:
	// sources.ChildMarker).
	RecordKeysWithPrefix(ctx context.Context, pipeline, source string, prefixes []string) ([]string, error)
	// ChunkGet returns the stored chunks of the named records of a
	// pipeline's source, by record key, each by position, in one or a few
	// queries for a whole batch. Keys with no chunks are absent.
	ChunkGet(ctx context.Context, pipeline, source string, keys []string) (map[string][]Chunk, error)
	// ChunkCount counts a pipeline's stored chunks.
	ChunkCount(ctx context.Context, pipeline string) (int, error)
	// CursorGet returns a source's cursor, "" when none is stored.
	CursorGet(ctx context.Context, pipeline, source string) (string, error)
	// Commit applies one batch's changes atomically.
	Commit(ctx context.Context, c Commit) error
	// IntentList returns the pipeline's stored intents by ascending ID.
	IntentList(ctx context.Context, pipeline string) ([]Intent, error)
	// LinkDocs calls fn with every link index entry of a pipeline
	// (Commit.LinkDocs), by source and key.
	LinkDocs(ctx context.Context, pipeline string, fn func(ref RecordRef, data []byte) error) error

	// LexicalSearch returns the statistics of a pipeline's lexical rows of
	// kind and every row of them that contains one of terms, with its term
	// frequencies: what BM25 needs (retrieval ranks them). Terms are
	// analyzer output (lower-case words of letters and digits).
	LexicalSearch(ctx context.Context, pipeline, kind string, terms []string) (LexicalStats, []LexicalMatch, error)
	// LexicalCount counts a pipeline's lexical rows of kind ("" = all kinds).
	LexicalCount(ctx context.Context, pipeline, kind string) (int, error)

	// EmbeddingsGet and EmbeddingsPut are the embedding cache (embed.Cache).
	EmbeddingsGet(ctx context.Context, model string, textHashes []uint64) (map[uint64][]float32, error)
	EmbeddingsPut(ctx context.Context, model string, vecs map[uint64][]float32) error

	// QuarantinePut records that the run runID failed on these records:
	// new keys start with Attempts 1 and FirstAt now; known keys take the
	// new stage and error, LastAt now and one more attempt.
	QuarantinePut(ctx context.Context, pipeline string, runID int64, qs []Quarantined) error
	// QuarantineRelease removes records from quarantine (absent keys are
	// ignored).
	QuarantineRelease(ctx context.Context, pipeline string, refs []RecordRef) error
	// QuarantineList returns a pipeline's quarantined records ("" = every
	// pipeline's), by source and key.
	QuarantineList(ctx context.Context, pipeline string) ([]Quarantined, error)

	// Close releases the store's connections.
	Close() error
}

// JobGenerations is the per-pipeline counter the daemon's River jobs
// coalesce on (daemon/jobs.go): a queued job of a pipeline is unique per
// (pipeline, generation), and the job that takes the pipeline's lock
// advances the generation before its run starts, so a request arriving
// after that queues one new job instead of joining the running one.
// state/sqlite and state/postgres implement it in their sync_generations
// table (migration 070); the daemon checks for it by type assertion.
type JobGenerations interface {
	// Generation returns pipeline's generation, 0 before its first job ran.
	Generation(ctx context.Context, pipeline string) (int64, error)
	// AdvanceGeneration sets pipeline's generation to from+1 if it is from
	// (compare and set) and reports whether it did.
	AdvanceGeneration(ctx context.Context, pipeline string, from int64) (bool, error)
}
