// Package statetest is the conformance suite every state.Store passes: the
// backends run it from their tests (state/sqlite, state/postgres), so a
// behaviour of the contract is specified once, here. SQLite gives other
// packages' tests a real store.
package statetest

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/state"
)

// Run runs the suite. newStore must return a fresh, migrated, empty store
// used by this test only, and close it in t.Cleanup (the suite may close it
// first; Close must then return nil). Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) state.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s state.Store)
	}{
		{"RunLifecycle", testRunLifecycle},
		{"RunNotFound", testRunNotFound},
		{"RunFinishedAtRoundTrip", testRunFinishedAt},
		{"RecordUpsertListDelete", testRecords},
		{"RecordPropsRoundTrip", testRecordProps},
		{"HashesHighBit", testHashesHighBit},
		{"ChunkReplace", testChunkReplace},
		{"ChunkGet", testChunkGet},
		{"DeleteRecordRemovesChunks", testDeleteRecordRemovesChunks},
		{"DeleteWinsOverUpsert", testDeleteWins},
		{"CommitRejectedWritesNothing", testCommitRejected},
		{"Cursors", testCursors},
		{"Embeddings", testEmbeddings},
		{"EmbeddingsMany", testEmbeddingsMany},
		{"Lock", testLock},
		{"PipelinesIsolated", testPipelinesIsolated},
		{"MigrateTwice", testMigrateTwice},
		{"ConcurrentCommits", testConcurrentCommits},
		{"LexicalIndex", testLexicalIndex},
		{"LexicalCommitRejected", testLexicalCommitRejected},
		{"LexicalNewAndStoredRows", testLexicalNewAndStoredRows},
		{"LexicalStats", testLexicalStats},
		{"JobGenerations", testJobGenerations},
		{"AdvanceGenerationConcurrent", testAdvanceGenerationConcurrent},
		{"RecordOrd", testRecordOrd},
		{"DeleteMany", testDeleteMany},
		{"Intents", testIntents},
		{"RecordScan", testRecordScan},
		{"RecordKeysWithPrefix", testRecordKeysWithPrefix},
		{"LinkDocs", testLinkDocs},
		{"Origins", testOrigins},
		{"OriginsOf", testOriginsOf},
		{"RunWarnings", testRunWarnings},
		{"Review", testReview},
		{"Quarantine", testQuarantine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

// requireRunEqual compares runs field by field, times with time.Equal
// (backends may return another location than the one given).
func requireRunEqual(t *testing.T, want, got state.Run) {
	t.Helper()
	require.True(t, want.StartedAt.Equal(got.StartedAt), "started_at: want %v, got %v", want.StartedAt, got.StartedAt)
	require.True(t, want.FinishedAt.Equal(got.FinishedAt), "finished_at: want %v, got %v", want.FinishedAt, got.FinishedAt)
	want.StartedAt, want.FinishedAt, got.StartedAt, got.FinishedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	require.Equal(t, want, got)
}

// runIDs lists the ids of runs in order.
func runIDs(runs []state.Run) []int64 {
	ids := make([]int64, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func testRunLifecycle(t *testing.T, s state.Store) {
	ctx := t.Context()
	before := time.Now().Truncate(time.Microsecond) // stores keep microseconds (Postgres' precision)
	r1, err := s.RunOpen(ctx, "p1", state.TriggerCron)
	require.NoError(t, err)
	r2, err := s.RunOpen(ctx, "p1", state.TriggerManual)
	require.NoError(t, err)
	r3, err := s.RunOpen(ctx, "p2", state.TriggerWebhook)
	require.NoError(t, err)
	after := time.Now()

	require.Equal(t, "p1", r1.Pipeline)
	require.Equal(t, state.TriggerCron, r1.Trigger)
	require.Equal(t, state.StatusRunning, r1.Status)
	require.True(t, r1.FinishedAt.IsZero(), "a running run has no finish time")
	require.False(t, r1.StartedAt.Before(before), "started_at %v before the call at %v", r1.StartedAt, before)
	require.False(t, r1.StartedAt.After(after), "started_at %v after the call returned at %v", r1.StartedAt, after)
	require.Less(t, r1.ID, r2.ID, "ids grow with each run")
	require.Less(t, r2.ID, r3.ID, "ids grow with each run")

	got, err := s.RunGet(ctx, r1.ID)
	require.NoError(t, err)
	requireRunEqual(t, r1, got)

	// Every counter distinct, so a swapped column shows.
	counts := state.Counts{
		RecordsRead: 1, RecordsNew: 2, RecordsChanged: 3, RecordsUnchanged: 4, RecordsDeleted: 5, RecordsSkipped: 6,
		ChunksTotal: 7, ChunksEmbedded: 8, ChunksReused: 9, ChunksDeleted: 10, SinkStatements: 11, SinkBatches: 12,
	}
	closed := r1
	closed.Status, closed.Counts, closed.Error = state.StatusFailed, counts, "sink: write batch 3: connection reset"
	require.NoError(t, s.RunClose(ctx, closed))
	got, err = s.RunGet(ctx, r1.ID)
	require.NoError(t, err)
	require.Equal(t, state.StatusFailed, got.Status)
	require.Equal(t, counts, got.Counts)
	require.Equal(t, "sink: write batch 3: connection reset", got.Error)
	require.False(t, got.FinishedAt.IsZero(), "closing sets a finish time")
	require.False(t, got.FinishedAt.Before(got.StartedAt))
	require.False(t, got.FinishedAt.After(time.Now()))
	require.True(t, r1.StartedAt.Equal(got.StartedAt), "closing keeps the start time")

	ok := r2
	ok.Status, ok.Counts.RecordsRead = state.StatusSucceeded, 42
	require.NoError(t, s.RunClose(ctx, ok))
	got, err = s.RunGet(ctx, r2.ID)
	require.NoError(t, err)
	require.Equal(t, state.StatusSucceeded, got.Status)
	require.Equal(t, state.Counts{RecordsRead: 42}, got.Counts)
	require.Empty(t, got.Error)

	list, err := s.RunList(ctx, "p1", 10)
	require.NoError(t, err)
	require.Equal(t, []int64{r2.ID, r1.ID}, runIDs(list), "newest first")
	requireRunEqual(t, got, list[0])

	list, err = s.RunList(ctx, "", 10)
	require.NoError(t, err)
	require.Equal(t, []int64{r3.ID, r2.ID, r1.ID}, runIDs(list), "all pipelines, newest first")

	list, err = s.RunList(ctx, "", 2)
	require.NoError(t, err)
	require.Equal(t, []int64{r3.ID, r2.ID}, runIDs(list), "limit keeps the newest")

	list, err = s.RunList(ctx, "p1", 0)
	require.NoError(t, err)
	require.Equal(t, []int64{r2.ID, r1.ID}, runIDs(list), "limit 0 means no limit")

	list, err = s.RunList(ctx, "nope", 10)
	require.NoError(t, err)
	require.Empty(t, list)
}

func testRunNotFound(t *testing.T, s state.Store) {
	ctx := t.Context()
	_, err := s.RunGet(ctx, 987654)
	require.ErrorIs(t, err, state.ErrNotFound)
	err = s.RunClose(ctx, state.Run{ID: 987654, Status: state.StatusSucceeded})
	require.ErrorIs(t, err, state.ErrNotFound)
}

func testRunFinishedAt(t *testing.T, s state.Store) {
	ctx := t.Context()
	r, err := s.RunOpen(ctx, "p", state.TriggerResync)
	require.NoError(t, err)
	// A given finish time is kept to the microsecond, whatever its zone.
	finished := time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.FixedZone("X", 3*3600))
	r.Status, r.FinishedAt = state.StatusSucceeded, finished
	require.NoError(t, s.RunClose(ctx, r))
	got, err := s.RunGet(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, finished.Equal(got.FinishedAt), "want %v, got %v", finished, got.FinishedAt)
	require.Equal(t, state.TriggerResync, got.Trigger)
}

// commit applies c or fails the test.
func commit(t *testing.T, s state.Store, c state.Commit) {
	t.Helper()
	require.NoError(t, s.Commit(t.Context(), c))
}

// records lists pipeline's source or fails the test.
func records(t *testing.T, s state.Store, pipeline, source string) map[string]state.Record {
	t.Helper()
	m, err := s.RecordList(t.Context(), pipeline, source)
	require.NoError(t, err)
	return m
}

// chunks lists one record's chunks or fails the test.
func chunks(t *testing.T, s state.Store, pipeline, source, key string) []state.Chunk {
	t.Helper()
	cs, err := s.ChunkGet(t.Context(), pipeline, source, []string{key})
	require.NoError(t, err)
	return cs[key]
}

// chunkCount counts pipeline's chunks or fails the test.
func chunkCount(t *testing.T, s state.Store, pipeline string) int {
	t.Helper()
	n, err := s.ChunkCount(t.Context(), pipeline)
	require.NoError(t, err)
	return n
}

func testRecords(t *testing.T, s state.Store) {
	a := state.Record{Pipeline: "p", Source: "faq", Key: "1", Hash: 11, Fingerprint: 7, Anchor: "faq", Props: []byte(`{"q":"a"}`)}
	b := state.Record{Pipeline: "p", Source: "faq", Key: "2", Hash: 22, Fingerprint: 7, Anchor: "faq", Props: []byte(`{"q":"b"}`)}
	c := state.Record{Pipeline: "p", Source: "faq", Key: "3", Hash: 33, Fingerprint: 7, Anchor: "faq"}
	other := state.Record{Pipeline: "p", Source: "docs", Key: "1", Hash: 44, Fingerprint: 8, Anchor: "document"}

	require.Empty(t, records(t, s, "p", "faq"))
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{a, b, c, other}})
	require.Equal(t, map[string]state.Record{"1": a, "2": b, "3": c}, records(t, s, "p", "faq"))
	require.Equal(t, map[string]state.Record{"1": other}, records(t, s, "p", "docs"))

	// Upsert replaces every field; a record given without Pipeline takes the commit's.
	b2 := state.Record{Source: "faq", Key: "2", Hash: 222, Fingerprint: 9, Anchor: "question", Props: []byte(`{"q":"b2"}`)}
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{b2}, DeleteRecords: []state.RecordRef{{Source: "faq", Key: "3"}}})
	b2.Pipeline = "p"
	require.Equal(t, map[string]state.Record{"1": a, "2": b2}, records(t, s, "p", "faq"))

	// Deleting a record that is not stored is not an error.
	commit(t, s, state.Commit{Pipeline: "p", DeleteRecords: []state.RecordRef{{Source: "faq", Key: "missing"}}})
	require.Len(t, records(t, s, "p", "faq"), 2)
	require.Equal(t, map[string]state.Record{"1": other}, records(t, s, "p", "docs"), "other source untouched")

	// The index has hashes and fingerprints only; RecordGet whole records by key.
	idx := map[string]state.RecordSummary{}
	err := s.RecordIndex(t.Context(), "p", "faq", func(k string, sum state.RecordSummary) { idx[k] = sum })
	require.NoError(t, err)
	require.Equal(t, map[string]state.RecordSummary{"1": {Hash: 11, Fingerprint: 7}, "2": {Hash: 222, Fingerprint: 9}}, idx)
	got, err := s.RecordGet(t.Context(), "p", "faq", []string{"2", "missing", "1"})
	require.NoError(t, err)
	require.Equal(t, map[string]state.Record{"1": a, "2": b2}, got)
	got, err = s.RecordGet(t.Context(), "p", "faq", nil)
	require.NoError(t, err)
	require.Empty(t, got)
	// Many keys at once (beyond one query's parameter batch).
	var many []state.Record
	var keys []string
	for i := range 1200 {
		k := fmt.Sprintf("m%04d", i)
		many = append(many, state.Record{Source: "bulk", Key: k, Hash: uint64(i) | 1<<63, Fingerprint: 1, Anchor: "x"})
		keys = append(keys, k)
	}
	commit(t, s, state.Commit{Pipeline: "p", Records: many})
	got, err = s.RecordGet(t.Context(), "p", "bulk", keys)
	require.NoError(t, err)
	require.Len(t, got, 1200)
	require.Equal(t, uint64(1199)|1<<63, got["m1199"].Hash)
}

func testRecordProps(t *testing.T, s state.Store) {
	// Exact bytes: key order, spacing, escapes and non-ASCII text survive.
	props := []byte(`{"z":1, "a":[true,null,{"k":"Zollsatz für Äpfel – 5 %"}],"e":"\u00e9\n","big":12345678901234567890}`)
	r := state.Record{Pipeline: "p", Source: "s", Key: "k/with spaces/ü", Hash: 1, Fingerprint: 2, Anchor: "cn_code", Props: props}
	empty := state.Record{Pipeline: "p", Source: "s", Key: "empty", Hash: 3, Fingerprint: 4, Anchor: "cn_code"}
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{r, empty}})
	got := records(t, s, "p", "s")
	require.Equal(t, props, got[r.Key].Props)
	require.Nil(t, got["empty"].Props, "absent props read back as nil")
	require.Equal(t, r, got[r.Key])
}

func testHashesHighBit(t *testing.T, s state.Store) {
	// Values that do not fit an int64: the high bit set, and all bits set.
	const high, all = uint64(1)<<63 | 0x0123456789abcdef, uint64(math.MaxUint64)
	r := state.Record{Pipeline: "p", Source: "s", Key: "k", Hash: high, Fingerprint: all, Anchor: "a"}
	ch := state.Chunk{Pipeline: "p", Source: "s", RecordKey: "k", ID: "c0", Hash: all, TextHash: high, Position: 0}
	zero := state.Chunk{Pipeline: "p", Source: "s", RecordKey: "k", ID: "c1", Hash: 0, TextHash: 1 << 63, Position: 1}
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{r},
		ReplaceChunks: map[state.RecordRef][]state.Chunk{{Source: "s", Key: "k"}: {ch, zero}}})
	require.Equal(t, r, records(t, s, "p", "s")["k"])
	require.Equal(t, []state.Chunk{ch, zero}, chunks(t, s, "p", "s", "k"))

	vecs := map[uint64][]float32{high: {1}, all: {2}, 1 << 63: {3}, 0: {4}}
	require.NoError(t, s.EmbeddingsPut(t.Context(), "m", vecs))
	got, err := s.EmbeddingsGet(t.Context(), "m", []uint64{high, all, 1 << 63, 0})
	require.NoError(t, err)
	require.Equal(t, vecs, got)
}

// mkChunks returns n chunks of record s/k with ids prefix0..prefixN-1 at
// positions 0..n-1, hashes derived from seed.
func mkChunks(pipeline, source, key, prefix string, n int, seed uint64) []state.Chunk {
	out := make([]state.Chunk, n)
	for i := range out {
		out[i] = state.Chunk{
			Pipeline: pipeline, Source: source, RecordKey: key,
			ID: fmt.Sprintf("%s%d", prefix, i), Hash: seed*1000 + uint64(i), TextHash: seed*1000 + 500 + uint64(i),
			Position: i, Props: []byte(fmt.Sprintf(`{"text":"chunk %d of %s"}`, i, key)),
		}
	}
	return out
}

func testChunkGet(t *testing.T, s state.Store) {
	a := mkChunks("p", "docs", "a", "a", 3, 1)
	b := mkChunks("p", "docs", "b", "b", 2, 2)
	elsewhere := mkChunks("p", "faq", "a", "x", 1, 3) // same key, other source
	other := mkChunks("q", "docs", "a", "y", 1, 4)    // same source and key, other pipeline
	commit(t, s, state.Commit{Pipeline: "p", ReplaceChunks: map[state.RecordRef][]state.Chunk{
		{Source: "docs", Key: "a"}: {a[2], a[0], a[1]}, // out of order: read back by position
		{Source: "docs", Key: "b"}: b,
		{Source: "faq", Key: "a"}:  elsewhere,
	}})
	commit(t, s, state.Commit{Pipeline: "q", ReplaceChunks: map[state.RecordRef][]state.Chunk{{Source: "docs", Key: "a"}: other}})

	got, err := s.ChunkGet(t.Context(), "p", "docs", []string{"b", "missing", "a"})
	require.NoError(t, err)
	require.Equal(t, map[string][]state.Chunk{"a": a, "b": b}, got)
	got, err = s.ChunkGet(t.Context(), "p", "docs", nil)
	require.NoError(t, err)
	require.Empty(t, got)

	// Many keys at once (beyond one query's parameter batch).
	bulk := map[state.RecordRef][]state.Chunk{}
	var keys []string
	for i := range 1200 {
		k := fmt.Sprintf("m%04d", i)
		bulk[state.RecordRef{Source: "bulk", Key: k}] = mkChunks("p", "bulk", k, k+"-", 1, uint64(i))
		keys = append(keys, k)
	}
	commit(t, s, state.Commit{Pipeline: "p", ReplaceChunks: bulk})
	got, err = s.ChunkGet(t.Context(), "p", "bulk", keys)
	require.NoError(t, err)
	require.Len(t, got, 1200)
	require.Equal(t, bulk[state.RecordRef{Source: "bulk", Key: "m1199"}], got["m1199"])
}

func testChunkReplace(t *testing.T, s state.Store) {
	ref := state.RecordRef{Source: "docs", Key: "reg.md"}
	rec := state.Record{Pipeline: "p", Source: "docs", Key: "reg.md", Hash: 1, Fingerprint: 1, Anchor: "document"}
	three := mkChunks("p", "docs", "reg.md", "c", 3, 1)
	// Given out of order: read back by position.
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{rec},
		ReplaceChunks: map[state.RecordRef][]state.Chunk{ref: {three[2], three[0], three[1]}}})
	require.Equal(t, three, chunks(t, s, "p", "docs", "reg.md"))
	require.Equal(t, 3, chunkCount(t, s, "p"))

	// Shrink: the same id with a new hash replaces the old chunk; the others go.
	one := mkChunks("p", "docs", "reg.md", "c", 1, 2)
	commit(t, s, state.Commit{Pipeline: "p", ReplaceChunks: map[state.RecordRef][]state.Chunk{ref: one}})
	require.Equal(t, one, chunks(t, s, "p", "docs", "reg.md"))
	require.Equal(t, 1, chunkCount(t, s, "p"))

	// Grow, with chunks given without Pipeline/Source/RecordKey (taken from the commit and map key).
	five := mkChunks("", "", "", "d", 5, 3)
	commit(t, s, state.Commit{Pipeline: "p", ReplaceChunks: map[state.RecordRef][]state.Chunk{ref: five}})
	want := mkChunks("p", "docs", "reg.md", "d", 5, 3)
	for i := range want { // mkChunks' props name the key it was given
		want[i].Props = five[i].Props
	}
	require.Equal(t, want, chunks(t, s, "p", "docs", "reg.md"))
	require.Equal(t, 5, chunkCount(t, s, "p"))

	// A chunk list not named in the commit is left alone.
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{rec}})
	require.Len(t, chunks(t, s, "p", "docs", "reg.md"), 5)

	// An empty list removes all; the record stays.
	commit(t, s, state.Commit{Pipeline: "p", ReplaceChunks: map[state.RecordRef][]state.Chunk{ref: nil}})
	require.Empty(t, chunks(t, s, "p", "docs", "reg.md"))
	require.Equal(t, 0, chunkCount(t, s, "p"))
	require.Contains(t, records(t, s, "p", "docs"), "reg.md")
}

func testDeleteRecordRemovesChunks(t *testing.T, s state.Store) {
	a, b := state.RecordRef{Source: "docs", Key: "a"}, state.RecordRef{Source: "docs", Key: "b"}
	commit(t, s, state.Commit{Pipeline: "p",
		Records: []state.Record{{Source: "docs", Key: "a", Hash: 1}, {Source: "docs", Key: "b", Hash: 2}},
		ReplaceChunks: map[state.RecordRef][]state.Chunk{
			a: mkChunks("p", "docs", "a", "c", 4, 1),
			b: mkChunks("p", "docs", "b", "c", 2, 2),
		}})
	require.Equal(t, 6, chunkCount(t, s, "p"))
	commit(t, s, state.Commit{Pipeline: "p", DeleteRecords: []state.RecordRef{a}})
	require.Empty(t, chunks(t, s, "p", "docs", "a"))
	require.Equal(t, mkChunks("p", "docs", "b", "c", 2, 2), chunks(t, s, "p", "docs", "b"))
	require.Equal(t, 2, chunkCount(t, s, "p"))
	require.Equal(t, []string{"b"}, keys(records(t, s, "p", "docs")))
}

func testDeleteWins(t *testing.T, s state.Store) {
	ref := state.RecordRef{Source: "s", Key: "k"}
	commit(t, s, state.Commit{Pipeline: "p",
		Records:       []state.Record{{Source: "s", Key: "k", Hash: 1}},
		ReplaceChunks: map[state.RecordRef][]state.Chunk{ref: mkChunks("p", "s", "k", "c", 2, 1)},
		DeleteRecords: []state.RecordRef{ref},
	})
	require.Empty(t, records(t, s, "p", "s"))
	require.Equal(t, 0, chunkCount(t, s, "p"))
}

func testCommitRejected(t *testing.T, s state.Store) {
	ctx := t.Context()
	ref := state.RecordRef{Source: "s", Key: "k"}
	dupChunk := state.Commit{Pipeline: "p",
		Records:       []state.Record{{Source: "s", Key: "k", Hash: 1}},
		ReplaceChunks: map[state.RecordRef][]state.Chunk{ref: {{ID: "c"}, {ID: "c", Position: 1}}},
		Cursors:       map[string]string{"s": "page-2"},
	}
	for name, c := range map[string]state.Commit{
		"duplicate chunk id": dupChunk,
		"empty pipeline":     {Records: []state.Record{{Source: "s", Key: "k"}}},
		"duplicate record":   {Pipeline: "p", Records: []state.Record{{Source: "s", Key: "k"}, {Source: "s", Key: "k"}}},
		"foreign record":     {Pipeline: "p", Records: []state.Record{{Pipeline: "q", Source: "s", Key: "k"}}},
		"foreign chunk":      {Pipeline: "p", ReplaceChunks: map[state.RecordRef][]state.Chunk{ref: {{RecordKey: "other", ID: "c"}}}},
		"empty key":          {Pipeline: "p", Records: []state.Record{{Source: "s"}}},
	} {
		require.Error(t, s.Commit(ctx, c), name)
	}
	require.Empty(t, records(t, s, "p", "s"))
	require.Equal(t, 0, chunkCount(t, s, "p"))
	cur, err := s.CursorGet(ctx, "p", "s")
	require.NoError(t, err)
	require.Empty(t, cur)
}

func testCursors(t *testing.T, s state.Store) {
	ctx := t.Context()
	cur, err := s.CursorGet(ctx, "p", "grist")
	require.NoError(t, err)
	require.Empty(t, cur, "no cursor stored yet")

	commit(t, s, state.Commit{Pipeline: "p", Cursors: map[string]string{"grist": "rev-1"}})
	commit(t, s, state.Commit{Pipeline: "p", Cursors: map[string]string{"grist": "rev-2", "api": `{"page":3}`}})
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{{Source: "api", Key: "1"}}}) // no cursors: unchanged
	for src, want := range map[string]string{"grist": "rev-2", "api": `{"page":3}`, "files": ""} {
		got, err := s.CursorGet(ctx, "p", src)
		require.NoError(t, err)
		require.Equal(t, want, got, src)
	}
	other, err := s.CursorGet(ctx, "other", "grist")
	require.NoError(t, err)
	require.Empty(t, other, "cursors belong to their pipeline")
}

// bits returns the IEEE-754 bit patterns of v, so NaNs compare too.
func bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}

func testEmbeddings(t *testing.T, s state.Store) {
	ctx := t.Context()
	// Values a decimal or float64 detour would change.
	special := []float32{
		float32(0.1), float32(1) / 3, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, math.Float32frombits(0x7fc00001), // a NaN with payload
		math.Float32frombits(0x00000001), 16777217, // 2^24+1 rounds to 2^24 in float32
	}
	rng := rand.New(rand.NewPCG(1, 2))
	wide := make([]float32, 1536)
	for i := range wide {
		wide[i] = float32(rng.NormFloat64())
	}
	require.NoError(t, s.EmbeddingsPut(ctx, "m1", map[uint64][]float32{1: special, 2: wide}))

	got, err := s.EmbeddingsGet(ctx, "m1", []uint64{1, 2, 3, 1})
	require.NoError(t, err)
	require.Len(t, got, 2, "missing hash 3 is absent, duplicate 1 counted once")
	require.Equal(t, bits(special), bits(got[1]))
	require.Equal(t, bits(wide), bits(got[2]))
	_, ok := got[3]
	require.False(t, ok)

	// Putting the same again is fine and changes nothing.
	require.NoError(t, s.EmbeddingsPut(ctx, "m1", map[uint64][]float32{1: special}))
	got, err = s.EmbeddingsGet(ctx, "m1", []uint64{1})
	require.NoError(t, err)
	require.Equal(t, bits(special), bits(got[1]))

	// Models do not share vectors.
	got, err = s.EmbeddingsGet(ctx, "m2", []uint64{1, 2})
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, s.EmbeddingsPut(ctx, "m2", map[uint64][]float32{1: {9, 8}}))
	got, err = s.EmbeddingsGet(ctx, "m1", []uint64{1})
	require.NoError(t, err)
	require.Equal(t, bits(special), bits(got[1]), "m2's put leaves m1 alone")
	got, err = s.EmbeddingsGet(ctx, "m2", []uint64{1})
	require.NoError(t, err)
	require.Equal(t, map[uint64][]float32{1: {9, 8}}, got)

	// A new vector for a cached key replaces it (resync --reembed refreshes the cache).
	require.NoError(t, s.EmbeddingsPut(ctx, "m2", map[uint64][]float32{1: {7}}))
	got, err = s.EmbeddingsGet(ctx, "m2", []uint64{1})
	require.NoError(t, err)
	require.Equal(t, map[uint64][]float32{1: {7}}, got)

	// Empty input: empty result, no error.
	got, err = s.EmbeddingsGet(ctx, "m1", nil)
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, s.EmbeddingsPut(ctx, "m1", nil))
}

func testEmbeddingsMany(t *testing.T, s state.Store) {
	ctx := t.Context()
	// 2,500 keys cross the backends' 1,000-per-query batches; every third is stored.
	vecs := map[uint64][]float32{}
	var ask []uint64
	for i := range uint64(2500) {
		h := i*0x9e3779b97f4a7c15 + 1 // spread over the whole uint64 range, high bit included
		ask = append(ask, h)
		if i%3 == 0 {
			vecs[h] = []float32{float32(i), -float32(i)}
		}
	}
	require.NoError(t, s.EmbeddingsPut(ctx, "m", vecs))
	got, err := s.EmbeddingsGet(ctx, "m", ask)
	require.NoError(t, err)
	require.Len(t, got, 834) // ceil(2500/3)
	require.Equal(t, vecs, got)

	// A second put of 1,300 vectors (more than the backends' multi-row
	// statements take at once) mixing vectors equal to the cached ones,
	// vectors differing from them and new ones: each differing one is
	// replaced, the others stay or are added.
	again := map[uint64][]float32{}
	want := maps.Clone(vecs)
	n := 0
	for h, v := range vecs {
		switch n % 3 {
		case 0:
			again[h] = slices.Clone(v)
		case 1:
			again[h] = []float32{v[0], v[1], 0.5}
			want[h] = again[h]
		}
		n++
	}
	for i := range uint64(1300 - len(again)) {
		h := i*0x9e3779b97f4a7c15 + 2 // not among the hashes above (checked)
		_, cached := vecs[h]
		require.False(t, cached)
		again[h] = []float32{float32(i)}
		want[h] = again[h]
		ask = append(ask, h)
	}
	require.NoError(t, s.EmbeddingsPut(ctx, "m", again))
	got, err = s.EmbeddingsGet(ctx, "m", ask)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func testLock(t *testing.T, s state.Store) {
	ctx := t.Context()
	unlock, err := s.Lock(ctx, "p")
	require.NoError(t, err)
	_, err = s.Lock(ctx, "p")
	require.ErrorIs(t, err, state.ErrLocked, "a second Lock of a held pipeline fails at once")

	unlockQ, err := s.Lock(ctx, "q")
	require.NoError(t, err, "other pipelines have their own lock")

	require.NoError(t, unlock())
	require.NoError(t, unlock(), "unlock twice is harmless")
	unlock2, err := s.Lock(ctx, "p")
	require.NoError(t, err, "free again after unlock")
	_, err = s.Lock(ctx, "q")
	require.ErrorIs(t, err, state.ErrLocked, "q still held")
	require.NoError(t, unlock2())
	require.NoError(t, unlockQ())

	// Names that are awkward in files and hash keys.
	for _, name := range []string{"a/b", "..", "Zölle & Tarife", "x.lock"} {
		u, err := s.Lock(ctx, name)
		require.NoError(t, err, name)
		_, err = s.Lock(ctx, name)
		require.ErrorIs(t, err, state.ErrLocked, name)
		require.NoError(t, u(), name)
	}
}

func testPipelinesIsolated(t *testing.T, s state.Store) {
	ctx := t.Context()
	ref := state.RecordRef{Source: "s", Key: "k"}
	for i, p := range []string{"a", "b"} {
		commit(t, s, state.Commit{Pipeline: p,
			Records:       []state.Record{{Source: "s", Key: "k", Hash: uint64(i + 1)}},
			ReplaceChunks: map[state.RecordRef][]state.Chunk{ref: mkChunks(p, "s", "k", p, i+2, uint64(i+1))},
			Cursors:       map[string]string{"s": "cursor-" + p},
		})
	}
	require.Equal(t, uint64(1), records(t, s, "a", "s")["k"].Hash)
	require.Equal(t, uint64(2), records(t, s, "b", "s")["k"].Hash)
	require.Equal(t, 2, chunkCount(t, s, "a"))
	require.Equal(t, 3, chunkCount(t, s, "b"))

	commit(t, s, state.Commit{Pipeline: "a", DeleteRecords: []state.RecordRef{ref}})
	require.Empty(t, records(t, s, "a", "s"))
	require.Equal(t, 0, chunkCount(t, s, "a"))
	require.Equal(t, mkChunks("b", "s", "k", "b", 3, 2), chunks(t, s, "b", "s", "k"), "b keeps its chunks")
	require.Equal(t, uint64(2), records(t, s, "b", "s")["k"].Hash)
	cur, err := s.CursorGet(ctx, "b", "s")
	require.NoError(t, err)
	require.Equal(t, "cursor-b", cur)

	unlock, err := s.Lock(ctx, "a")
	require.NoError(t, err)
	defer func() { require.NoError(t, unlock()) }()
	unlockB, err := s.Lock(ctx, "b")
	require.NoError(t, err, "locks are per pipeline")
	require.NoError(t, unlockB())
}

func testMigrateTwice(t *testing.T, s state.Store) {
	ctx := t.Context()
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{{Source: "s", Key: "k", Hash: 5}}})
	run, err := s.RunOpen(ctx, "p", state.TriggerManual)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	require.NoError(t, s.Migrate(ctx))
	require.Equal(t, uint64(5), records(t, s, "p", "s")["k"].Hash, "migrating again keeps the data")
	_, err = s.RunGet(ctx, run.ID)
	require.NoError(t, err)
}

func testConcurrentCommits(t *testing.T, s state.Store) {
	const workers, perWorker = 8, 20
	shared := state.RecordRef{Source: "s", Key: "shared"}
	start := make(chan struct{})
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range perWorker {
				key := fmt.Sprintf("w%d-r%d", w, i)
				ref := state.RecordRef{Source: "s", Key: key}
				// Every commit also replaces the shared record's chunk list with
				// this worker's (w+1 chunks with worker-specific ids), without
				// upserting that record: nothing but the store orders these.
				c := state.Commit{Pipeline: "p",
					Records: []state.Record{{Source: "s", Key: key, Hash: uint64(w*1000 + i)}},
					ReplaceChunks: map[state.RecordRef][]state.Chunk{
						ref:    mkChunks("p", "s", key, "c", 2, uint64(i)),
						shared: mkChunks("p", "s", "shared", fmt.Sprintf("w%d-", w), w+1, uint64(w)),
					},
					Cursors: map[string]string{"s": key},
				}
				if err := s.Commit(context.WithoutCancel(t.Context()), c); err != nil {
					errs <- fmt.Errorf("worker %d commit %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	recs := records(t, s, "p", "s")
	require.Len(t, recs, workers*perWorker)
	for w := range workers {
		for i := range perWorker {
			key := fmt.Sprintf("w%d-r%d", w, i)
			require.Equal(t, uint64(w*1000+i), recs[key].Hash, key)
			require.Equal(t, mkChunks("p", "s", key, "c", 2, uint64(i)), chunks(t, s, "p", "s", key), key)
		}
	}
	// The shared record's chunks are exactly one worker's list, never a mix.
	got := chunks(t, s, "p", "s", "shared")
	require.NotEmpty(t, got)
	var w int
	_, err := fmt.Sscanf(got[0].ID, "w%d-", &w)
	require.NoError(t, err, got[0].ID)
	require.Equal(t, mkChunks("p", "s", "shared", fmt.Sprintf("w%d-", w), w+1, uint64(w)), chunks(t, s, "p", "s", "shared"))
	require.Equal(t, workers*perWorker*2+w+1, chunkCount(t, s, "p"))
}

// keys returns m's keys sorted.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// generations returns s as a state.JobGenerations; every backend implements it.
func generations(t *testing.T, s state.Store) state.JobGenerations {
	t.Helper()
	g, ok := s.(state.JobGenerations)
	require.True(t, ok, "%T does not implement state.JobGenerations", s)
	return g
}

func testJobGenerations(t *testing.T, s state.Store) {
	ctx := t.Context()
	g := generations(t, s)
	got, err := g.Generation(ctx, "a")
	require.NoError(t, err)
	require.Zero(t, got, "a pipeline starts at generation 0")

	ok, err := g.AdvanceGeneration(ctx, "a", 1)
	require.NoError(t, err)
	require.False(t, ok, "a is at 0, not 1")
	ok, err = g.AdvanceGeneration(ctx, "a", 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = g.AdvanceGeneration(ctx, "a", 0)
	require.NoError(t, err)
	require.False(t, ok, "a moved on to 1")
	ok, err = g.AdvanceGeneration(ctx, "a", 1)
	require.NoError(t, err)
	require.True(t, ok)
	got, err = g.Generation(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, int64(2), got)
	got, err = g.Generation(ctx, "b")
	require.NoError(t, err)
	require.Zero(t, got, "pipelines are counted apart")
	_, err = g.AdvanceGeneration(ctx, "", 0)
	require.Error(t, err)
}

// testAdvanceGenerationConcurrent races callers advancing from the same
// generation: exactly one wins each round, as two replicas' jobs taking
// turns at the pipeline lock rely on.
func testAdvanceGenerationConcurrent(t *testing.T, s state.Store) {
	ctx := t.Context()
	g := generations(t, s)
	for round := range int64(5) {
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := g.AdvanceGeneration(ctx, "p", round)
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load(), "round %d", round)
	}
	got, err := g.Generation(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, int64(5), got)
}

func lexRow(source, key, id, kind, text string) state.LexicalRow {
	return state.LexicalRow{LexicalRef: state.LexicalRef{Source: source, RecordKey: key, ID: id}, Kind: kind, Text: text}
}

// lexicalTF is a search's matches as "id:term=tf…" strings, sorted.
func lexicalTF(t *testing.T, s state.Store, pipeline, kind string, terms ...string) (state.LexicalStats, []string) {
	t.Helper()
	st, ms, err := s.LexicalSearch(t.Context(), pipeline, kind, terms)
	require.NoError(t, err)
	var out []string
	for _, m := range ms {
		row := fmt.Sprintf("%s/%s/%s len=%d", m.Source, m.RecordKey, m.ID, m.Len)
		for _, term := range slices.Sorted(maps.Keys(m.TF)) {
			row += fmt.Sprintf(" %s=%d", term, m.TF[term])
		}
		out = append(out, row)
	}
	slices.Sort(out)
	return st, out
}

func testLexicalIndex(t *testing.T, s state.Store) {
	ctx := t.Context()
	commit(t, s, state.Commit{Pipeline: "p1",
		Records: []state.Record{{Source: "docs", Key: "a.txt", Hash: 1}, {Source: "docs", Key: "b.txt", Hash: 2}},
		LexicalUpserts: []state.LexicalRow{
			lexRow("docs", "a.txt", "a#0", state.LexicalChunk, "proxi forward header proxi"),
			lexRow("docs", "a.txt", "a#1", state.LexicalChunk, "президент избира срок шест лет"),
			lexRow("docs", "a.txt", "a › p1", state.LexicalElement, "proxi header"),
			lexRow("docs", "b.txt", "b#0", state.LexicalChunk, "header field 7231"),
		}})
	// Another pipeline's rows never count.
	commit(t, s, state.Commit{Pipeline: "p2", Records: []state.Record{{Source: "docs", Key: "a.txt", Hash: 1}}, LexicalUpserts: []state.LexicalRow{
		lexRow("docs", "a.txt", "a#0", state.LexicalChunk, "proxi proxi proxi"),
	}})

	st, got := lexicalTF(t, s, "p1", state.LexicalChunk, "proxi", "header", "absent", "президент")
	require.Equal(t, 3, st.Rows)
	require.Equal(t, int64(4+5+3), st.TotalLen)
	require.Equal(t, map[string]int{"proxi": 1, "header": 2, "президент": 1}, st.DF)
	require.Equal(t, []string{
		"docs/a.txt/a#0 len=4 header=1 proxi=2",
		"docs/a.txt/a#1 len=5 президент=1",
		"docs/b.txt/b#0 len=3 header=1",
	}, got)
	_, got = lexicalTF(t, s, "p1", state.LexicalElement, "proxi")
	require.Equal(t, []string{"docs/a.txt/a › p1 len=2 proxi=1"}, got, "kinds are counted apart")
	_, got = lexicalTF(t, s, "p1", state.LexicalChunk, "7231")
	require.Equal(t, []string{"docs/b.txt/b#0 len=3 7231=1"}, got)

	// An edit replaces one row; a deleted chunk's row goes; nothing else moves.
	commit(t, s, state.Commit{Pipeline: "p1",
		LexicalDeletes: []state.LexicalRef{{Source: "docs", RecordKey: "a.txt", ID: "a#1"}, {Source: "docs", RecordKey: "a.txt", ID: "never"}},
		LexicalUpserts: []state.LexicalRow{lexRow("docs", "a.txt", "a#0", state.LexicalChunk, "proxi add forward")},
	})
	st, got = lexicalTF(t, s, "p1", state.LexicalChunk, "proxi", "header", "президент")
	require.Equal(t, 2, st.Rows)
	require.Equal(t, int64(3+3), st.TotalLen)
	require.Equal(t, []string{"docs/a.txt/a#0 len=3 proxi=1", "docs/b.txt/b#0 len=3 header=1"}, got)
	n, err := s.LexicalCount(ctx, "p1", "")
	require.NoError(t, err)
	require.Equal(t, 3, n)

	// A deleted record takes all its rows.
	commit(t, s, state.Commit{Pipeline: "p1", DeleteRecords: []state.RecordRef{{Source: "docs", Key: "a.txt"}}})
	_, got = lexicalTF(t, s, "p1", state.LexicalChunk, "proxi", "header")
	require.Equal(t, []string{"docs/b.txt/b#0 len=3 header=1"}, got)
	n, err = s.LexicalCount(ctx, "p1", state.LexicalElement)
	require.NoError(t, err)
	require.Zero(t, n)
	_, got = lexicalTF(t, s, "p2", state.LexicalChunk, "proxi")
	require.Equal(t, []string{"docs/a.txt/a#0 len=3 proxi=3"}, got)
}

// testLexicalNewAndStoredRows: rows of records stored by the same commit
// (more than one multi-row statement's worth), of a record deleted and
// stored again (SQLite may give it its old id) and of stored records,
// new and replaced, in one commit; a record stored and deleted by one
// commit keeps no rows.
func testLexicalNewAndStoredRows(t *testing.T, s state.Store) {
	ctx := t.Context()
	const n = 600
	first := state.Commit{Pipeline: "p"}
	for i := range n {
		key := fmt.Sprintf("r%03d", i)
		first.Records = append(first.Records, state.Record{Source: "t", Key: key, Hash: uint64(i + 1)})
		first.LexicalUpserts = append(first.LexicalUpserts, lexRow("t", key, key, state.LexicalNode, fmt.Sprintf("alpha w%d", i)))
	}
	first.Records = append(first.Records, state.Record{Source: "t", Key: "last", Hash: 1})
	first.LexicalUpserts = append(first.LexicalUpserts, lexRow("t", "last", "last", state.LexicalNode, "zeta"))
	commit(t, s, first)
	st, got := lexicalTF(t, s, "p", state.LexicalNode, "alpha", "w599", "zeta")
	require.Equal(t, n+1, st.Rows)
	require.Equal(t, map[string]int{"alpha": n, "w599": 1, "zeta": 1}, st.DF)
	require.Contains(t, got, "t/r599/r599 len=2 alpha=1 w599=1")

	// The record stored last goes; stored again, with new text, beside a
	// new record, a replaced row and a new row of stored records.
	commit(t, s, state.Commit{Pipeline: "p", DeleteRecords: []state.RecordRef{{Source: "t", Key: "last"}}})
	commit(t, s, state.Commit{Pipeline: "p",
		Records: []state.Record{{Source: "t", Key: "last", Hash: 2}, {Source: "t", Key: "new", Hash: 3}},
		LexicalUpserts: []state.LexicalRow{
			lexRow("t", "last", "last", state.LexicalNode, "omega"),
			lexRow("t", "new", "new", state.LexicalNode, "omega omega"),
			lexRow("t", "r000", "r000", state.LexicalNode, "beta"),
			lexRow("t", "r001", "r001 › extra", state.LexicalNode, "beta gamma"),
		}})
	st, got = lexicalTF(t, s, "p", state.LexicalNode, "zeta", "omega", "beta", "alpha")
	require.Equal(t, n+3, st.Rows)
	require.Equal(t, map[string]int{"omega": 2, "beta": 2, "alpha": n - 1}, st.DF)
	for _, want := range []string{"t/last/last len=1 omega=1", "t/new/new len=2 omega=2", "t/r000/r000 len=1 beta=1",
		"t/r001/r001 › extra len=2 beta=1", "t/r001/r001 len=2 alpha=1"} {
		require.Contains(t, got, want)
	}

	// Stored and deleted by one commit: the delete wins, rows included;
	// then stored again by the next.
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{{Source: "t", Key: "both", Hash: 4}},
		LexicalUpserts: []state.LexicalRow{lexRow("t", "both", "both", state.LexicalNode, "delta")},
		DeleteRecords:  []state.RecordRef{{Source: "t", Key: "both"}}})
	st, _ = lexicalTF(t, s, "p", state.LexicalNode, "delta")
	require.Equal(t, n+3, st.Rows)
	require.Empty(t, st.DF)
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{{Source: "t", Key: "both", Hash: 5}},
		LexicalUpserts: []state.LexicalRow{lexRow("t", "both", "both", state.LexicalNode, "epsilon")}})
	_, got = lexicalTF(t, s, "p", state.LexicalNode, "delta", "epsilon")
	require.Equal(t, []string{"t/both/both len=1 epsilon=1"}, got)
	count, err := s.LexicalCount(ctx, "p", "")
	require.NoError(t, err)
	require.Equal(t, n+4, count)
}

// testLexicalStats: after each of 60 random commits of two pipelines
// (records stored, stored again and deleted, in one commit too; lexical
// rows new, replaced with another kind or length, deleted, listed for a
// deletion that finds nothing), a search's row count and total length and
// LexicalCount of every kind are those of the rows the commits left,
// counted here.
func testLexicalStats(t *testing.T, s state.Store) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(7, 15))
	kinds := []string{state.LexicalChunk, state.LexicalElement, state.LexicalNode}
	type row struct {
		kind string
		len  int
	}
	pipelines := []string{"p1", "p2"}
	stored := map[string]map[state.RecordRef]bool{"p1": {}, "p2": {}}
	rows := map[string]map[state.LexicalRef]row{"p1": {}, "p2": {}}
	text := func() string {
		words := make([]string, 1+rng.IntN(6))
		for i := range words {
			words[i] = fmt.Sprintf("w%d", rng.IntN(20))
		}
		return strings.Join(words, " ")
	}
	for round := range 60 {
		p := pipelines[rng.IntN(2)]
		c := state.Commit{Pipeline: p}
		inCommit := map[state.RecordRef]bool{}
		for range rng.IntN(8) {
			ref := state.RecordRef{Source: fmt.Sprintf("s%d", rng.IntN(2)), Key: fmt.Sprintf("k%02d", rng.IntN(30))}
			if !inCommit[ref] {
				inCommit[ref] = true
				c.Records = append(c.Records, state.Record{Source: ref.Source, Key: ref.Key, Hash: uint64(round + 1)})
			}
		}
		var deletes []state.RecordRef
		for ref := range inCommit {
			if rng.IntN(6) == 0 {
				deletes = append(deletes, ref)
			}
		}
		for ref := range stored[p] {
			if rng.IntN(10) == 0 {
				deletes = append(deletes, ref)
			}
		}
		c.DeleteRecords = deletes
		holders := slices.Collect(maps.Keys(stored[p]))
		for ref := range inCommit {
			if !stored[p][ref] {
				holders = append(holders, ref)
			}
		}
		slices.SortFunc(holders, func(a, b state.RecordRef) int { return strings.Compare(a.Source+a.Key, b.Source+b.Key) })
		upserted := map[state.LexicalRef]bool{}
		for range rng.IntN(12) {
			if len(holders) == 0 {
				break
			}
			rec := holders[rng.IntN(len(holders))]
			ref := state.LexicalRef{Source: rec.Source, RecordKey: rec.Key, ID: fmt.Sprintf("n%d", rng.IntN(4))}
			if upserted[ref] {
				continue
			}
			upserted[ref] = true
			c.LexicalUpserts = append(c.LexicalUpserts, state.LexicalRow{LexicalRef: ref, Kind: kinds[rng.IntN(3)], Text: text()})
		}
		for ref := range rows[p] {
			if rng.IntN(8) == 0 {
				c.LexicalDeletes = append(c.LexicalDeletes, ref)
			}
		}
		c.LexicalDeletes = append(c.LexicalDeletes, state.LexicalRef{Source: "s0", RecordKey: "k00", ID: "never"})
		commit(t, s, c)

		// What the commit leaves: deletes, then upserts, then the
		// record deletes with all their rows.
		for _, ref := range c.LexicalDeletes {
			delete(rows[p], ref)
		}
		for _, r := range c.LexicalUpserts {
			rows[p][r.LexicalRef] = row{r.Kind, len(strings.Fields(r.Text))}
		}
		for ref := range inCommit {
			stored[p][ref] = true
		}
		for _, ref := range deletes {
			delete(stored[p], ref)
			for lr := range rows[p] {
				if lr.Source == ref.Source && lr.RecordKey == ref.Key {
					delete(rows[p], lr)
				}
			}
		}
		for _, p := range pipelines {
			all := 0
			for _, kind := range kinds {
				var want state.LexicalStats
				for _, r := range rows[p] {
					if r.kind == kind {
						want.Rows++
						want.TotalLen += int64(r.len)
					}
				}
				st, _, err := s.LexicalSearch(ctx, p, kind, nil)
				require.NoError(t, err)
				require.Equal(t, want.Rows, st.Rows, "round %d: %s %s rows", round, p, kind)
				require.Equal(t, want.TotalLen, st.TotalLen, "round %d: %s %s total length", round, p, kind)
				n, err := s.LexicalCount(ctx, p, kind)
				require.NoError(t, err)
				require.Equal(t, want.Rows, n, "round %d: %s %s count", round, p, kind)
				all += n
			}
			n, err := s.LexicalCount(ctx, p, "")
			require.NoError(t, err)
			require.Equal(t, all, n, "round %d: %s count of all kinds", round, p)
		}
	}
	require.NotEmpty(t, rows["p1"])
}

func testLexicalCommitRejected(t *testing.T, s state.Store) {
	row := lexRow("docs", "a.txt", "a#0", state.LexicalChunk, "x")
	for _, c := range []state.Commit{
		{Pipeline: "p", LexicalUpserts: []state.LexicalRow{row, row}},
		{Pipeline: "p", LexicalUpserts: []state.LexicalRow{lexRow("docs", "a.txt", "a#0", "", "x")}},
		{Pipeline: "p", LexicalDeletes: []state.LexicalRef{{Source: "docs", ID: "a#0"}}},
	} {
		require.Error(t, s.Commit(t.Context(), c))
	}
	// A row of a record state does not hold is refused, and the commit
	// writes nothing; another pipeline's record of that key does not count.
	commit(t, s, state.Commit{Pipeline: "q", Records: []state.Record{{Source: "docs", Key: "a.txt", Hash: 1}}})
	err := s.Commit(t.Context(), state.Commit{Pipeline: "p",
		Records:        []state.Record{{Source: "docs", Key: "b.txt", Hash: 2}},
		LexicalUpserts: []state.LexicalRow{lexRow("docs", "b.txt", "b#0", state.LexicalChunk, "y"), row}})
	require.ErrorContains(t, err, "docs/a.txt")
	recs, err := s.RecordGet(t.Context(), "p", "docs", []string{"b.txt"})
	require.NoError(t, err)
	require.Empty(t, recs, "a refused commit writes nothing")
	// A row of a record the same commit deletes goes with it.
	commit(t, s, state.Commit{Pipeline: "p", LexicalUpserts: []state.LexicalRow{row},
		DeleteRecords: []state.RecordRef{{Source: "docs", Key: "a.txt"}}})
	n, err := s.LexicalCount(t.Context(), "p", "")
	require.NoError(t, err)
	require.Zero(t, n)
}

// testOrigins: a record's origin round-trips through Commit, RecordGet,
// RecordList and RecordIndex; RecordOriginsOf finds a scope's records by
// origin id, and forgets deleted ones; MaxRecordOrigin is the largest
// origin id of a source's scope; SetOrigins sets the origin of a stored
// record only.
func testOrigins(t *testing.T, s state.Store) {
	ctx := t.Context()
	oi, ok := s.(state.OriginIndex)
	require.True(t, ok, "%T implements state.OriginIndex", s)
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{
		{Source: "g", Key: "HSCodes:0101", Hash: 1, Origin: state.Origin{Scope: "2", ID: 5}},
		{Source: "g", Key: "HSCodes:0102", Hash: 2, Origin: state.Origin{Scope: "2", ID: 6}},
		{Source: "g", Key: "FAQ:1", Hash: 3, Origin: state.Origin{Scope: "5", ID: 1}},
		{Source: "g", Key: "plain", Hash: 4},
		{Source: "other", Key: "HSCodes:0101", Hash: 5, Origin: state.Origin{Scope: "2", ID: 5}},
	}})
	got, err := oi.RecordOriginsOf(ctx, "p", "g", "2", []int64{5, 6, 7, 8})
	require.NoError(t, err)
	require.Equal(t, map[int64]string{5: "HSCodes:0101", 6: "HSCodes:0102"}, got)
	none, err := oi.RecordOriginsOf(ctx, "p", "g", "", []int64{5, 6})
	require.NoError(t, err)
	require.Empty(t, none, "scope \"\" is no origin")
	top := func(pipeline, source, scope string) int64 {
		t.Helper()
		n, err := oi.MaxRecordOrigin(ctx, pipeline, source, scope)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, int64(6), top("p", "g", "2"))
	require.Equal(t, int64(1), top("p", "g", "5"))
	require.Equal(t, int64(5), top("p", "other", "2"), "this source's records only")
	require.Zero(t, top("p", "g", "9"), "a scope without records")
	require.Zero(t, top("q", "g", "2"), "another pipeline")
	require.Zero(t, top("p", "g", ""), "scope \"\" is no origin")
	recs, err := s.RecordGet(ctx, "p", "g", []string{"HSCodes:0101", "plain"})
	require.NoError(t, err)
	require.Equal(t, state.Origin{Scope: "2", ID: 5}, recs["HSCodes:0101"].Origin)
	require.Equal(t, state.Origin{}, recs["plain"].Origin)
	require.Equal(t, state.Origin{Scope: "5", ID: 1}, records(t, s, "p", "g")["FAQ:1"].Origin)
	idx := map[string]state.RecordSummary{}
	require.NoError(t, s.RecordIndex(ctx, "p", "g", func(k string, sum state.RecordSummary) { idx[k] = sum }))
	require.Equal(t, state.Origin{Scope: "2", ID: 6}, idx["HSCodes:0102"].Origin)

	commit(t, s, state.Commit{Pipeline: "p",
		DeleteRecords: []state.RecordRef{{Source: "g", Key: "HSCodes:0102"}},
		SetOrigins: map[state.RecordRef]state.Origin{
			{Source: "g", Key: "plain"}:   {Scope: "2", ID: 7},
			{Source: "g", Key: "missing"}: {Scope: "2", ID: 8},
		}})
	got, err = oi.RecordOriginsOf(ctx, "p", "g", "2", []int64{5, 6, 7, 8})
	require.NoError(t, err)
	require.Equal(t, map[int64]string{5: "HSCodes:0101", 7: "plain"}, got)
	require.Equal(t, int64(7), top("p", "g", "2"), "a deleted record's origin goes, a set one counts")
	plain := records(t, s, "p", "g")["plain"]
	require.Equal(t, uint64(4), plain.Hash, "SetOrigins leaves the rest of the record")
	_, ok = records(t, s, "p", "g")["missing"]
	require.False(t, ok, "SetOrigins creates no record")
	commit(t, s, state.Commit{Pipeline: "p", DeleteRecords: []state.RecordRef{{Source: "g", Key: "plain"}}})
	require.Equal(t, int64(5), top("p", "g", "2"), "the largest gone, the next is the largest")
}

// testOriginsOf: RecordOriginsOf answers for the asked origin ids of one
// scope only, across more ids than one statement lists, and forgets
// deleted records and moved origins.
func testOriginsOf(t *testing.T, s state.Store) {
	ctx := t.Context()
	oi, ok := s.(state.OriginIndex)
	require.True(t, ok, "%T implements state.OriginIndex", s)
	var recs []state.Record
	for id := int64(1); id <= 1200; id++ {
		recs = append(recs, state.Record{Source: "g", Key: fmt.Sprintf("T:%04d", id), Hash: uint64(id), Origin: state.Origin{Scope: "2", ID: id}})
	}
	recs = append(recs,
		state.Record{Source: "g", Key: "U:7", Hash: 1, Origin: state.Origin{Scope: "3", ID: 7}},
		state.Record{Source: "g", Key: "plain", Hash: 1},
		state.Record{Source: "other", Key: "T:0008", Hash: 1, Origin: state.Origin{Scope: "2", ID: 8}},
		state.Record{Source: "g", Key: "noscope", Hash: 1, Origin: state.Origin{ID: 9}})
	commit(t, s, state.Commit{Pipeline: "p", Records: recs})
	commit(t, s, state.Commit{Pipeline: "q", Records: []state.Record{{Source: "g", Key: "Q:7", Hash: 1, Origin: state.Origin{Scope: "2", ID: 7}}}})

	got, err := oi.RecordOriginsOf(ctx, "p", "g", "2", []int64{7, 8, 1201, 0, -3})
	require.NoError(t, err)
	require.Equal(t, map[int64]string{7: "T:0007", 8: "T:0008"}, got, "this pipeline's source and scope only; ids not stored are absent")
	none, err := oi.RecordOriginsOf(ctx, "p", "g", "", []int64{9})
	require.NoError(t, err)
	require.Empty(t, none, "scope \"\" is no origin")
	empty, err := oi.RecordOriginsOf(ctx, "p", "g", "2", nil)
	require.NoError(t, err)
	require.Empty(t, empty)

	// More ids than one statement takes: every one answered.
	var ids []int64
	for id := int64(1200); id >= 1; id-- {
		ids = append(ids, id)
	}
	all, err := oi.RecordOriginsOf(ctx, "p", "g", "2", ids)
	require.NoError(t, err)
	require.Len(t, all, 1200)
	for id, key := range all {
		require.Equal(t, fmt.Sprintf("T:%04d", id), key)
	}

	// A deleted record and a moved origin are forgotten.
	commit(t, s, state.Commit{Pipeline: "p",
		DeleteRecords: []state.RecordRef{{Source: "g", Key: "T:0007"}},
		SetOrigins:    map[state.RecordRef]state.Origin{{Source: "g", Key: "T:0008"}: {Scope: "3", ID: 8}}})
	got, err = oi.RecordOriginsOf(ctx, "p", "g", "2", []int64{7, 8, 9})
	require.NoError(t, err)
	require.Equal(t, map[int64]string{9: "T:0009"}, got)
	got, err = oi.RecordOriginsOf(ctx, "p", "g", "3", []int64{7, 8})
	require.NoError(t, err)
	require.Equal(t, map[int64]string{7: "U:7", 8: "T:0008"}, got)
}

// testRunWarnings: a closed run's warnings read back in order; none reads
// back as nil.
func testRunWarnings(t *testing.T, s state.Store) {
	ctx := t.Context()
	r, err := s.RunOpen(ctx, "p", state.TriggerManual)
	require.NoError(t, err)
	r.Status = state.StatusSucceeded
	r.Warnings = []string{"table \"FAQ\" was renamed to \"FAQs\"", "second"}
	require.NoError(t, s.RunClose(ctx, r))
	got, err := s.RunGet(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, r.Warnings, got.Warnings)
	r2, err := s.RunOpen(ctx, "p", state.TriggerManual)
	require.NoError(t, err)
	r2.Status = state.StatusSucceeded
	require.NoError(t, s.RunClose(ctx, r2))
	list, err := s.RunList(ctx, "p", 1)
	require.NoError(t, err)
	require.Nil(t, list[0].Warnings)
}

// testReview: review documents and elements upsert, read back by
// document, by row id and as the expert ones, delete with their document,
// and stay per pipeline; a commit that lists an element twice writes
// nothing.
func testReview(t *testing.T, s state.Store) {
	ctx := t.Context()
	rs, ok := s.(state.ReviewStore)
	require.True(t, ok, "%T implements state.ReviewStore", s)
	c := state.ReviewCommit{Pipeline: "p",
		Documents: []state.ReviewDocument{{Doc: "docs:a.md", RowID: 1, Data: []byte(`{"t":1}`)}, {Doc: "docs:b.md", Pending: true, Data: []byte(`{}`)}},
		Elements: []state.ReviewElement{
			{Doc: "docs:a.md", Element: "docs:a.md › 1 › p1", RowID: 10, Data: []byte(`{"x":1}`)},
			{Doc: "docs:a.md", Element: "docs:a.md › 1 › p2", RowID: 11, Expert: true, Data: []byte(`{"x":2}`)},
			{Doc: "docs:b.md", Element: "docs:b.md › p1", RowID: 12, Flagged: true},
			{Doc: "docs:b.md", Element: "docs:b.md › p2"},
		}}
	require.NoError(t, rs.ReviewCommit(ctx, c))
	require.NoError(t, rs.ReviewCommit(ctx, state.ReviewCommit{Pipeline: "q",
		Elements: []state.ReviewElement{{Doc: "docs:a.md", Element: "docs:a.md › 1 › p1", RowID: 10, Expert: true}}}))

	els, err := rs.ReviewElements(ctx, "p", []string{"docs:a.md", "docs:none"})
	require.NoError(t, err)
	require.Len(t, els, 1)
	require.Equal(t, c.Elements[:2], els["docs:a.md"])
	rows, err := rs.ReviewRows(ctx, "p", []int64{11, 12, 99, 0})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, "docs:b.md › p1", rows[12].Element)
	require.True(t, rows[12].Flagged)
	require.Empty(t, rows[12].Data, "no data reads back empty")
	exp, err := rs.ReviewExpert(ctx, "p")
	require.NoError(t, err)
	require.Len(t, exp, 2)
	require.Equal(t, "docs:a.md › 1 › p2", exp[0].Element)
	docs, err := rs.ReviewDocuments(ctx, "p", nil)
	require.NoError(t, err)
	require.Len(t, docs, 2)
	require.True(t, docs["docs:b.md"].Pending)
	require.Equal(t, []byte(`{"t":1}`), docs["docs:a.md"].Data)
	counts, err := rs.ReviewCounts(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, state.ReviewCounts{Documents: 2, Elements: 4, Expert: 1, Flagged: 1, Pending: 1}, counts)

	// Upsert keeps the key, changes the rest; deletes go first.
	require.NoError(t, rs.ReviewCommit(ctx, state.ReviewCommit{Pipeline: "p",
		DeleteDocuments: []string{"docs:b.md"},
		DeleteElements:  []state.ReviewRef{{Doc: "docs:a.md", Element: "docs:a.md › 1 › p1"}},
		Documents:       []state.ReviewDocument{{Doc: "docs:a.md", RowID: 1, Pending: true}},
		Elements:        []state.ReviewElement{{Doc: "docs:a.md", Element: "docs:a.md › 1 › p2", RowID: 13, Data: []byte(`{"x":3}`)}},
	}))
	counts, err = rs.ReviewCounts(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, state.ReviewCounts{Documents: 1, Elements: 1, Pending: 1}, counts)
	rows, err = rs.ReviewRows(ctx, "p", []int64{11, 13})
	require.NoError(t, err)
	require.Equal(t, map[int64]state.ReviewElement{13: {Doc: "docs:a.md", Element: "docs:a.md › 1 › p2", RowID: 13, Data: []byte(`{"x":3}`)}}, rows)
	other, err := rs.ReviewCounts(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, state.ReviewCounts{Elements: 1, Expert: 1}, other, "pipelines are apart")

	err = rs.ReviewCommit(ctx, state.ReviewCommit{Pipeline: "p", DeleteDocuments: []string{"docs:a.md"},
		Elements: []state.ReviewElement{{Doc: "d", Element: "e"}, {Doc: "d", Element: "e"}}})
	require.ErrorContains(t, err, "listed twice")
	counts, err = rs.ReviewCounts(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, 1, counts.Documents, "a refused commit writes nothing")
}

func testQuarantine(t *testing.T, s state.Store) {
	ctx := context.Background()
	list := func(pipeline string) []state.Quarantined {
		t.Helper()
		qs, err := s.QuarantineList(ctx, pipeline)
		require.NoError(t, err)
		return qs
	}
	require.Empty(t, list("p"))
	require.NoError(t, s.QuarantinePut(ctx, "p", 7, []state.Quarantined{
		{Source: "docs", Key: "b.md", Stage: state.StageParse, Error: "too complex (x)"},
		{Source: "docs", Key: "a/", Stage: state.StageList, Error: "permission denied"},
	}))
	require.NoError(t, s.QuarantinePut(ctx, "other", 1, []state.Quarantined{{Source: "docs", Key: "b.md", Stage: state.StageRead, Error: "e"}}))
	qs := list("p")
	require.Len(t, qs, 2)
	require.Equal(t, "a/", qs[0].Key, "by source and key")
	b := qs[1]
	require.Equal(t, state.Quarantined{Pipeline: "p", Source: "docs", Key: "b.md", Stage: state.StageParse, Error: "too complex (x)",
		FirstAt: b.FirstAt, LastAt: b.LastAt, Attempts: 1, RunID: 7}, b)
	require.False(t, b.FirstAt.IsZero())
	require.NoError(t, s.QuarantinePut(ctx, "p", 9, []state.Quarantined{{Source: "docs", Key: "b.md", Stage: state.StageEmbed, Error: "status 400"}}))
	b2 := list("p")[1]
	require.Equal(t, 2, b2.Attempts)
	require.Equal(t, int64(9), b2.RunID)
	require.Equal(t, state.StageEmbed, b2.Stage)
	require.Equal(t, "status 400", b2.Error)
	require.True(t, b2.FirstAt.Equal(b.FirstAt), "first_at kept")
	require.False(t, b2.LastAt.Before(b.LastAt))
	require.Len(t, list(""), 3)
	require.NoError(t, s.QuarantineRelease(ctx, "p", []state.RecordRef{{Source: "docs", Key: "b.md"}, {Source: "docs", Key: "absent"}}))
	require.Len(t, list("p"), 1)
	require.Len(t, list("other"), 1, "other pipelines untouched")
}
