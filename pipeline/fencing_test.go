package pipeline_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/pgtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/postgres"
)

// gateEmbedder blocks its n-th call until release is closed, after
// closing blocked.
type gateEmbedder struct {
	*hashing.Embedder
	n                int
	calls            int
	mu               sync.Mutex
	blocked, release chan struct{}
}

func (g *gateEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	g.mu.Lock()
	g.calls++
	hit := g.calls == g.n
	g.mu.Unlock()
	if hit {
		close(g.blocked)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Embedder.Embed(ctx, texts)
}

// writeLog records which run wrote to the sink, and when.
type writeLog struct {
	mu     sync.Mutex
	writes []logged
}

type logged struct {
	who string
	at  time.Time
}

// loggingSink is a CYPHERL sink whose writes are logged under a name.
type loggingSink struct {
	*cypherl.Sink
	who string
	log *writeLog
}

func (s *loggingSink) Write(ctx context.Context, b *sink.Batch) (sink.Stats, error) {
	st, err := s.Sink.Write(ctx, b)
	if err == nil {
		s.log.mu.Lock()
		s.log.writes = append(s.log.writes, logged{s.who, time.Now()})
		s.log.mu.Unlock()
	}
	return st, err
}

// TestLostLockFencesTheStaleRun: run A holds the pipeline's lock over
// Postgres; mid-run its lock's session is ended (pg_terminate_backend, as
// a fail-over or a dropped connection does). Run B, another replica, takes
// the lock and syncs. A must notice before its next write or commit: no
// write of A after B took the lock, no two CYPHERL files with one number,
// A reports failure (state.ErrFenced), B succeeds. Before fencing A
// committed on its other connections, wrote beside B and reported success.
func TestLostLockFencesTheStaleRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn, schema := pgtest.Schema(t)
	open := func() *postgres.Store {
		st, err := postgres.Open(ctx, dsn, schema)
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	storeA, storeB := open(), open()
	root := copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md", "go_spec.html")
	out := t.TempDir()
	wl := &writeLog{}
	mk := func(store state.Store, who string) *bundle {
		b := setup(t, root, 256, 32)
		sk, err := cypherl.New(out, "docs", sink.Memgraph)
		require.NoError(t, err)
		b.p.Sink = &loggingSink{Sink: sk, who: who, log: wl}
		b.p.Store, b.store = store, store
		b.p.BatchSize = 1
		return b
	}
	a, b := mk(storeA, "A"), mk(storeB, "B")
	gate := &gateEmbedder{Embedder: hashing.New("hashing-v1", 64), n: 3, blocked: make(chan struct{}), release: make(chan struct{})}
	a.p.Embedder = gate
	b.p.Embedder = hashing.New("hashing-v1", 64)

	type result struct {
		res pipeline.Result
		err error
	}
	doneA := make(chan result, 1)
	go func() {
		res, err := a.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
		doneA <- result{res, err}
	}()
	select {
	case <-gate.blocked:
	case r := <-doneA:
		t.Fatalf("run A ended before the gate: %v", r.err)
	}
	// End the session holding A's lock.
	admin := pgtest.Connect(t)
	key := uint64(postgres.LockKey(schema, "docs"))
	var killed bool
	require.NoError(t, admin.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND classid::bigint = $1 AND objid::bigint = $2`, int64(key>>32), int64(key&0xffffffff)).Scan(&killed))
	require.True(t, killed)

	// B takes the lock once Postgres has let A's go, and syncs.
	var resB pipeline.Result
	var errB error
	var startB time.Time
	deadline := time.Now().Add(10 * time.Second)
	for {
		startB = time.Now()
		resB, errB = b.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
		if !errors.Is(errB, state.ErrLocked) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, errB)
	require.Equal(t, state.StatusSucceeded, resB.Run.Status)

	close(gate.release)
	ra := <-doneA
	require.Error(t, ra.err, "the run that lost its lock must not report success")
	require.ErrorIs(t, ra.err, state.ErrFenced)
	require.NotEqual(t, state.StatusSucceeded, ra.res.Run.Status)

	wl.mu.Lock()
	defer wl.mu.Unlock()
	for _, w := range wl.writes {
		if w.who == "A" {
			require.True(t, w.at.Before(startB), "A wrote after B took the lock")
		}
	}
	numbers := map[string]string{}
	entries, err := os.ReadDir(out + "/docs")
	require.NoError(t, err)
	num := regexp.MustCompile(`^(\d{6})-`)
	for _, e := range entries {
		if m := num.FindStringSubmatch(e.Name()); m != nil {
			require.Empty(t, numbers[m[1]], "two CYPHERL files numbered %s: %s and %s", m[1], numbers[m[1]], e.Name())
			numbers[m[1]] = e.Name()
		}
	}
}
