package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// Plan is what a run would do, computed without embedding calls or writes.
type Plan struct {
	Pipeline string
	// Items are the records that would be added, changed or deleted, by source and key.
	Items []PlanItem
	// Unchanged counts records that would be left alone.
	Unchanged int
	// Skipped counts records that could not be read or parsed; Skips
	// names them with the reason (parts of listings that could not be
	// read too, by key prefix).
	Skipped int
	Skips   []PlanSkip
	// ConfigChanges name the settings that changed since the last run,
	// with old and new values ("chunking.max_tokens: 512 → 400");
	// SettingsUnknown is set when the last run stored none to compare.
	ConfigChanges   []string
	SettingsUnknown bool
	// ChunksToWrite counts chunk nodes that would be (re)written.
	ChunksToWrite int
	// ChunksToDelete counts chunk nodes that would be deleted.
	ChunksToDelete int
	// EmbedMisses counts distinct chunk texts not in the embedding cache:
	// the embedding calls' inputs.
	EmbedMisses int
	// EmbedTokens estimates the tokens of those texts.
	EmbedTokens int
	// Incomplete is set when a source's listing failed: no deletes would happen.
	Incomplete []string
	// GuardError is set when the deletions would trip the mass-delete guard.
	GuardError string
	// Warnings are the sources' warnings (renamed tables or columns whose
	// old names the config still uses).
	Warnings []string
}

// PlanItem is one record that would be processed.
type PlanItem struct {
	Source string
	Key    string
	Class  diff.Class
	Reason diff.Reason
	// Chunks is the record's chunk count after the run; Write and Misses how
	// many would be written and embedded.
	Chunks, Write, Misses int
	// From is the key the record would move from (Reason renamed).
	From string
}

// PlanSkip is a record (or a part of a listing, by key prefix) a run
// would quarantine, and why.
type PlanSkip struct {
	Source, Key, Reason string
}

// Count returns how many items have the class.
func (p *Plan) Count(c diff.Class) int {
	n := 0
	for _, it := range p.Items {
		if it.Class == c {
			n++
		}
	}
	return n
}

// Plan reads and diffs the sources and says what a run would do. It makes no
// embedding calls and writes nothing to the sink or state.
func (p *Pipeline) Plan(ctx context.Context, mode Mode) (*Plan, error) {
	pl := &planner{p: p, mode: mode, plan: &Plan{Pipeline: p.Name}, missSeen: map[uint64]bool{},
		r: &runner{p: p, run: &state.Run{}, mode: mode, log: p.logger()}}
	if p.Review != nil {
		// The review marks as state has them: a plan writes nothing, so it
		// does not read the experts' latest edits back from Grist.
		if err := p.Review.Load(ctx); err != nil {
			return nil, fmt.Errorf("review: %w", err)
		}
	}
	changes, known, err := p.SettingChanges(ctx)
	if err != nil {
		return nil, err
	}
	plan := pl.plan
	plan.ConfigChanges = changes
	for _, src := range p.Sources {
		if err := pl.source(ctx, src); err != nil {
			return nil, err
		}
	}
	if !known {
		for _, it := range plan.Items {
			if it.Reason == diff.ReasonConfig {
				plan.SettingsUnknown = true
				break
			}
		}
	}
	slices.SortStableFunc(plan.Items, func(a, b PlanItem) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return plan, nil
}

// planner is one Plan in progress: a runner that writes nothing, and the
// plan it fills in source by source, page by page.
type planner struct {
	p    *Pipeline
	r    *runner
	mode Mode
	plan *Plan
	// missSeen are the texts planRecord has already counted as embedding
	// cache misses (by diff.TextHash).
	missSeen map[uint64]bool
}

// source plans one source's listing from its cursor (from the start when
// the run would be a full one), and, once the listing is complete, the
// deletions and the mass-delete guard's verdict.
func (pl *planner) source(ctx context.Context, src sources.Source) error {
	p, plan := pl.p, pl.plan
	name := src.Name()
	stored := diff.NewListing(p.Store, p.Name, name, sources.ChildMarker)
	first := true
	cursor, err := p.Store.CursorGet(ctx, p.Name, name)
	if err != nil {
		return fmt.Errorf("source %q: get cursor: %w", name, err)
	}
	mark, err := p.Store.CursorGet(ctx, p.Name, configCursor(name))
	if err != nil {
		return fmt.Errorf("source %q: get config mark: %w", name, err)
	}
	if pl.mode.Full || pl.mode.Reembed || mark != p.configMark() {
		cursor = sources.FullCursor(src, cursor)
	}
	// Invariant: only a listing that ends without an error and is not
	// incremental (complete) says which stored records are deleted.
	complete := true
	// unconfirmed: the listing's end is not vouched for
	// (sources.Page.EndUnconfirmed).
	unconfirmed := false
	for page, err := range p.read(ctx, src, cursor) {
		if errors.Is(err, sources.ErrNotModified) {
			pl.warn(sources.NotModifiedWarnings(err))
			complete = false
			break
		}
		if err != nil {
			plan.Incomplete = append(plan.Incomplete, fmt.Sprintf("source %q: %v", name, err))
			complete = false
			break
		}
		if first {
			stored.Partial, first = page.Partial, false
		}
		if page.Partial {
			complete = false // an incremental listing: absent keys are not deletions
		}
		unconfirmed = page.EndUnconfirmed
		if err := pl.page(ctx, name, stored, page); err != nil {
			return err
		}
	}
	if !complete {
		return nil
	}
	return pl.deletes(ctx, name, stored, unconfirmed)
}

// warn adds warnings to the plan's, each once.
func (pl *planner) warn(ws []string) {
	for _, w := range ws {
		if !slices.Contains(pl.plan.Warnings, w) {
			pl.plan.Warnings = append(pl.plan.Warnings, w)
		}
	}
}

// page plans one page of a listing: the deletions it reports, its records
// compared with state (the unchanged ones only counted), and what it
// skips or leaves unlisted.
func (pl *planner) page(ctx context.Context, name string, stored *diff.Listing, page *sources.Page) error {
	p, r, plan := pl.p, pl.r, pl.plan
	pl.warn(page.Warnings)
	if len(page.Deleted) > 0 {
		// As the run judges them (runner.reported): with their children,
		// against the mass-delete guard.
		gone, err := r.reported(ctx, name, stored, page.Deleted)
		if err := pl.guardVerdict(name, err); err != nil {
			return err
		}
		if err := pl.gone(ctx, name, gone); err != nil {
			return err
		}
	}
	matches, froms, err := stored.Page(ctx, r.diffPage(page))
	if err != nil {
		return fmt.Errorf("source %q: %w", name, err)
	}
	var todo []item
	for i, rec := range page.Records {
		if matches[i].Dup {
			continue
		}
		it, err := r.classify(name, rec, matches[i], froms[i])
		if err != nil {
			return err
		}
		if it.class == diff.ClassUnchanged && !pl.mode.Full && !pl.mode.Reembed {
			plan.Unchanged++
			continue
		}
		todo = append(todo, it)
	}
	// The stored versions of the page's records, in one query.
	if err := r.loadStored(ctx, name, todo); err != nil {
		return err
	}
	for _, it := range todo {
		if err := p.planRecord(ctx, r, plan, it, pl.missSeen); err != nil {
			return err
		}
	}
	plan.Skipped += len(page.Skipped)
	for _, sk := range page.Skipped {
		plan.Skips = append(plan.Skips, PlanSkip{Source: name, Key: sk.Key, Reason: sk.Err.Error()})
	}
	for _, u := range page.Unlisted {
		stored.KeepPrefix(u.Prefix)
		plan.Skips = append(plan.Skips, PlanSkip{Source: name, Key: u.Prefix, Reason: "not listed, its records kept: " + u.Err.Error()})
	}
	return nil
}

// deletes plans the deletions of a complete listing: the stored records
// it did not list, their chunks, and the mass-delete guard's verdict, as
// a run judges it (runner.rule: the net loss of renames, an end not
// vouched for).
func (pl *planner) deletes(ctx context.Context, name string, stored *diff.Listing, unconfirmed bool) error {
	gone, err := pl.r.rule(ctx, stored, unconfirmed)
	if err := pl.guardVerdict(name, err); err != nil {
		return err
	}
	return pl.gone(ctx, name, gone)
}

// guardVerdict keeps the mass-delete guard's error in the plan: the first
// one, where the run stops. Other errors are returned.
func (pl *planner) guardVerdict(name string, err error) error {
	if errors.Is(err, ErrMassDelete) {
		if pl.plan.GuardError == "" {
			pl.plan.GuardError = err.Error()
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("source %q: %w", name, err)
	}
	return nil
}

// gone adds stored records a run would delete to the plan, with their
// chunks.
func (pl *planner) gone(ctx context.Context, name string, gone []string) error {
	p, plan := pl.p, pl.plan
	for start := 0; start < len(gone); start += 1000 { // bounded memory: chunks carry their text
		part := gone[start:min(start+1000, len(gone))]
		goneChunks, err := p.Store.ChunkGet(ctx, p.Name, name, part)
		if err != nil {
			return fmt.Errorf("source %q: %w", name, err)
		}
		for _, cs := range goneChunks {
			plan.ChunksToDelete += len(cs)
		}
	}
	for _, key := range gone {
		plan.Items = append(plan.Items, PlanItem{Source: name, Key: key, Class: diff.ClassDeleted, Reason: diff.ReasonDeleted})
	}
	return nil
}

// countTokens counts tokens with the pipeline's tokenizer (0 without one).
func (p *Pipeline) countTokens(s string) int {
	if p.Chunking.Tokenizer == nil {
		return 0
	}
	return p.Chunking.Tokenizer.Count(s)
}

// planRecord adds one record to the plan: its chunks to write, and the texts
// it would embed that are not in the cache (missSeen holds the misses
// already counted).
func (p *Pipeline) planRecord(ctx context.Context, r *runner, plan *Plan, it item, missSeen map[uint64]bool) error {
	out, err := r.mapRecord(ctx, it)
	if err != nil {
		plan.Skipped++
		plan.Skips = append(plan.Skips, PlanSkip{Source: it.source, Key: it.rec.Key, Reason: err.Error()})
		return nil
	}
	pi := PlanItem{Source: it.source, Key: it.rec.Key, Class: it.class, Reason: it.reason, Chunks: len(out.chunks), From: it.from}
	if it.class == diff.ClassUnchanged {
		pi.Class = diff.ClassChanged
	}
	for _, w := range out.write {
		if w {
			pi.Write++
		}
	}
	var hashes []uint64
	type want struct {
		hash   uint64
		tokens int
	}
	var wants []want
	for _, text := range out.embedTexts() {
		wants = append(wants, want{diff.TextHash(text), p.countTokens(text)})
	}
	for _, w := range wants {
		if !missSeen[w.hash] {
			hashes = append(hashes, w.hash)
		}
	}
	plan.ChunksToWrite += pi.Write
	plan.ChunksToDelete += len(out.removed)
	hit := map[uint64][]float32{}
	if len(hashes) > 0 && !r.mode.Reembed {
		hit, err = p.Store.EmbeddingsGet(ctx, p.Embedder.Model(), hashes)
		if err != nil {
			return fmt.Errorf("embedding cache: %w", err)
		}
	}
	for _, w := range wants {
		if missSeen[w.hash] {
			continue
		}
		if _, ok := hit[w.hash]; !ok {
			missSeen[w.hash] = true
			pi.Misses++
			plan.EmbedMisses++
			plan.EmbedTokens += w.tokens
		}
	}
	plan.Items = append(plan.Items, pi)
	return nil
}
