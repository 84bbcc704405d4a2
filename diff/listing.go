package diff

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/internal/bloom"
	"github.com/kgsync/kgsync/state"
)

// Comparing a listing with state, in memory that does not grow with the
// source.
//
// A source lists its records in an order of its own (a CSV file's rows, a
// folder's paths, Grist row ids, an API's pages), and that order changes
// little between runs: rows are inserted, deleted, edited, seldom moved. So
// state keeps each record's place in the listing that last placed it
// (state.Record.Ord) and streams a source's stored records in that order
// (state.Store.RecordScan), and a Listing walks the listing and the stream
// side by side, like a merge of two sorted lists:
//
//   - a listed key found at the head of the stream, or a few entries
//     further, is matched there; the stream entries it skips are kept
//     apart (pending) — deleted, or listed later. Found further in the
//     window, it is matched there only when the next listed key follows it
//     in the stream too (the entries between were deleted); otherwise it
//     moved, and only it is taken out of the window;
//   - a key that is not in the window is looked up by key (one query per
//     page for all such keys): not stored means new; stored behind the
//     stream, and not pending, means listed twice; stored ahead of the
//     stream means moved — unless the next listed key follows it there
//     (a block of deleted records longer than the window): then the stream
//     jumps to it, and the range it jumped over is read again at the end;
//   - what the stream still holds at the end of a complete listing, with
//     what was kept apart, jumped over and not listed, are the deletions
//     (Unlisted).
//
// New and moved records get a place between their neighbours in the
// listing (ords are spaced ordStep apart, halved by each insertion), so
// the next run finds them in order. Memory is the window plus what changed
// (pending, moved, the keys of the batches not committed yet), not the
// source. Sources that could list in key order need nothing of their own:
// the stored order is whatever order they list in. A listing whose order
// changed entirely (a re-sorted file) is still compared correctly, with a
// look-up per record and memory for every moved record, once: the records
// get their new places, and the next run is in order again.
//
// An incremental listing (Listing.Partial) names only what changed: its
// keys are looked up, nothing is streamed.
//
// A Listing says which keys are stored and where; Classify, given the
// hashes, says new, changed or unchanged.

// ordStep is the space between the ords of records placed one after
// another: room for 20 insertions at one place before ords tie (ties are
// ordered by key, which costs a look-up when the key order disagrees).
const ordStep = 1 << 20

// Window bounds: the stream is read ahead windowChunk entries at a time
// while fewer than windowLow are waiting; a key found at most nearSkip
// entries past the head is matched in order without a second look.
const (
	windowChunk = 2048
	windowLow   = 2048
	nearSkip    = 8
)

// Store is the part of state a Listing reads; every state.Store
// satisfies it.
type Store interface {
	RecordScan(ctx context.Context, pipeline, source string, after *state.RecordPos, limit int) ([]state.RecordEntry, error)
	RecordSummaries(ctx context.Context, pipeline, source string, keys []string) (map[string]state.RecordEntry, error)
	RecordStats(ctx context.Context, pipeline, source string) (state.RecordStats, error)
	RecordGet(ctx context.Context, pipeline, source string, keys []string) (map[string]state.Record, error)
	RecordKeysWithPrefix(ctx context.Context, pipeline, source string, prefixes []string) ([]string, error)
}

// Page is one page of a listing as the comparison sees it: keys, not
// records.
type Page struct {
	// Keys are the keys of the page's records, in listing order.
	Keys []string
	// Renamed maps a record's key to the key its record had before (a
	// rename the source reports); a key absent or mapped to itself did not
	// move.
	Renamed map[string]string
	// Skipped are keys the page lists whose records could not be read:
	// listed, so not deleted.
	Skipped []string
	// Content returns the content hash without the key of the record
	// Keys[i] (ok false when it has none, as a table row); it is asked only
	// for records a complete listing lists under a new key while state
	// holds records of the source, for the mass-delete guard (Renames).
	// Nil: no record has one, or no rename can count (the guard is off).
	Content func(i int) (h uint64, ok bool)
}

// Match is a Listing's answer for one listed key.
type Match struct {
	// Found: the key is stored; Entry is its stored summary and place.
	Found bool
	Entry state.RecordEntry
	// Dup: the key was listed before in this listing.
	Dup bool
	// Ord is the record's place in the listing now; Moved says it differs
	// from the stored one (the record must be placed anew).
	Ord   int64
	Moved bool
}

// Listing compares one source's listing with its stored records (see the
// comment above), a page at a time. Not safe for concurrent use.
type Listing struct {
	st               Store
	pipeline, source string
	childMarker      string

	// Partial is set, before the first page, for an incremental listing:
	// it is matched by look-ups only.
	Partial bool
	// Deleted counts the records deleted because the source said so
	// (sources.Page.Deleted), for the mass-delete guard; the run adds them.
	Deleted int

	win       []state.RecordEntry // stream entries read ahead, in stream order
	head      int                 // first entry of win not consumed
	winIdx    map[string]int      // key → index in win of entries not consumed
	fetched   *state.RecordPos    // the last entry read from the stream
	exhausted bool
	streamed  int // entries read from the stream

	pending map[string]state.RecordEntry // passed over by the stream, not listed yet
	ahead   map[string]state.RecordEntry // listed, not reached by the stream yet
	// placed are keys given a place the stream has not passed (a tie
	// ahead of it, or in a range it jumped over): written there, they are
	// the listing's own records, which the stream passes (placeAhead).
	placed map[string]bool
	// jumped are ranges of the stream jumped over (not read), and
	// jumpedListed the keys in them listed already.
	jumped       []span
	jumpedListed map[string]bool
	// fresh are the new keys listed and not committed yet, by the number
	// of the batch that holds them (Formed), unformed until it is formed:
	// once committed, a key listed again is found behind the stream, a
	// duplicate. batch counts the batches formed.
	fresh map[string]int
	batch int
	// movedFrom are keys whose records moved to another key in this
	// listing (Page.Renamed): listed again, they are new.
	movedFrom map[string]bool
	// seen are the keys of a partial listing.
	seen map[string]bool
	// listed holds every key matched so far (a Bloom filter): once the
	// stream is exhausted, a key not in the window, the sets or listed is
	// certainly new, without a look-up (a first sync makes none).
	listed  bloom.Filter // the default sizing: 10 bits a key, 1 % false positives
	sureNew map[string]bool

	// kept are key prefixes of parts of the listing that could not be
	// read (KeepPrefix): their stored records are not deleted.
	kept []string

	// foundN counts the stored keys listed (records and skips), movedN
	// the stored keys records moved away from.
	foundN, movedN int

	// newContent counts the content hashes (Page.Content) of the new keys
	// listed while state holds records of the source, at most
	// maxNewContent of them: the mass-delete guard offsets a gone record
	// only by a new one with its content (a rename), never by an
	// unrelated one (a replacement).
	newContent  map[uint64]int32
	newContentN int

	prevOrd  int64
	stats    *state.RecordStats // loaded on first need
	nextOrd  int64              // partial: the ord of the next new record
	removed  map[string]bool    // deleted keys (not in state any more)
	children map[string]bool    // partial: listed keys that may have children
}

// NewListing starts the comparison of a listing of pipeline's source with
// the records st holds for it. A key holding childMarker is a child of the
// record whose key precedes it (sources.ChildMarker): a record's children
// are listed whole with it.
func NewListing(st Store, pipeline, source, childMarker string) *Listing {
	return &Listing{st: st, pipeline: pipeline, source: source, childMarker: childMarker, winIdx: map[string]int{},
		pending: map[string]state.RecordEntry{}, ahead: map[string]state.RecordEntry{},
		fresh: map[string]int{}, movedFrom: map[string]bool{}, seen: map[string]bool{}, removed: map[string]bool{},
		jumpedListed: map[string]bool{}, placed: map[string]bool{}}
}

// span is a range of the stream after from (nil: from its start) and
// before to.
type span struct {
	from *state.RecordPos
	to   state.RecordPos
}

// inJumped reports whether the place p lies in a range jumped over.
func (d *Listing) inJumped(p state.RecordPos) bool {
	for _, s := range d.jumped {
		if (s.from == nil || s.from.Less(p)) && p.Less(s.to) {
			return true
		}
	}
	return false
}

// jump moves the stream to the place after to, with probe the entries
// read from there: what the window still holds is passed over, what lies
// between it and to is a range jumped over.
func (d *Listing) jump(to state.RecordPos, probe []state.RecordEntry) {
	for j := d.head; j < len(d.win); j++ {
		e := d.win[j]
		if k, ok := d.winIdx[e.Key]; ok && k == j {
			d.pending[e.Key] = e
		}
	}
	if d.fetched == nil || d.fetched.Less(to) {
		d.jumped = append(d.jumped, span{from: d.fetched, to: to})
	}
	d.win, d.head = d.win[:0], 0
	clear(d.winIdx)
	d.fetched = &to
	d.exhausted = len(probe) < windowChunk
	if len(probe) > 0 {
		last := probe[len(probe)-1].RecordPos
		d.fetched = &last
	}
	d.streamed++ // to, found by a look-up
	d.take(probe)
}

// take appends entries read from the stream to the window, except those
// listed already (ahead) and the listing's own records placed ahead of it
// (placed, not stored when the listing began, or counted where they
// were): the stream passes them. It counts the entries streamed.
func (d *Listing) take(entries []state.RecordEntry) {
	for _, e := range entries {
		if _, ok := d.ahead[e.Key]; ok {
			delete(d.ahead, e.Key)
			d.streamed++
			continue
		}
		if d.placed[e.Key] {
			continue
		}
		d.streamed++
		d.winIdx[e.Key] = len(d.win)
		d.win = append(d.win, e)
	}
}

// followedBy reports whether the first entry after index i of the window
// not consumed yet has key next.
func (d *Listing) followedBy(i int, next string) bool {
	if next == "" {
		return false
	}
	for j := i + 1; j < len(d.win); j++ {
		if k, ok := d.winIdx[d.win[j].Key]; ok && k == j {
			return d.win[j].Key == next
		}
	}
	return false
}

// fill reads the stream ahead while fewer than windowLow entries wait.
func (d *Listing) fill(ctx context.Context) error {
	for !d.Partial && !d.exhausted && len(d.win)-d.head < windowLow {
		if d.head > windowChunk {
			// Drop the consumed entries.
			n := copy(d.win, d.win[d.head:])
			d.win = d.win[:n]
			d.head = 0
			clear(d.winIdx)
			for i, e := range d.win {
				d.winIdx[e.Key] = i
			}
		}
		page, err := d.st.RecordScan(ctx, d.pipeline, d.source, d.fetched, windowChunk)
		if err != nil {
			return fmt.Errorf("read stored records: %w", err)
		}
		if len(page) < windowChunk {
			d.exhausted = true
		}
		if len(page) > 0 {
			last := page[len(page)-1].RecordPos
			d.fetched = &last
		}
		d.take(page)
	}
	return nil
}

// behind reports whether the stream has passed the place p.
func (d *Listing) behind(p state.RecordPos) bool {
	return d.exhausted || d.fetched != nil && !d.fetched.Less(p)
}

// known reports whether the Listing can match key without a look-up.
func (d *Listing) known(key string) bool {
	if d.Partial {
		return d.seen[key]
	}
	_, w := d.winIdx[key]
	_, p := d.pending[key]
	_, a := d.ahead[key]
	_, f := d.fresh[key]
	return w || p || a || f || d.movedFrom[key] || d.jumpedListed[key] || d.placed[key]
}

// renamedFrom is the key the record listed as key moved from, "" when it
// did not move.
func (pg *Page) renamedFrom(key string) string {
	if f := pg.Renamed[key]; f != key {
		return f
	}
	return ""
}

// Page matches a page's records in listing order (recs[i] for
// pg.Keys[i]), the keys its renamed records move from (from[i], Found
// false when there is no move), and its skipped keys (which are listed,
// not deleted). This is where a listed key meets its stored hash
// (Match.Entry); Classify compares the two.
func (d *Listing) Page(ctx context.Context, pg *Page) (recs, from []Match, err error) {
	if err := d.fill(ctx); err != nil {
		return nil, nil, err
	}
	looked, asked, err := d.lookUp(ctx, pg)
	if err != nil {
		return nil, nil, err
	}
	recs = make([]Match, len(pg.Keys))
	from = make([]Match, len(pg.Keys))
	for i := range pg.Keys {
		if recs[i], from[i], err = d.record(ctx, pg, i, looked, asked); err != nil {
			return nil, nil, err
		}
	}
	for _, k := range pg.Skipped {
		m, err := d.consume(ctx, k, "", looked, asked)
		if err != nil {
			return nil, nil, err
		}
		if !m.Dup {
			d.count(m)
		}
	}
	return recs, from, nil
}

// lookUp looks up at once, in one query, the keys of a page (and the
// keys its records move from) that the window and the sets cannot answer;
// asked are the keys looked up, looked those found stored.
func (d *Listing) lookUp(ctx context.Context, pg *Page) (looked map[string]state.RecordEntry, asked map[string]bool, err error) {
	var unknown []string
	d.sureNew = map[string]bool{}
	ask := func(k string) {
		if d.known(k) {
			return
		}
		if !d.Partial && d.exhausted && len(d.jumped) == 0 && !d.listed.MayContain(k) {
			// Every stored record not listed yet is in memory: a key
			// there is not, listed for the first time, is new.
			d.sureNew[k] = true
			return
		}
		unknown = append(unknown, k)
	}
	for _, k := range pg.Keys {
		ask(k)
		if f := pg.renamedFrom(k); f != "" {
			ask(f)
		}
	}
	for _, k := range pg.Skipped {
		ask(k)
	}
	looked = map[string]state.RecordEntry{}
	if len(unknown) > 0 {
		if looked, err = d.st.RecordSummaries(ctx, d.pipeline, d.source, unknown); err != nil {
			return nil, nil, fmt.Errorf("get stored records: %w", err)
		}
	}
	asked = make(map[string]bool, len(unknown))
	for _, k := range unknown {
		asked[k] = true
	}
	return looked, asked, nil
}

// record matches the page's record i, and the key it moves from, and
// gives it its place in the listing.
func (d *Listing) record(ctx context.Context, pg *Page, i int, looked map[string]state.RecordEntry, asked map[string]bool) (m, fm Match, err error) {
	key, next := pg.Keys[i], ""
	if i+1 < len(pg.Keys) {
		next = pg.Keys[i+1]
	}
	if m, err = d.consume(ctx, key, next, looked, asked); err != nil || m.Dup {
		return m, Match{}, err
	}
	d.count(m)
	if !m.Found && !d.Partial && (d.streamed > 0 || !d.exhausted) {
		// A new key of a complete listing over stored records may be a
		// rename (Renames); an incremental listing deletes nothing by
		// absence.
		d.noteNew(pg, i)
	}
	if f := pg.renamedFrom(key); f != "" {
		if fm, err = d.consume(ctx, f, "", looked, asked); err != nil {
			return Match{}, Match{}, err
		}
		if fm.Found && !fm.Dup {
			d.movedFrom[f] = true
			d.movedN++
		} else {
			fm = Match{}
		}
	}
	if err := d.place(ctx, key, &m); err != nil {
		return Match{}, Match{}, err
	}
	if d.Partial && !strings.Contains(key, d.childMarker) {
		if d.children == nil {
			d.children = map[string]bool{}
		}
		d.children[key] = true
	}
	return m, fm, nil
}

// consume matches one listed key (see the comment above); next is the key
// listed after it ("" when unknown).
func (d *Listing) consume(ctx context.Context, key, next string, looked map[string]state.RecordEntry, asked map[string]bool) (Match, error) {
	m, err := d.match(ctx, key, next, looked, asked)
	if err == nil && !m.Dup {
		d.listed.Add(key)
	}
	return m, err
}

// match matches one listed key: against what this listing already
// matched, then the window of the stream, then the keys kept apart, then
// the page's look-ups (matchLooked).
func (d *Listing) match(ctx context.Context, key, next string, looked map[string]state.RecordEntry, asked map[string]bool) (Match, error) {
	if d.movedFrom[key] || d.removed[key] {
		// Its record moved to another key, or was deleted: listed again,
		// it is new.
		delete(d.movedFrom, key)
		delete(d.removed, key)
		d.fresh[key] = unformed
		return Match{}, nil
	}
	if _, ok := d.fresh[key]; ok {
		return Match{Dup: true}, nil
	}
	if d.Partial {
		return d.matchPartial(key, looked), nil
	}
	if err := d.fill(ctx); err != nil {
		return Match{}, err
	}
	if i, ok := d.winIdx[key]; ok {
		return d.matchInWindow(i, key, next), nil
	}
	if e, ok := d.pending[key]; ok {
		delete(d.pending, key)
		return Match{Found: true, Entry: e, Moved: true}, nil
	}
	if _, ok := d.ahead[key]; ok || d.jumpedListed[key] || d.placed[key] {
		return Match{Dup: true}, nil
	}
	if d.sureNew[key] {
		delete(d.sureNew, key)
		d.fresh[key] = unformed
		return Match{}, nil
	}
	if !asked[key] {
		// Known when the page began, gone since: listed earlier in the page.
		return Match{Dup: true}, nil
	}
	delete(asked, key) // a second occurrence is a duplicate
	return d.matchLooked(ctx, key, next, looked)
}

// matchPartial matches a key of an incremental listing by its look-up.
func (d *Listing) matchPartial(key string, looked map[string]state.RecordEntry) Match {
	if d.seen[key] {
		return Match{Dup: true}
	}
	d.seen[key] = true
	if e, ok := looked[key]; ok {
		return Match{Found: true, Entry: e}
	}
	d.fresh[key] = unformed
	return Match{}
}

// matchInWindow matches a key found at index i of the window.
func (d *Listing) matchInWindow(i int, key, next string) Match {
	if i-d.head > nearSkip && !d.followedBy(i, next) {
		// Far in the window and not followed there by the next key:
		// it moved; the entries before it stay.
		delete(d.winIdx, key)
		return Match{Found: true, Entry: d.win[i], Moved: true}
	}
	// In the window: the entries before it are passed over.
	for j := d.head; j < i; j++ {
		e := d.win[j]
		if k, ok := d.winIdx[e.Key]; ok && k == j {
			d.pending[e.Key] = e
			delete(d.winIdx, e.Key)
		}
	}
	delete(d.winIdx, key)
	d.head = i + 1
	return Match{Found: true, Entry: d.win[i]}
}

// matchLooked matches a key the page looked up: not stored, it is new;
// stored, where it lies tells whether it moved, was listed before, or
// the stream jumps to it.
func (d *Listing) matchLooked(ctx context.Context, key, next string, looked map[string]state.RecordEntry) (Match, error) {
	e, ok := looked[key]
	switch {
	case !ok:
		d.fresh[key] = unformed
		return Match{}, nil
	case d.inJumped(e.RecordPos):
		// In a range the stream jumped over: listed later than its place.
		d.jumpedListed[key] = true
		return Match{Found: true, Entry: e, Moved: true}, nil
	case d.behind(e.RecordPos):
		// The stream passed it, and it was neither in the window nor
		// passed over: listed before.
		return Match{Dup: true}, nil
	}
	if next != "" {
		// Ahead of the stream: a moved record, or the first record after
		// a long block of deleted ones — then the next key follows it.
		probe, err := d.st.RecordScan(ctx, d.pipeline, d.source, &e.RecordPos, windowChunk)
		if err != nil {
			return Match{}, fmt.Errorf("read stored records: %w", err)
		}
		if len(probe) > 0 && probe[0].Key == next {
			d.jump(e.RecordPos, probe)
			return Match{Found: true, Entry: e}, nil
		}
	}
	d.ahead[key] = e
	return Match{Found: true, Entry: e, Moved: true}, nil
}

// place gives the matched record key its place in the listing: a record
// found in order keeps its ord, a new or moved one gets one between the
// previous record's and the stream's next entry's.
func (d *Listing) place(ctx context.Context, key string, m *Match) error {
	if d.Partial {
		if m.Found {
			m.Ord = m.Entry.Ord
			return nil
		}
		if d.stats == nil {
			if err := d.loadStats(ctx); err != nil {
				return err
			}
		}
		d.nextOrd += ordStep
		m.Ord = d.nextOrd
		return nil
	}
	if m.Found && !m.Moved {
		m.Ord = m.Entry.Ord
		d.prevOrd = max(d.prevOrd, m.Ord)
		return nil
	}
	if err := d.fill(ctx); err != nil {
		return err
	}
	if d.head < len(d.win) {
		next := d.win[d.head].Ord
		switch {
		case next-d.prevOrd >= 2:
			m.Ord = d.prevOrd + (next-d.prevOrd)/2
		default:
			m.Ord = d.prevOrd // no room left: a tie, ordered by key
		}
	} else {
		m.Ord = d.prevOrd + ordStep
	}
	m.Moved = m.Found && m.Ord != m.Entry.Ord
	if !m.Found || m.Moved {
		d.placeAhead(state.RecordPos{Ord: m.Ord, Key: key})
	}
	d.prevOrd = m.Ord
	return nil
}

// placeAhead notes a new or moved record placed at p when the stream has
// not passed p, or passed it by a jump (a tie with the stream's head, whose
// key sorts after what the stream read): written there, it would be met
// by the stream again (or by Unlisted in the range jumped over) as a
// stored record not listed, a deletion. A place between two ords is
// behind the stream, and after every range jumped over.
func (d *Listing) placeAhead(p state.RecordPos) {
	if !d.behind(p) || d.inJumped(p) {
		d.placed[p.Key] = true
	}
}

func (d *Listing) loadStats(ctx context.Context) error {
	st, err := d.st.RecordStats(ctx, d.pipeline, d.source)
	if err != nil {
		return fmt.Errorf("count stored records: %w", err)
	}
	d.stats = &st
	d.nextOrd = st.MaxOrd
	return nil
}

// unformed is the batch number of a new key whose batch is not formed yet.
const unformed = math.MaxInt

// Formed tells the Listing that the records of keys form the next batch
// (handed to the writer, or held to be handed over in order once the
// mass-delete guard rules): their new keys get its number.
func (d *Listing) Formed(keys iter.Seq[string]) {
	for k := range keys {
		if d.fresh[k] == unformed {
			d.fresh[k] = d.batch
		}
	}
	d.batch++
}

// Prune forgets the new keys of batches committed by now (all but the
// last depth formed, which the writer may still hold; keys of batches not
// formed yet are kept): from the next page on, a key listed again is found
// in state, behind the stream. The run calls it between pages, when it
// holds no batch back.
func (d *Listing) Prune(depth int) {
	for k, b := range d.fresh {
		if b < d.batch-depth {
			delete(d.fresh, k)
		}
	}
}

func (d *Listing) count(m Match) {
	if m.Found {
		d.foundN++
	}
}

// maxNewContent bounds the content hashes of new keys a Listing keeps for
// the mass-delete guard (12 bytes and map overhead each, about 8 MiB at
// the bound); new keys past it offset no deletion.
const maxNewContent = 256 << 10

// noteNew remembers the content hash of the page's record i, listed under
// a new key.
func (d *Listing) noteNew(pg *Page, i int) {
	if d.newContentN >= maxNewContent || pg.Content == nil {
		return
	}
	h, ok := pg.Content(i)
	if !ok {
		return
	}
	if d.newContent == nil {
		d.newContent = map[uint64]int32{}
	}
	d.newContent[h]++
	d.newContentN++
}

// Renames counts the records of gone (stored keys a complete listing did
// not list) whose stored content a new key of the listing brought (each
// new key offsets one gone record at most), reading their stored props a
// batch at a time; contentOf reads the content hash from a record's
// stored props (0: none). It stops once enough are found that need
// reaches 0 (need is how many it takes for the guard to pass).
func (d *Listing) Renames(ctx context.Context, gone []string, need int, contentOf func(props []byte) uint64) (int, error) {
	if len(d.newContent) == 0 || need <= 0 {
		return 0, nil
	}
	left := maps.Clone(d.newContent)
	n := 0
	for i := 0; i < len(gone) && n < need; i += 1000 {
		part := gone[i:min(i+1000, len(gone))]
		recs, err := d.st.RecordGet(ctx, d.pipeline, d.source, part)
		if err != nil {
			return 0, fmt.Errorf("get stored records: %w", err)
		}
		for _, k := range part {
			rec, ok := recs[k]
			if !ok {
				continue
			}
			h := contentOf(rec.Props)
			if h != 0 && left[h] > 0 {
				left[h]--
				n++
			}
		}
	}
	return n, nil
}

// Live is the number of records stored when the run began, less those
// deleted or moved to another key since, for the mass-delete guard.
func (d *Listing) Live(ctx context.Context) (int, error) {
	total, err := d.Total(ctx)
	return total - d.Deleted - d.movedN, err
}

// NetLoss is what the listing read so far could still delete: stored
// records not listed yet (a part of the listing that could not be read
// counts as not listed, so it errs on the side of holding; new keys offset
// nothing, being renames only when their content matches a gone record's,
// which only the end of the listing tells), with the live records.
func (d *Listing) NetLoss(ctx context.Context) (loss, live int, err error) {
	if live, err = d.Live(ctx); err != nil {
		return 0, 0, err
	}
	return max(live-d.foundN, 0), live, nil
}

// Total is the number of records stored when the run began, for the
// mass-delete guard.
func (d *Listing) Total(ctx context.Context) (int, error) {
	if d.Partial || !d.exhausted || len(d.jumped) > 0 {
		if d.stats == nil {
			if err := d.loadStats(ctx); err != nil {
				return 0, err
			}
		}
		return d.stats.Count, nil
	}
	return d.streamed, nil
}

// KeepPrefix marks a part of the listing that could not be read
// (sources.Unlisted): its stored records are listed, not deleted.
func (d *Listing) KeepPrefix(prefix string) { d.kept = append(d.kept, prefix) }

// isKept reports whether key lies in a part of the listing that could not
// be read.
func (d *Listing) isKept(key string) bool {
	for _, p := range d.kept {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Forget drops keys the run deleted (reported deleted by the source, with
// their children): listed later, they are new.
func (d *Listing) Forget(keys []string) {
	for _, k := range keys {
		delete(d.winIdx, k)
		delete(d.pending, k)
		delete(d.ahead, k)
		delete(d.jumpedListed, k)
		delete(d.placed, k)
		d.removed[k] = true
	}
}

// Unlisted returns, after a complete listing, the stored keys it did not
// list: the records passed over and never listed, the rest of the stream
// and what it jumped over. These are the deletions, before the
// mass-delete guard rules on them; its memory is theirs.
func (d *Listing) Unlisted(ctx context.Context) ([]string, error) {
	var out []string
	for k := range d.pending {
		out = append(out, k)
	}
	for {
		for j := d.head; j < len(d.win); j++ {
			e := d.win[j]
			if k, ok := d.winIdx[e.Key]; ok && k == j {
				out = append(out, e.Key)
			}
		}
		d.win, d.head = d.win[:0], 0
		clear(d.winIdx)
		if d.exhausted {
			break
		}
		if err := d.fill(ctx); err != nil {
			return nil, err
		}
	}
	for _, sp := range d.jumped {
		var err error
		if out, err = d.unlistedIn(ctx, sp, out); err != nil {
			return nil, err
		}
	}
	d.jumped = nil
	if len(d.kept) > 0 {
		out = slices.DeleteFunc(out, d.isKept)
	}
	return out, nil
}

// unlistedIn appends to out the keys of a range the stream jumped over
// that the listing did not list, reading the range again.
func (d *Listing) unlistedIn(ctx context.Context, sp span, out []string) ([]string, error) {
	after := sp.from
	for done := false; !done; {
		page, err := d.st.RecordScan(ctx, d.pipeline, d.source, after, windowChunk)
		if err != nil {
			return nil, fmt.Errorf("read stored records: %w", err)
		}
		done = len(page) < windowChunk
		for _, e := range page {
			if !e.RecordPos.Less(sp.to) {
				done = true
				break
			}
			if d.placed[e.Key] && !d.jumpedListed[e.Key] {
				continue // placed here by this listing (placeAhead)
			}
			d.streamed++
			if !d.jumpedListed[e.Key] && !d.removed[e.Key] {
				out = append(out, e.Key)
			}
		}
		if len(page) > 0 {
			last := page[len(page)-1].RecordPos
			after = &last
		}
	}
	return out, nil
}

// StaleChildren returns, after a partial listing, the stored children of
// the records it listed that it did not list: the listing names a
// record's children whole.
func (d *Listing) StaleChildren(ctx context.Context) ([]string, error) {
	if len(d.children) == 0 {
		return nil, nil
	}
	prefixes := make([]string, 0, len(d.children))
	for k := range d.children {
		prefixes = append(prefixes, k+d.childMarker)
	}
	keys, err := d.st.RecordKeysWithPrefix(ctx, d.pipeline, d.source, prefixes)
	if err != nil {
		return nil, fmt.Errorf("list stored children: %w", err)
	}
	var out []string
	for _, k := range keys {
		if !d.seen[k] && !d.removed[k] && !d.isKept(k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// ChildrenOf returns the stored children of keys.
func (d *Listing) ChildrenOf(ctx context.Context, keys []string) ([]string, error) {
	prefixes := make([]string, 0, len(keys))
	for _, k := range keys {
		if !strings.Contains(k, d.childMarker) {
			prefixes = append(prefixes, k+d.childMarker)
		}
	}
	if len(prefixes) == 0 {
		return nil, nil
	}
	out, err := d.st.RecordKeysWithPrefix(ctx, d.pipeline, d.source, prefixes)
	if err != nil {
		return nil, fmt.Errorf("list stored children: %w", err)
	}
	return out, nil
}
