package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// sixGuides is the model bundle with six guide rows and batches of two:
// three batches, of guides 1–2, 3–4 and 5–6.
func sixGuides(t *testing.T) *modelBundle {
	t.Helper()
	b := setupModel(t)
	b.src.recs = map[string]sources.Record{}
	for i := 1; i <= 6; i++ {
		b.src.put("guides", fmt.Sprint(i), map[string]any{"title": fmt.Sprintf("guide %d", i)})
	}
	b.p.BatchSize = 2
	return b
}

// waitStored waits up to 10 s until state holds n records of the bundle's
// source and returns the intents stored then; ok is false on timeout.
func waitStored(ctx context.Context, b *modelBundle, n int) (intents []state.Intent, ok bool) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := b.store.RecordList(ctx, "tariff", "tables")
		if err == nil && len(recs) >= n {
			intents, err = b.store.IntentList(ctx, "tariff")
			return intents, err == nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil, false
}

// TestSinkWriteOverlapsTheNextCommit: while the sink writes batch 1, the
// writer's state stage commits batch 2 (its records and its intent), and
// no commit acknowledges batch 1 before its write returns.
func TestSinkWriteOverlapsTheNextCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := sixGuides(t)
	writes := 0
	var during []state.Intent
	overlapped := false
	b.graph.FailWrite = func(*sink.Batch) error {
		writes++
		if writes == 1 {
			during, overlapped = waitStored(ctx, b, 4)
		}
		return nil
	}
	c := b.sync(t)
	require.True(t, overlapped, "batch 2 was committed while batch 1 was being written")
	// Intent ids are the run's id << 32 | the batch's number in the run.
	var batches []int64
	for _, in := range during {
		batches = append(batches, in.ID&(1<<32-1))
	}
	require.Contains(t, batches, int64(1), "batch 1's intent is not acknowledged while its write runs")
	require.Contains(t, batches, int64(2), "batch 2 is committed with its intent")
	require.Equal(t, 6, c.RecordsNew)
	require.Equal(t, 6, b.graph.Count("guide"))
	left, err := b.store.IntentList(ctx, "tariff")
	require.NoError(t, err)
	require.Empty(t, left, "every batch acknowledged by the run's end")
}

// TestBatchCommittedBeforeAFailedWriteIsMarkedInterrupted: batch 3 is
// committed while batch 2's write is under way; batch 2's write fails, so
// batch 3 is never written and its records are marked as interrupted
// (hash 0), like batch 2's: no intent is left, and the next run rewrites
// guides 3–6.
func TestBatchCommittedBeforeAFailedWriteIsMarkedInterrupted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := sixGuides(t)
	writes := 0
	overlapped := false
	b.graph.FailWrite = func(*sink.Batch) error {
		writes++
		if writes == 2 {
			_, overlapped = waitStored(ctx, b, 6)
			return errors.New("connection reset")
		}
		return nil
	}
	_, err := b.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.ErrorContains(t, err, "connection reset")
	require.True(t, overlapped, "batch 3 was committed while batch 2 was being written")
	require.Equal(t, 2, writes, "batch 3 is not written after batch 2's write failed")
	require.Equal(t, 2, b.graph.Count("guide"))
	left, err := b.store.IntentList(ctx, "tariff")
	require.NoError(t, err)
	require.Empty(t, left, "batches 2 and 3 recovered by the run itself")
	recs, err := b.store.RecordList(ctx, "tariff", "tables")
	require.NoError(t, err)
	interrupted := 0
	for _, r := range recs {
		if r.Hash == 0 {
			interrupted++
		}
	}
	require.Equal(t, 4, interrupted, "guides 3–6")

	b.graph.FailWrite = nil
	c := b.sync(t)
	require.Zero(t, c.RecordsNew)
	require.Equal(t, 4, c.RecordsChanged, "guides 3–6 rewritten")
	require.Equal(t, 6, b.graph.Count("guide"))
}

// failingCommit is a state store whose first commit that fail picks
// fails with "disk I/O error"; failed is closed then.
type failingCommit struct {
	state.Store
	mu     sync.Mutex
	fail   func(c state.Commit) bool
	failed chan struct{}
	done   bool
}

func newFailingCommit(s state.Store, fail func(c state.Commit) bool) *failingCommit {
	return &failingCommit{Store: s, fail: fail, failed: make(chan struct{})}
}

func (f *failingCommit) Commit(ctx context.Context, c state.Commit) error {
	f.mu.Lock()
	fails := !f.done && f.fail(c)
	if fails {
		f.done = true
		close(f.failed)
	}
	f.mu.Unlock()
	if fails {
		return errors.New("disk I/O error")
	}
	return f.Store.Commit(ctx, c)
}

// TestStateFailureLetsEarlierBatchesBeWritten: batch 3's commit fails
// while batch 1 is being written and batch 2, committed, waits for the
// sink stage: batch 2 is still written and acknowledged, batch 3 is not
// committed, and the run fails with the commit's error.
func TestStateFailureLetsEarlierBatchesBeWritten(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := sixGuides(t)
	intents := 0
	fc := newFailingCommit(b.store, func(c state.Commit) bool {
		if c.Intent != nil {
			intents++
		}
		return intents == 3
	})
	b.p.Store = fc
	writes := 0
	b.graph.FailWrite = func(*sink.Batch) error {
		writes++
		if writes == 1 {
			select {
			case <-fc.failed:
			case <-time.After(10 * time.Second):
			}
		}
		return nil
	}
	_, err := b.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.ErrorContains(t, err, "disk I/O error")
	require.Equal(t, 2, writes, "batches 1 and 2 written")
	require.Equal(t, 4, b.graph.Count("guide"))
	recs, err := b.store.RecordList(ctx, "tariff", "tables")
	require.NoError(t, err)
	require.Len(t, recs, 4, "batch 3 not committed")
	for k, r := range recs {
		require.NotZero(t, r.Hash, "%s written, not marked as interrupted", k)
	}
	left, err := b.store.IntentList(ctx, "tariff")
	require.NoError(t, err)
	require.Empty(t, left, "batches 1 and 2 acknowledged")
}

// failingEnsure is a sink whose schema cannot be ensured.
type failingEnsure struct{ sink.Sink }

func (failingEnsure) Ensure(context.Context, sink.Schema) (sink.Stats, error) {
	return sink.Stats{}, errors.New("connection refused")
}

// TestEnsureFailureCommitsNothing: when the sink's schema cannot be
// ensured, no batch is committed: state stays empty, no intent is left.
func TestEnsureFailureCommitsNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := sixGuides(t)
	b.p.Sink = failingEnsure{b.graph}
	_, err := b.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.ErrorContains(t, err, "connection refused")
	recs, err := b.store.RecordList(ctx, "tariff", "tables")
	require.NoError(t, err)
	require.Empty(t, recs)
	left, err := b.store.IntentList(ctx, "tariff")
	require.NoError(t, err)
	require.Empty(t, left)
	require.Zero(t, b.graph.Count("guide"))
}

// TestFailedCommitKeepsItsAcknowledgements: a commit that fails gives the
// acknowledgements it carried back, and the run's last commit stores them:
// no intent of a batch the sink has is left, and the next run rewrites
// nothing it wrote. Preparing is slower than writing (slowEmbedder), so
// each commit acknowledges the batch before it.
func TestFailedCommitKeepsItsAcknowledgements(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := sixGuides(t)
	b.p.Embedder = slowEmbedder{b.emb}
	// The first commit of an intent that also acknowledges a batch fails.
	fs := newFailingCommit(b.store, func(c state.Commit) bool { return c.Intent != nil && len(c.IntentsDone) > 0 })
	b.p.Store = fs
	_, err := b.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.ErrorContains(t, err, "disk I/O error")
	written := b.graph.Count("guide")
	require.Positive(t, written)
	left, err := b.store.IntentList(ctx, "tariff")
	require.NoError(t, err)
	require.Empty(t, left, "the written batches are acknowledged")

	b.p.Store = b.store
	c := b.sync(t)
	require.Zero(t, c.RecordsChanged, "nothing the first run wrote is rewritten")
	require.Equal(t, 6-written, c.RecordsNew)
	require.Equal(t, 6, b.graph.Count("guide"))
}
