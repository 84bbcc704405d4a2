package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/internal/backoff"
	"github.com/kgsync/kgsync/state"
)

// quarantine is a run's view of the records it could not read, parse or
// embed (state.Quarantined; design: one bad record never blocks the
// others). A quarantined record keeps its last good version in state and
// the graph; its error is stored, shown by `kgsync status` and /metrics,
// and it is retried on the next run (a source holding quarantined records
// is listed in full, cursor or not). A run that ends with records in
// quarantine is partial.
type quarantine struct {
	mu       sync.Mutex                            // the writer goroutine releases deleted records
	prev     map[state.RecordRef]state.Quarantined // at the start of the run
	failed   map[state.RecordRef]state.Quarantined // in this run
	order    []state.RecordRef                     // failed, in the order met
	released map[state.RecordRef]bool              // deleted in this run
	// waiting are records that hit a limit and were not parsed again in
	// this run (limitBackoff): their entries stay as they are.
	waiting map[state.RecordRef]bool
}

// limitMark is appended to the error of a record quarantined for a limit
// (chunker.ErrTooComplex: a nesting or size limit, the time or memory
// budget): the content hash it hit the limit with.
func limitMark(hash uint64) string { return " [content " + hashHex(hash) + "]" }

// Back-off of a record that hit a limit: while its content is unchanged it
// is parsed again only limitRetryBase × 2^(attempts-1) after its last
// attempt, at most limitRetryMax (a time budget hit under load may pass
// later); changed content is parsed at once.
const (
	limitRetryBase = time.Hour
	limitRetryMax  = 7 * 24 * time.Hour
)

// limitBackoff reports whether a listed record with content hash hash is
// in quarantine for a limit it hit with this very content, and waits
// there (its back-off not over): the run does not parse it again.
func (r *runner) limitBackoff(source, key string, hash uint64) bool {
	q, ok := r.q.prev[state.RecordRef{Source: source, Key: key}]
	if !ok || q.Stage != state.StageParse || !strings.HasSuffix(q.Error, limitMark(hash)) {
		return false
	}
	wait := backoff.Doubled(limitRetryBase, limitRetryMax, q.Attempts-1)
	if !r.p.now().Before(q.LastAt.Add(wait)) {
		return false
	}
	r.q.mu.Lock()
	defer r.q.mu.Unlock()
	if r.q.waiting == nil {
		r.q.waiting = map[state.RecordRef]bool{}
	}
	r.q.waiting[state.RecordRef{Source: source, Key: key}] = true
	return true
}

// loadQuarantine reads the pipeline's quarantine at the start of a run.
func (r *runner) loadQuarantine(ctx context.Context) error {
	qs, err := r.p.Store.QuarantineList(ctx, r.p.Name)
	if err != nil {
		return err
	}
	r.q.prev, r.q.failed, r.q.released = map[state.RecordRef]state.Quarantined{}, map[state.RecordRef]state.Quarantined{},
		map[state.RecordRef]bool{}
	for _, q := range qs {
		r.q.prev[state.RecordRef{Source: q.Source, Key: q.Key}] = q
	}
	return nil
}

// quarantined reports whether the source had records in quarantine when
// the run started.
func (r *runner) quarantined(source string) bool {
	for ref := range r.q.prev {
		if ref.Source == source {
			return true
		}
	}
	return false
}

// quarantineRecord puts a record (or, for StageList, a key prefix) in the
// run's quarantine, logging why.
func (r *runner) quarantineRecord(source, key, stage string, err error) {
	r.q.mu.Lock()
	defer r.q.mu.Unlock()
	ref := state.RecordRef{Source: source, Key: key}
	if _, dup := r.q.failed[ref]; !dup {
		r.q.order = append(r.q.order, ref)
	}
	r.q.failed[ref] = state.Quarantined{Pipeline: r.p.Name, Source: source, Key: key, Stage: stage, Error: err.Error()}
	r.log.Warn("record quarantined: kept as it was, retried next run", slog.String("source", source), slog.String("key", key),
		slog.String("stage", stage), slog.String("err", err.Error()))
}

// releaseDeleted marks records deleted in this run: they leave quarantine.
func (r *runner) releaseDeleted(refs []state.RecordRef) {
	r.q.mu.Lock()
	defer r.q.mu.Unlock()
	for _, ref := range refs {
		r.q.released[ref] = true
	}
}

// settleQuarantine stores the source's quarantine after its listing:
// the records that failed in this run, and the release of those that were
// quarantined and were now read (and written or found unchanged) or
// deleted. A part of the listing that failed (StageList) is released once
// a complete listing reads it. seen reports whether the listing had a key.
//
// After a failed read (release false) only the failures are stored.
func (r *runner) settleQuarantine(ctx context.Context, source string, seen func(key string) bool, complete, release bool) error {
	r.q.mu.Lock()
	defer r.q.mu.Unlock()
	var put []state.Quarantined
	for _, ref := range r.q.order {
		if ref.Source == source {
			put = append(put, r.q.failed[ref])
		}
	}
	var freed []state.RecordRef
	for ref, q := range r.q.prev {
		if !release || ref.Source != source {
			continue
		}
		if _, again := r.q.failed[ref]; again || r.q.waiting[ref] {
			continue
		}
		// A record a complete listing no longer lists is gone from the
		// source (deleted by the run if stored, never stored otherwise),
		// so a complete listing frees it whether it lists it or not.
		if r.q.released[ref] || (q.Stage == state.StageList && complete) ||
			(q.Stage != state.StageList && (complete || seen(ref.Key)) && !r.underUnlisted(ref)) {
			freed = append(freed, ref)
		}
	}
	if err := r.p.Store.QuarantinePut(ctx, r.p.Name, r.run.ID, put); err != nil {
		return fmt.Errorf("store quarantine: %w", err)
	}
	if err := r.p.Store.QuarantineRelease(ctx, r.p.Name, freed); err != nil {
		return fmt.Errorf("release quarantine: %w", err)
	}
	for _, ref := range freed {
		delete(r.q.prev, ref)
	}
	for _, q := range put {
		r.q.prev[state.RecordRef{Source: q.Source, Key: q.Key}] = q
	}
	r.q.order = slices.DeleteFunc(r.q.order, func(ref state.RecordRef) bool { return ref.Source == source })
	return nil
}

// underUnlisted reports whether ref lies under a part of its source's
// listing that failed in this run (its records were not read).
func (r *runner) underUnlisted(ref state.RecordRef) bool {
	for f, q := range r.q.failed {
		if q.Stage == state.StageList && f.Source == ref.Source && strings.HasPrefix(ref.Key, f.Key) {
			return true
		}
	}
	return false
}

// embedRefused reports whether an embedding error is the provider refusing
// these texts (HTTP 400, 413 or 422: too long, invalid input) rather than
// the provider failing (429, 5xx, the network, a malformed answer): only
// the first quarantines records; the second fails the run, since every
// record would fail alike.
func embedRefused(err error) bool {
	var se *embed.StatusError
	if errors.As(err, &se) {
		return se.Code == 400 || se.Code == 413 || se.Code == 422
	}
	return false
}

// stageOf is the quarantine stage of a record's mapping error.
func stageOf(err error) string {
	if errors.Is(err, chunker.ErrBinary) {
		return state.StageRead
	}
	return state.StageParse
}
