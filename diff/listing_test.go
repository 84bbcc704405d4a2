package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/statetest"
)

// writerDepth is the number of batches a run's writer holds before they
// are committed (pipeline's batch writer): Prune keeps their new keys.
const writerDepth = 3

// listingRound runs one listing through a Listing the way a run does (pages
// of random sizes, a batch committed now and then), checks every answer
// against the naive comparison (a map of the stored keys and a set of the
// keys listed so far), applies the listing to state (new and moved records
// get their place, unlisted ones are deleted) and returns how many records
// were matched out of order.
func listingRound(t *testing.T, rnd *rand.Rand, st state.Store, listing []string, partial bool) (moved int, d *Listing) {
	t.Helper()
	ctx := t.Context()
	before, err := st.RecordList(ctx, "p", "s")
	require.NoError(t, err)
	d = NewListing(st, "p", "s", "#child:")
	d.Partial = partial
	listed := map[string]bool{}
	var batch []state.Record
	commitBatch := func() {
		if len(batch) > 0 {
			require.NoError(t, st.Commit(ctx, state.Commit{Pipeline: "p", Records: batch}))
			batch = nil
		}
	}
	for start := 0; start < len(listing); {
		n := 1 + rnd.IntN(40)
		keys := listing[start:min(start+n, len(listing))]
		start += len(keys)
		d.Prune(writerDepth) // between pages
		ms, _, err := d.Page(ctx, &Page{Keys: keys})
		require.NoError(t, err)
		for i, k := range keys {
			m := ms[i]
			wantDup := listed[k]
			_, stored := before[k]
			require.Equal(t, wantDup, m.Dup, "key %q at %d: duplicate", k, start-len(keys)+i)
			listed[k] = true
			if m.Dup {
				continue
			}
			require.Equal(t, stored, m.Found, "key %q: found", k)
			if m.Found {
				require.Equal(t, before[k].Hash, m.Entry.Hash)
			}
			if !m.Found || m.Moved {
				if m.Moved {
					moved++
				}
				batch = append(batch, state.Record{Source: "s", Key: k, Hash: 1 + uint64(len(k)), Ord: m.Ord})
			}
			if len(batch) >= 16 && rnd.IntN(3) == 0 {
				keys := make([]string, len(batch))
				for i, r := range batch {
					keys[i] = r.Key
				}
				commitBatch()
				d.Formed(slices.Values(keys)) // committed, and writerDepth batches after it in flight
				for range writerDepth {
					d.Formed(slices.Values([]string(nil)))
				}
			}
		}
	}
	commitBatch()
	if partial {
		return moved, d
	}
	gone, err := d.Unlisted(ctx)
	require.NoError(t, err)
	var want []string
	for k := range before {
		if !listed[k] {
			want = append(want, k)
		}
	}
	slices.Sort(gone)
	slices.Sort(want)
	require.Equal(t, want, gone, "unlisted")
	total, err := d.Total(ctx)
	require.NoError(t, err)
	require.Equal(t, len(before), total)
	var del []state.RecordRef
	for _, k := range gone {
		del = append(del, state.RecordRef{Source: "s", Key: k})
	}
	require.NoError(t, st.Commit(ctx, state.Commit{Pipeline: "p", DeleteRecords: del}))
	return moved, d
}

// TestListingAgainstNaive: listings edited at random between runs (rows
// inserted, deleted, moved, listed twice, a block deleted, the whole
// order reversed) are compared exactly like a map of stored keys would;
// small edits match almost every record in order.
func TestListingAgainstNaive(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	st := statetest.SQLite(t)
	next := 0
	newKey := func() string { next++; return fmt.Sprintf("k%05d", rnd.IntN(100000)*10+next%10) }
	var listing []string
	for range 3000 {
		listing = append(listing, newKey())
	}
	moved, _ := listingRound(t, rnd, st, listing, false)
	require.Zero(t, moved, "a first sync")
	for round := range 12 {
		// The listing without duplicates, then edited.
		seen := map[string]bool{}
		var cur []string
		for _, k := range listing {
			if !seen[k] {
				seen[k] = true
				cur = append(cur, k)
			}
		}
		edits := 0
		switch round {
		case 5: // a block of 2,500 rows deleted (more than the window)
			at := rnd.IntN(len(cur) - 2500)
			cur = slices.Delete(cur, at, at+2500)
			edits = 1
		case 9: // the order reversed
			slices.Reverse(cur)
			edits = len(cur)
		default:
			edits = 1 + rnd.IntN(30)
			for range edits {
				switch rnd.IntN(5) {
				case 0: // insert
					cur = slices.Insert(cur, rnd.IntN(len(cur)+1), newKey())
				case 1: // delete
					i := rnd.IntN(len(cur))
					cur = slices.Delete(cur, i, i+1)
				case 2: // move
					i := rnd.IntN(len(cur))
					k := cur[i]
					cur = slices.Delete(cur, i, i+1)
					cur = slices.Insert(cur, rnd.IntN(len(cur)+1), k)
				case 3: // listed twice
					i := rnd.IntN(len(cur))
					cur = slices.Insert(cur, rnd.IntN(len(cur)+1), cur[i])
				case 4: // appended
					cur = append(cur, newKey())
				}
			}
		}
		listing = cur
		moved, d := listingRound(t, rnd, st, listing, false)
		t.Logf("round %d: %d edits, %d moved, %d pending/ahead at the end", round, edits, moved, len(d.pending)+len(d.ahead))
		if round != 9 {
			require.LessOrEqual(t, moved, 2*edits+2, "round %d", round)
		}
	}
	// After the reversal the stored order follows the listing again.
	moved, _ = listingRound(t, rnd, st, listing, false)
	require.Zero(t, moved)
}

// TestListingPartial: an incremental listing is matched by look-ups; new
// records are placed after the stored ones; nothing is unlisted.
func TestListingPartial(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 4))
	st := statetest.SQLite(t)
	var listing []string
	for i := range 500 {
		listing = append(listing, fmt.Sprintf("r%04d", i))
	}
	listingRound(t, rnd, st, listing, false)
	_, d := listingRound(t, rnd, st, []string{"r0007", "new1", "r0007", "r0300", "new1", "new2"}, true)
	require.Len(t, d.children, 4, "listed keys that may have children: r0007, r0300, new1, new2")
	all, err := st.RecordScan(t.Context(), "p", "s", nil, 1000)
	require.NoError(t, err)
	require.Len(t, all, 502)
	require.Equal(t, []string{"new1", "new2"}, []string{all[500].Key, all[501].Key}, "placed after the stored records")
}

// TestListingLargerThanWindow: a table several windows long; a deleted
// block longer than the window makes the stream jump (the block is read
// again at the end, not held), a row moved from the end to the front
// costs one out-of-order match.
func TestListingLargerThanWindow(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(5, 6))
	st := statetest.SQLite(t)
	var listing []string
	for i := range 5 * windowChunk {
		listing = append(listing, fmt.Sprintf("r%06d", rnd.IntN(1_000_000)*10+i%10))
	}
	listing = slices.Compact(listing)
	listingRound(t, rnd, st, listing, false)

	// A block of two and a half windows deleted.
	cut := slices.Delete(slices.Clone(listing), windowChunk, windowChunk+5*windowChunk/2)
	moved, d := listingRound(t, rnd, st, cut, false)
	require.LessOrEqual(t, moved, 1)
	require.Less(t, len(d.pending)+len(d.ahead), 2*windowChunk+windowLow, "the block beyond the window is not held")
	require.Empty(t, d.jumped, "read again by unlisted")

	// The last row listed first, and a row listed twice.
	last := cut[len(cut)-1]
	cur := append([]string{last}, cut[:len(cut)-1]...)
	cur = slices.Insert(cur, 100, cur[5000])
	moved, _ = listingRound(t, rnd, st, cur, false)
	require.LessOrEqual(t, moved, 2)
	moved, _ = listingRound(t, rnd, st, slices.Compact(cur), false)
	require.Zero(t, moved, "in order again")
}

// TestListingRenamesAndChildren: a complete listing's new keys offset the
// gone records whose stored content they bring (Page.Content, Renames),
// one each, and an unrelated new key offsets nothing; a partial listing
// deletes the stored children (childMarker) of its records it did not
// list, and ChildrenOf finds a record's children.
func TestListingRenamesAndChildren(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := statetest.SQLite(t)
	content := map[string]uint64{"a": 11, "b": 12, "c": 12, "d": 13}
	var recs []state.Record
	for i, k := range []string{"a", "b", "c", "d", "d#child:1", "d#child:2"} {
		recs = append(recs, state.Record{Source: "s", Key: k, Hash: 1, Ord: int64(i+1) << 20, Props: []byte(strconv.FormatUint(content[k], 10))})
	}
	require.NoError(t, st.Commit(ctx, state.Commit{Pipeline: "p", Records: recs}))
	contentOf := func(props []byte) uint64 { h, _ := strconv.ParseUint(string(props), 10, 64); return h }

	d := NewListing(st, "p", "s", "#child:")
	// a stays; b's content comes back as x, c's (the same content) as
	// nothing more; y is unrelated; d and its children are not listed.
	newContent := map[string]uint64{"x": 12, "y": 99}
	pg := &Page{Keys: []string{"a", "x", "y"}}
	pg.Content = func(i int) (uint64, bool) { h, ok := newContent[pg.Keys[i]]; return h, ok }
	ms, _, err := d.Page(ctx, pg)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, false}, []bool{ms[0].Found, ms[1].Found, ms[2].Found})
	gone, err := d.Unlisted(ctx)
	require.NoError(t, err)
	slices.Sort(gone)
	require.Equal(t, []string{"b", "c", "d", "d#child:1", "d#child:2"}, gone)
	n, err := d.Renames(ctx, gone, len(gone), contentOf)
	require.NoError(t, err)
	require.Equal(t, 1, n, "x offsets one of b and c; y offsets nothing")
	loss, live, err := d.NetLoss(ctx)
	require.NoError(t, err)
	require.Equal(t, []int{5, 6}, []int{loss, live})

	p := NewListing(st, "p", "s", "#child:")
	p.Partial = true
	_, _, err = p.Page(ctx, &Page{Keys: []string{"d", "d#child:2"}})
	require.NoError(t, err)
	stale, err := p.StaleChildren(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"d#child:1"}, stale)
	children, err := p.ChildrenOf(ctx, []string{"d", "a", "d#child:1"})
	require.NoError(t, err)
	require.Equal(t, []string{"d#child:1", "d#child:2"}, children)
}

// TestListingContentOnlyWhenRenamesCount: the content hash of a record
// listed under a new key is asked for in a complete listing over stored
// records (the mass-delete guard may net a rename out of its deletions),
// never in an incremental one, which deletes nothing by absence.
func TestListingContentOnlyWhenRenamesCount(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := statetest.SQLite(t)
	require.NoError(t, st.Commit(ctx, state.Commit{Pipeline: "p", Records: []state.Record{{Source: "s", Key: "a", Hash: 1, Ord: ordStep}}}))
	for _, partial := range []bool{false, true} {
		asked := 0
		d := NewListing(st, "p", "s", "#child:")
		d.Partial = partial
		_, _, err := d.Page(ctx, &Page{Keys: []string{"a", "b"}, Content: func(int) (uint64, bool) { asked++; return 7, true }})
		require.NoError(t, err)
		if partial {
			require.Zero(t, asked, "incremental listing")
		} else {
			require.Equal(t, 1, asked, "complete listing: the new key b")
		}
	}
}

// TestListingPlacedInATieAheadOfTheStream: records that share an ord (a
// block inserted at one place, past the room ords leave) are streamed in
// key order. A record listed new or moved inside such a tie gets the
// tie's ord, and its key can sort after what the stream has read by
// then: written, it is met by the stream later, and must not count as a
// stored record the listing did not list (a deletion of the record just
// written), nor as one stored when the listing began.
func TestListingPlacedInATieAheadOfTheStream(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := statetest.SQLite(t)
	// a, u, then 3 windows of keys tied at one ord, then z.
	recs := []state.Record{{Source: "s", Key: "a", Hash: 1, Ord: ordStep}, {Source: "s", Key: "u", Hash: 1, Ord: ordStep + ordStep/2}}
	var tied []string
	for i := range 3 * windowChunk {
		k := fmt.Sprintf("t%05d", i)
		recs = append(recs, state.Record{Source: "s", Key: k, Hash: 1, Ord: 2 * ordStep})
		tied = append(tied, k)
	}
	recs = append(recs, state.Record{Source: "s", Key: "z", Hash: 1, Ord: 3 * ordStep})
	require.NoError(t, st.Commit(ctx, state.Commit{Pipeline: "p", Records: recs}))

	d := NewListing(st, "p", "s", "#child:")
	// u moves after the tie's first record, and a new key follows it;
	// both sort after every key of the tie: their place is the tie's,
	// ahead of the stream.
	first := []string{"a", "t00000", "u", "t99999"}
	ms, _, err := d.Page(ctx, &Page{Keys: first})
	require.NoError(t, err)
	var moved []state.Record
	for i, k := range first[2:] {
		m := ms[2+i]
		require.Equal(t, k == "u", m.Found, k)
		require.Equal(t, int64(2*ordStep), m.Ord, "%s: no room, the tie's ord", k)
		require.True(t, d.fetched.Less(state.RecordPos{Ord: m.Ord, Key: k}), "%s: placed ahead of the stream", k)
		moved = append(moved, state.Record{Source: "s", Key: k, Hash: 2, Ord: m.Ord})
	}
	require.NoError(t, st.Commit(ctx, state.Commit{Pipeline: "p", Records: moved}))
	d.Formed(slices.Values([]string{"t99999"}))
	for range writerDepth {
		d.Formed(slices.Values([]string(nil)))
	}
	for rest := append(tied[1:], "z"); len(rest) > 0; {
		d.Prune(writerDepth)
		n := min(100, len(rest))
		ms, _, err := d.Page(ctx, &Page{Keys: rest[:n]})
		require.NoError(t, err)
		for i, m := range ms {
			require.True(t, m.Found && !m.Dup, "key %q", rest[i])
		}
		rest = rest[n:]
	}
	ms, _, err = d.Page(ctx, &Page{Keys: []string{"t99999", "u"}})
	require.NoError(t, err)
	require.True(t, ms[0].Dup && ms[1].Dup, "listed twice")
	gone, err := d.Unlisted(ctx)
	require.NoError(t, err)
	require.Empty(t, gone, "every stored record was listed, and t99999 too")
	total, err := d.Total(ctx)
	require.NoError(t, err)
	require.Equal(t, len(recs), total, "the records stored when the listing began")
}
