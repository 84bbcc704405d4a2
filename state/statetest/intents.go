package statetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/state"
)

// Conformance tests of the listing order (Record.Ord), multi-key deletes
// and write-ahead intents.

func testRecordOrd(t *testing.T, s state.Store) {
	a := state.Record{Pipeline: "p", Source: "s", Key: "a", Hash: 1, Fingerprint: 1, Ord: -5}
	b := state.Record{Pipeline: "p", Source: "s", Key: "b", Hash: 2, Fingerprint: 1, Ord: 1 << 40}
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{a, b}})
	require.Equal(t, map[string]state.Record{"a": a, "b": b}, records(t, s, "p", "s"))
	// An upsert replaces the ord with the rest.
	a.Ord, a.Hash = 7, 3
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{a}})
	got, err := s.RecordGet(t.Context(), "p", "s", []string{"a"})
	require.NoError(t, err)
	require.Equal(t, a, got["a"])
}

func testDeleteMany(t *testing.T, s state.Store) {
	// More records than one delete statement lists, in two sources, each
	// with chunks; the records of a third source stay.
	var recs []state.Record
	var gone []state.RecordRef
	replace := map[state.RecordRef][]state.Chunk{}
	for _, src := range []string{"a", "b", "keep"} {
		for i := range 1100 {
			k := fmt.Sprintf("k%04d", i)
			recs = append(recs, state.Record{Source: src, Key: k, Hash: uint64(i + 1), Fingerprint: 1})
			ref := state.RecordRef{Source: src, Key: k}
			replace[ref] = mkChunks("p", src, k, "c", 1, uint64(i))
			if src != "keep" {
				gone = append(gone, ref)
			}
		}
	}
	commit(t, s, state.Commit{Pipeline: "p", Records: recs, ReplaceChunks: replace})
	require.Equal(t, 3300, chunkCount(t, s, "p"))
	commit(t, s, state.Commit{Pipeline: "p", DeleteRecords: gone})
	require.Empty(t, records(t, s, "p", "a"))
	require.Empty(t, records(t, s, "p", "b"))
	require.Len(t, records(t, s, "p", "keep"), 1100)
	require.Equal(t, 1100, chunkCount(t, s, "p"))
	// Replacing the chunks of many records with none removes them all.
	empty := map[state.RecordRef][]state.Chunk{}
	for ref := range replace {
		if ref.Source == "keep" {
			empty[ref] = nil
		}
	}
	commit(t, s, state.Commit{Pipeline: "p", ReplaceChunks: empty})
	require.Zero(t, chunkCount(t, s, "p"))
}

func testIntents(t *testing.T, s state.Store) {
	ctx := t.Context()
	list := func(pipeline string) []state.Intent {
		t.Helper()
		in, err := s.IntentList(ctx, pipeline)
		require.NoError(t, err)
		return in
	}
	require.Empty(t, list("p"))
	// An intent is stored with the commit's records, atomically.
	r := state.Record{Source: "s", Key: "k", Hash: 1, Fingerprint: 1}
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{r}, Intent: &state.Intent{ID: 2, Data: []byte("two")}})
	commit(t, s, state.Commit{Pipeline: "p", Intent: &state.Intent{ID: 1, Data: []byte("one")}})
	commit(t, s, state.Commit{Pipeline: "other", Intent: &state.Intent{ID: 1, Data: []byte("other")}})
	require.Equal(t, []state.Intent{{ID: 1, Data: []byte("one")}, {ID: 2, Data: []byte("two")}}, list("p"), "by ascending id")
	// A rejected commit stores no intent.
	err := s.Commit(ctx, state.Commit{Pipeline: "p", Intent: &state.Intent{ID: 3}})
	require.Error(t, err, "an intent without data")
	err = s.Commit(ctx, state.Commit{Pipeline: "p", Records: []state.Record{{Source: "", Key: "x"}}, Intent: &state.Intent{ID: 4, Data: []byte("x")}})
	require.Error(t, err)
	require.Len(t, list("p"), 2)
	// Done removes the named ones, of this pipeline only, with the commit's
	// other changes; unknown ids are ignored.
	commit(t, s, state.Commit{Pipeline: "p", IntentsDone: []int64{1, 99}, Cursors: map[string]string{"s": "c1"},
		Intent: &state.Intent{ID: 5, Data: []byte("five")}})
	require.Equal(t, []state.Intent{{ID: 2, Data: []byte("two")}, {ID: 5, Data: []byte("five")}}, list("p"))
	require.Equal(t, []state.Intent{{ID: 1, Data: []byte("other")}}, list("other"))
	c, err := s.CursorGet(ctx, "p", "s")
	require.NoError(t, err)
	require.Equal(t, "c1", c)
	commit(t, s, state.Commit{Pipeline: "p", IntentsDone: []int64{2, 5}})
	require.Empty(t, list("p"))
}
