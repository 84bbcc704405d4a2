package pipeline

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// recordIndex is a source's stored records as keys sorted in byte order,
// with their hash and fingerprint and a seen mark each: about 50 bytes a
// record and no map, so a listing of a million records is classified in
// bounded extra memory per record. Keys the listing has that state has not
// (new records) are remembered apart, to spot a key listed twice.
type recordIndex struct {
	keys    []string
	sums    []state.RecordSummary
	seen    []bool
	removed []bool
	live    int
	// seenLive counts the stored, not removed keys the listing had.
	seenLive int
	extra    map[string]bool
	// deleted counts the keys removed because the source reported them
	// deleted, for the mass-delete guard.
	deleted int
}

// loadRecordIndex reads a source's index from state.
func loadRecordIndex(ctx context.Context, st state.Store, pipeline, source string) (*recordIndex, error) {
	x := &recordIndex{extra: map[string]bool{}}
	err := st.RecordIndex(ctx, pipeline, source, func(key string, s state.RecordSummary) {
		x.keys = append(x.keys, key)
		x.sums = append(x.sums, s)
	})
	if err != nil {
		return nil, err
	}
	sort.Sort(byKey{x})
	x.seen = make([]bool, len(x.keys))
	x.removed = make([]bool, len(x.keys))
	x.live = len(x.keys)
	return x, nil
}

type byKey struct{ x *recordIndex }

func (b byKey) Len() int           { return len(b.x.keys) }
func (b byKey) Less(i, j int) bool { return b.x.keys[i] < b.x.keys[j] }
func (b byKey) Swap(i, j int) {
	b.x.keys[i], b.x.keys[j] = b.x.keys[j], b.x.keys[i]
	b.x.sums[i], b.x.sums[j] = b.x.sums[j], b.x.sums[i]
}

// find returns the position of a stored, not removed key, or -1.
func (x *recordIndex) find(key string) int {
	i, ok := slices.BinarySearch(x.keys, key)
	if !ok || x.removed[i] {
		return -1
	}
	return i
}

// get returns a stored record's summary.
func (x *recordIndex) get(key string) (state.RecordSummary, bool) {
	if i := x.find(key); i >= 0 {
		return x.sums[i], true
	}
	return state.RecordSummary{}, false
}

// markSeen marks a key of the listing; it reports whether it was seen already.
func (x *recordIndex) markSeen(key string) (already bool) {
	if i := x.find(key); i >= 0 {
		already, x.seen[i] = x.seen[i], true
		if !already {
			x.seenLive++
		}
		return already
	}
	already, x.extra[key] = x.extra[key], true
	return already
}

// markPrefixSeen marks every stored key under prefix as listed: a part of
// the listing that could not be read (sources.Unlisted) deletes nothing.
func (x *recordIndex) markPrefixSeen(prefix string) {
	i, _ := slices.BinarySearch(x.keys, prefix)
	for ; i < len(x.keys) && strings.HasPrefix(x.keys[i], prefix); i++ {
		if !x.seen[i] && !x.removed[i] {
			x.seenLive++
		}
		x.seen[i] = true
	}
}

// isSeen reports whether the listing had the key.
func (x *recordIndex) isSeen(key string) bool {
	if i := x.find(key); i >= 0 {
		return x.seen[i]
	}
	return x.extra[key]
}

// remove forgets a stored key (deleted by the source); a record listed later
// under the same key is then new.
func (x *recordIndex) remove(key string) {
	if i := x.find(key); i >= 0 {
		x.removed[i] = true
		x.live--
		if x.seen[i] {
			x.seenLive--
		}
	}
}

// len is the number of stored records.
func (x *recordIndex) len() int { return x.live }

// netLoss is what a complete listing read so far would delete, net of
// the records it brought under new keys: stored records not listed yet,
// minus new keys. It only falls as the listing goes on, so once it is
// within the mass-delete guard it stays there (a rename of every file
// loses nothing).
func (x *recordIndex) netLoss() int {
	return max(x.live-x.seenLive-len(x.extra), 0)
}

// unseen returns the stored keys the listing did not have.
func (x *recordIndex) unseen() []string {
	var out []string
	for i, k := range x.keys {
		if !x.removed[i] && !x.seen[i] {
			out = append(out, k)
		}
	}
	return out
}

// children returns the stored keys of the children (sources.ChildMarker)
// of the parents for which keep is true.
func (x *recordIndex) children(keep func(parent, child string) bool) []string {
	var out []string
	for i, k := range x.keys {
		if x.removed[i] {
			continue
		}
		if parent, _, ok := strings.Cut(k, sources.ChildMarker); ok && keep(parent, k) {
			out = append(out, k)
		}
	}
	return out
}
