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

func testRecordScan(t *testing.T, s state.Store) {
	ctx := t.Context()
	// Ords out of key order, ties broken by key in byte order ("B" < "a"
	// < "é"), another source and pipeline apart.
	recs := []state.Record{
		{Source: "s", Key: "a", Hash: 1, Fingerprint: 7, Ord: 20},
		{Source: "s", Key: "z", Hash: 2, Fingerprint: 7, Ord: 10},
		{Source: "s", Key: "é", Hash: 3, Fingerprint: 7, Ord: 20, Origin: state.Origin{Scope: "t", ID: 4}},
		{Source: "s", Key: "B", Hash: 1 << 63, Fingerprint: 8, Ord: 20},
		{Source: "s", Key: "m", Hash: 5, Fingerprint: 7, Ord: -3},
		{Source: "other", Key: "x", Hash: 6, Fingerprint: 7, Ord: 0},
	}
	commit(t, s, state.Commit{Pipeline: "p", Records: recs})
	commit(t, s, state.Commit{Pipeline: "q", Records: []state.Record{{Source: "s", Key: "q", Hash: 1, Ord: 15}}})
	var keys []string
	var after *state.RecordPos
	for {
		page, err := s.RecordScan(ctx, "p", "s", after, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 2)
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			keys = append(keys, e.Key)
		}
		last := page[len(page)-1].RecordPos
		after = &last
	}
	require.Equal(t, []string{"m", "z", "B", "a", "é"}, keys)
	all, err := s.RecordScan(ctx, "p", "s", nil, 100)
	require.NoError(t, err)
	require.Equal(t, state.RecordEntry{RecordPos: state.RecordPos{Ord: 20, Key: "é"},
		RecordSummary: state.RecordSummary{Hash: 3, Fingerprint: 7, Origin: state.Origin{Scope: "t", ID: 4}}}, all[4])
	require.Equal(t, uint64(1<<63), all[2].Hash)

	got, err := s.RecordSummaries(ctx, "p", "s", []string{"a", "missing", "B"})
	require.NoError(t, err)
	require.Equal(t, map[string]state.RecordEntry{"a": all[3], "B": all[2]}, got)

	st, err := s.RecordStats(ctx, "p", "s")
	require.NoError(t, err)
	require.Equal(t, state.RecordStats{Count: 5, MaxOrd: 20}, st)
	st, err = s.RecordStats(ctx, "p", "none")
	require.NoError(t, err)
	require.Equal(t, state.RecordStats{}, st)

	// Ords moves records in the listing order without rewriting them.
	commit(t, s, state.Commit{Pipeline: "p", Ords: map[state.RecordRef]int64{{Source: "s", Key: "m"}: 30, {Source: "s", Key: "gone"}: 1}})
	all, err = s.RecordScan(ctx, "p", "s", nil, 100)
	require.NoError(t, err)
	require.Equal(t, "m", all[4].Key)
	require.Equal(t, uint64(5), all[4].Hash)
}

func testRecordKeysWithPrefix(t *testing.T, s state.Store) {
	var recs []state.Record
	for _, k := range []string{"row:1", "row:1#child:a", "row:1#child:b", "row:10#child:a", "row:2", "row:2#child:x", "row:3"} {
		recs = append(recs, state.Record{Source: "s", Key: k, Hash: 1})
	}
	commit(t, s, state.Commit{Pipeline: "p", Records: append(recs, state.Record{Source: "t", Key: "row:1#child:z", Hash: 1})})
	got, err := s.RecordKeysWithPrefix(t.Context(), "p", "s", []string{"row:2#child:", "row:1#child:", "row:3#child:"})
	require.NoError(t, err)
	require.Equal(t, []string{"row:1#child:a", "row:1#child:b", "row:2#child:x"}, got)
	got, err = s.RecordKeysWithPrefix(t.Context(), "p", "s", nil)
	require.NoError(t, err)
	require.Empty(t, got)
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("none%d:", i))
	}
	got, err = s.RecordKeysWithPrefix(t.Context(), "p", "s", append(many, "row:"))
	require.NoError(t, err)
	require.Len(t, got, 7, "more prefixes than one query carries")
}

func testLinkDocs(t *testing.T, s state.Store) {
	ctx := t.Context()
	list := func(pipeline string) map[state.RecordRef]string {
		t.Helper()
		out := map[state.RecordRef]string{}
		require.NoError(t, s.LinkDocs(ctx, pipeline, func(ref state.RecordRef, data []byte) error {
			out[ref] = string(data)
			return nil
		}))
		return out
	}
	a, b, c := state.RecordRef{Source: "docs", Key: "a.md"}, state.RecordRef{Source: "docs", Key: "b.md"}, state.RecordRef{Source: "web", Key: "c"}
	commit(t, s, state.Commit{Pipeline: "p", Records: []state.Record{{Source: "docs", Key: "a.md", Hash: 1}, {Source: "docs", Key: "b.md", Hash: 1}},
		LinkDocs: map[state.RecordRef][]byte{a: []byte("A"), b: []byte("B"), c: []byte("C")}})
	commit(t, s, state.Commit{Pipeline: "q", LinkDocs: map[state.RecordRef][]byte{a: []byte("other")}})
	require.Equal(t, map[state.RecordRef]string{a: "A", b: "B", c: "C"}, list("p"))
	// Replaced, removed by an empty entry, removed with its record.
	commit(t, s, state.Commit{Pipeline: "p", LinkDocs: map[state.RecordRef][]byte{a: []byte("A2"), c: nil},
		DeleteRecords: []state.RecordRef{b}})
	require.Equal(t, map[state.RecordRef]string{a: "A2"}, list("p"))
	require.Equal(t, map[state.RecordRef]string{a: "other"}, list("q"))
}
