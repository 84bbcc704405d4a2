package pipeline_test

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// guidesSource is a tableSource of n guides, keys guides:01 to guides:n.
func guidesSource(n int) *tableSource {
	src := &tableSource{name: "tables", recs: map[string]sources.Record{}}
	for i := 1; i <= n; i++ {
		src.put("guides", fmt.Sprintf("%02d", i), map[string]any{"title": fmt.Sprintf("guide %d", i)})
	}
	return src
}

// guideTitle is the title of a guide's node in the graph.
func guideTitle(t *testing.T, b *modelBundle, key string) any {
	t.Helper()
	n, ok := b.graph.Node("guide", key)
	require.True(t, ok, "%s is in the graph", key)
	return n["title"]
}

// TestHoldPastItsBoundsWritesButTheGuardStillRules: while a complete
// listing could still trip the mass-delete guard its batches are held;
// past the hold's bounds they are written (they are new or changed, not
// deletions), and the guard still rules on the whole listing before the
// first delete, and the listing's cursor stays. Within the bounds, a
// tripped guard writes nothing.
func TestHoldPastItsBoundsWritesButTheGuardStillRules(t *testing.T) {
	// Not parallel: the hold's bounds are package variables.
	for _, tc := range []struct {
		name    string
		records int // the hold's bound in records; 0: the default
		written bool
	}{
		{"within the bounds", 0, false},
		{"past the bounds", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.records > 0 {
				pipeline.SetHoldBounds(t, tc.records, 64<<20)
			}
			b := setupModel(t)
			src := guidesSource(10)
			b.p.Sources = []sources.Source{src}
			b.p.BatchSize = 2
			b.p.MaxDeleteRatio = 0.3
			b.sync(t)
			// The first two guides change (the first batch, held), the
			// last five go: 5 of 10 trips the guard.
			src.recs["guides:01"].Attributes["title"] = "guide 1, revised"
			src.recs["guides:02"].Attributes["title"] = "guide 2, revised"
			for i := 6; i <= 10; i++ {
				delete(src.recs, fmt.Sprintf("guides:%02d", i))
			}
			_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
			require.ErrorIs(t, err, pipeline.ErrMassDelete)
			require.ErrorContains(t, err, "delete 5 of 10 records")
			require.Equal(t, 10, b.graph.Count("guide"), "nothing deleted")
			want := "guide 1"
			if tc.written {
				want = "guide 1, revised"
			}
			require.Equal(t, want, guideTitle(t, b, "guides:01"))
			recs, err := b.store.RecordList(t.Context(), "tariff", "tables")
			require.NoError(t, err)
			require.Len(t, recs, 10, "state keeps every record")

			c, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{AllowMassDelete: true})
			require.NoError(t, err)
			require.Equal(t, 5, c.Run.Counts.RecordsDeleted)
			changed := 2
			if tc.written {
				changed = 0 // written by the stopped run
			}
			require.Equal(t, changed, c.Run.Counts.RecordsChanged)
			require.Equal(t, "guide 2, revised", guideTitle(t, b, "guides:02"))
			require.Equal(t, 5, b.graph.Count("guide"))
		})
	}
}

// notModifiedSource lists its records in full until notModified is set;
// then it answers "not modified", with cursor as the new cursor, whatever
// the cursor read from.
type notModifiedSource struct {
	tableSource
	notModified bool
	cursor      string
	warnings    []string
}

func (s *notModifiedSource) Read(ctx context.Context, cursor string) iter.Seq2[*sources.Page, error] {
	if !s.notModified {
		return editLastPage(s.tableSource.Read(ctx, cursor), func(p *sources.Page) { p.Cursor = "v1" })
	}
	return func(yield func(*sources.Page, error) bool) {
		yield(nil, &sources.NotModifiedError{Cursor: s.cursor, Warnings: s.warnings})
	}
}

// TestNotModifiedMovesToTheCursorItCarries: a source answering "not
// modified" reads nothing and deletes nothing; the cursor it gives with
// the answer replaces the stored one, and its warnings are the run's.
func TestNotModifiedMovesToTheCursorItCarries(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	src := &notModifiedSource{tableSource: *guidesSource(4)}
	b.p.Sources = []sources.Source{src}
	b.p.MaxDeleteRatio = 0.3
	b.sync(t)
	cur, err := b.store.CursorGet(t.Context(), "tariff", "tables")
	require.NoError(t, err)
	require.Equal(t, "v1", cur)

	src.notModified, src.cursor, src.warnings = true, "v2", []string{"table guides: renamed upstream"}
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Zero(t, res.Run.Counts.RecordsRead)
	require.Zero(t, res.Run.Counts.RecordsDeleted, "a listing that is not read deletes nothing")
	require.Contains(t, res.Run.Warnings, "table guides: renamed upstream")
	require.Equal(t, 4, b.graph.Count("guide"))
	cur, err = b.store.CursorGet(t.Context(), "tariff", "tables")
	require.NoError(t, err)
	require.Equal(t, "v2", cur, "the cursor the answer carries")

	src.cursor = ""
	_, err = b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	cur, err = b.store.CursorGet(t.Context(), "tariff", "tables")
	require.NoError(t, err)
	require.Equal(t, "v2", cur, "no cursor in the answer: the stored one stays")
}

// unconfirmedSource marks the last page of its listing EndUnconfirmed: the
// listing ended at an empty page with no stated total.
type unconfirmedSource struct{ tableSource }

func (s *unconfirmedSource) Read(ctx context.Context, cursor string) iter.Seq2[*sources.Page, error] {
	return editLastPage(s.tableSource.Read(ctx, cursor), func(p *sources.Page) { p.EndUnconfirmed = true })
}

// editLastPage yields the pages of a listing, the last one edited by edit
// before it is yielded.
func editLastPage(pages iter.Seq2[*sources.Page, error], edit func(*sources.Page)) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		var last *sources.Page
		for p, err := range pages {
			if err != nil {
				yield(nil, err)
				return
			}
			if last != nil && !yield(last, nil) {
				return
			}
			last = p
		}
		if last != nil {
			edit(last)
			yield(last, nil)
		}
	}
}

// TestUnconfirmedEndDeletesNothing: a complete listing whose end the source
// could not vouch for deletes nothing, however few records it would
// delete, unless confirmed; what changed is written all the same.
func TestUnconfirmedEndDeletesNothing(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	src := &unconfirmedSource{*guidesSource(10)}
	b.p.Sources = []sources.Source{src}
	b.p.BatchSize = 2
	b.p.MaxDeleteRatio = 0.5
	b.sync(t)
	delete(src.recs, "guides:10")
	src.recs["guides:01"].Attributes["title"] = "guide 1, revised"
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.ErrorContains(t, err, "would delete 1 records")
	require.Equal(t, 10, b.graph.Count("guide"), "nothing deleted")
	require.Equal(t, "guide 1, revised", guideTitle(t, b, "guides:01"), "1 of 10 gone does not hold the writes")

	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{AllowMassDelete: true})
	require.NoError(t, err)
	require.Equal(t, 1, res.Run.Counts.RecordsDeleted)
	require.Equal(t, 9, b.graph.Count("guide"))
}
