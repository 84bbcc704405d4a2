package pipeline

import (
	"context"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// The comparison of a listing with state is diff.Listing (diff/listing.go):
// which listed keys are stored, where, which moved, which were listed
// twice, and which stored keys a complete listing did not list. differ is
// the pipeline's side of it, what depends on the pipeline's types: it
// hands the comparison a sources.Page as keys and content hashes
// (contentHash), a batch's items as keys, the writer's depth, and reads
// the content hash of stored props (storedContentHash).

// differ compares one source's listing with its stored records
// (diff.Listing).
type differ struct {
	l *diff.Listing
	// partial: an incremental listing, matched by look-ups only. Set
	// before the first page; handed to the comparison by listing.
	partial bool
	// newN is the number of new keys listed so far
	// (diff.Listing.NewKeys), as of the last page.
	newN int
}

// match is the comparison's answer for one listed key (diff.Match); dup
// is Match.Dup, under the name the plan reads.
type match struct {
	diff.Match
	dup bool
}

func newDiffer(st state.Store, pipeline, source string) *differ {
	return &differ{l: diff.NewListing(st, pipeline, source, sources.ChildMarker)}
}

// listing is the comparison, told whether the listing is incremental.
func (d *differ) listing() *diff.Listing {
	d.l.Partial = d.partial
	return d.l
}

// page matches a page's records in listing order, the keys its renamed
// records move from (from[i] for page.Records[i], found false when there
// is no move), and its skipped keys (diff.Listing.Page).
func (d *differ) page(ctx context.Context, pg *sources.Page) (recs, from []match, err error) {
	dp := &diff.Page{Keys: make([]string, len(pg.Records)), Renamed: pg.Renamed}
	for i := range pg.Records {
		dp.Keys[i] = pg.Records[i].Key
	}
	for _, sk := range pg.Skipped {
		dp.Skipped = append(dp.Skipped, sk.Key)
	}
	dp.Content = func(i int) (uint64, bool) { return contentHash(pg.Records[i]) }
	ms, fms, err := d.listing().Page(ctx, dp)
	d.newN = d.l.NewKeys()
	if err != nil {
		return nil, nil, err
	}
	recs, from = make([]match, len(ms)), make([]match, len(fms))
	for i := range ms {
		recs[i] = match{Match: ms[i], dup: ms[i].Dup}
		from[i] = match{Match: fms[i], dup: fms[i].Dup}
	}
	return recs, from, nil
}

// formed tells the comparison that items form the next batch
// (diff.Listing.Formed).
func (d *differ) formed(items []item) {
	d.l.Formed(func(yield func(string) bool) {
		for i := range items {
			if !yield(items[i].rec.Key) {
				return
			}
		}
	})
}

// prune forgets the new keys of the batches committed by now: all but the
// last writerDepth handed to the writer (diff.Listing.Prune).
func (d *differ) prune() { d.l.Prune(writerDepth) }

// forget drops keys the run deleted (diff.Listing.Forget).
func (d *differ) forget(keys []string) { d.l.Forget(keys) }

// keepPrefix marks a part of the listing that could not be read
// (diff.Listing.KeepPrefix).
func (d *differ) keepPrefix(prefix string) { d.l.KeepPrefix(prefix) }

// unlisted returns the stored keys a complete listing did not list
// (diff.Listing.Unlisted).
func (d *differ) unlisted(ctx context.Context) ([]string, error) {
	return d.listing().Unlisted(ctx)
}

// staleChildren returns the stored children a partial listing did not
// list (diff.Listing.StaleChildren).
func (d *differ) staleChildren(ctx context.Context) ([]string, error) {
	return d.listing().StaleChildren(ctx)
}

// childrenOf returns the stored children of keys (diff.Listing.ChildrenOf).
func (d *differ) childrenOf(ctx context.Context, keys []string) ([]string, error) {
	return d.listing().ChildrenOf(ctx, keys)
}

// total is the number of records stored when the run began
// (diff.Listing.Total).
func (d *differ) total(ctx context.Context) (int, error) { return d.listing().Total(ctx) }

// live is the number of stored records the listing could still delete
// from (diff.Listing.Live).
func (d *differ) live(ctx context.Context) (int, error) { return d.listing().Live(ctx) }

// netLoss is what the listing read so far could still delete, with the
// live records (diff.Listing.NetLoss).
func (d *differ) netLoss(ctx context.Context) (loss, live int, err error) {
	return d.listing().NetLoss(ctx)
}

// renamed counts the records of gone whose stored content a new key of
// the listing brought (diff.Listing.Renames).
func (d *differ) renamed(ctx context.Context, gone []string, need int) (int, error) {
	return d.listing().Renames(ctx, gone, need, storedContentHash)
}

// reportDeleted counts records deleted because the source said so, for
// the mass-delete guard; deletedN is their count so far.
func (d *differ) reportDeleted(n int) { d.l.Deleted += n }
func (d *differ) deletedN() int       { return d.l.Deleted }
