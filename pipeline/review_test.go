package pipeline_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// expert is who edits the review tables in these tests.
var expert = gristtest.User{Email: "ann@example.com", Name: "Ann"}

// reviewRig is a files pipeline reviewed in a Grist test server.
type reviewRig struct {
	root  string
	srv   *gristtest.Server
	store *sqlite.Store
	graph *graphtest.Graph
	emb   *countingEmbedder
	p     *pipeline.Pipeline
	clock time.Time
}

func newReviewRig(t *testing.T, maxTokens int) *reviewRig {
	t.Helper()
	ctx := t.Context()
	rg := &reviewRig{root: t.TempDir(), srv: gristtest.New(t), graph: graphtest.New(),
		emb: &countingEmbedder{Embedder: hashing.New("hashing-v1", 64)}, clock: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	rg.srv.SetNow(func() time.Time { return rg.clock })
	var err error
	rg.store, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rg.store.Close() })
	rg.configure(t, maxTokens)
	return rg
}

// configure (re)builds the pipeline with a chunk size.
func (rg *reviewRig) configure(t *testing.T, maxTokens int) {
	t.Helper()
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	src, err := files.New("docs", config.FilesSource{Root: rg.root, Anchor: "Document", MaxFileBytes: 1 << 24}, chunker.Formats(), nil,
		files.WithTextCheck(pipeline.TextCheck))
	require.NoError(t, err)
	rv, err := review.New(review.Config{
		Pipeline: "docs",
		Grist: grist.Config{Server: rg.srv.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
			RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond},
		DocumentsTable: "Documents", ElementsTable: "Elements", Store: rg.store,
		Now: func() time.Time { return rg.clock },
	})
	require.NoError(t, err)
	rg.p = &pipeline.Pipeline{
		Name: "docs", Sources: []sources.Source{src}, Embedder: rg.emb, Sink: rg.graph, Store: rg.store,
		Chunking:  chunker.Options{MaxTokens: maxTokens, OverlapTokens: 16, Tokenizer: tok},
		BatchSize: 4, MaxDeleteRatio: 1, Fingerprint: uint64(maxTokens), Review: rv,
	}
}

func (rg *reviewRig) sync(t *testing.T) state.Run {
	t.Helper()
	rg.srv.ResetCounts()
	rg.emb.reset()
	res, err := rg.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, state.StatusSucceeded, res.Run.Status, res.Run.Error)
	require.Empty(t, rg.graph.Dangling())
	return res.Run
}

// requests summarises the Grist requests since the last sync began.
func (rg *reviewRig) requests() string {
	var parts []string
	total := 0
	for _, c := range []struct{ m, p string }{{"GET", "/states"}, {"GET", "/compare"}, {"GET", "/tables"}, {"GET", "/columns"},
		{"POST", "/sql"}, {"GET", "/records"}, {"POST", "/tables"}, {"POST", "/columns"}, {"POST", "/apply"},
		{"POST", "/records"}, {"PATCH", "/records"}, {"POST", "/records/delete"}} {
		if n := rg.srv.Requests(c.m, c.p); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s ×%d", c.m, c.p, n))
			total += n
		}
	}
	return fmt.Sprintf("%d requests (%s)", total, strings.Join(parts, ", "))
}

// step logs a step's Grist requests and embedding calls.
func (rg *reviewRig) step(t *testing.T, name string, run state.Run) {
	t.Helper()
	t.Logf("%-34s Grist %s; embedding calls %d, chunks embedded %d; rows written %d",
		name+":", rg.requests(), run.Counts.EmbedRequests, run.Counts.ChunksEmbedded, run.Counts.ReviewRowsWritten)
}

func (rg *reviewRig) write(t *testing.T, name, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(rg.root, name), []byte(text), 0o644))
}

// rowOf returns the Elements row whose parsed text starts with prefix.
func (rg *reviewRig) rowOf(t *testing.T, prefix string) (int64, map[string]any) {
	t.Helper()
	var id int64
	var row map[string]any
	for rid, r := range rg.srv.Table("Elements") {
		if txt, _ := r["parsed_text"].(string); strings.HasPrefix(txt, prefix) {
			require.Zero(t, id, "two rows start with %q", prefix)
			id, row = rid, r
		}
	}
	require.NotZero(t, id, "no row starts with %q", prefix)
	return id, row
}

// chunkOf returns the id of the chunk covering element id.
func (rg *reviewRig) chunkOf(t *testing.T, id string) string {
	t.Helper()
	var out string
	for _, cid := range rg.graph.Nodes("Chunk") {
		n, _ := rg.graph.Node("Chunk", cid)
		els, _ := n["elements"].([]any)
		for _, e := range els {
			if e == id {
				require.Empty(t, out, "two chunks cover %s", id)
				out = cid
			}
		}
	}
	require.NotEmpty(t, out, "no chunk covers %s", id)
	return out
}

// chunkWith returns the ids of the chunks whose text contains s.
func (rg *reviewRig) chunkWith(s string) []string {
	var out []string
	for _, id := range rg.graph.Nodes("Chunk") {
		n, _ := rg.graph.Node("Chunk", id)
		if txt, _ := n["text"].(string); strings.Contains(txt, s) {
			out = append(out, id)
		}
	}
	return out
}

// regulation is a markdown document of 300 elements: 15 articles (15
// sections) with 19 paragraphs each (285 leaves); each paragraph's text
// is unique and names its place.
func regulation(edit func(article, para int) string) string {
	var b strings.Builder
	for a := 1; a <= 15; a++ {
		fmt.Fprintf(&b, "## Article %d Obligations of group %d\n\n", a, a)
		for p := 1; p <= 19; p++ {
			if edit != nil {
				if s := edit(a, p); s != "" {
					if s != "-" {
						b.WriteString(s + "\n\n")
					}
					continue
				}
			}
			fmt.Fprintf(&b, "Paragraph %d of article %d: the operator of a widget in class %d shall keep records %d for inspection by the authority, "+
				"and report incidents concerning item %d-%d without undue delay.\n\n", p, a, a, p, a, p)
		}
	}
	return b.String()
}

// TestReviewLoop runs the whole loop over the Grist test server: publish,
// correct, an edit elsewhere, a chunk-size change, a conflict and its
// resolution, exclude, a mandatory link to another document, an element
// that disappears, a document deleted.
func TestReviewLoop(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	rg.write(t, "widgets.md", regulation(nil))
	rg.write(t, "annex.md", "# Annex\n\n## Forms\n\nThe incident form lists the widget, the class and the date.\n")

	// 1. First run: tables created, every element published.
	run := rg.sync(t)
	require.Equal(t, 2, run.Counts.RecordsNew)
	require.Equal(t, 2, rg.srv.RowCount("Documents"))
	require.Equal(t, 300+3, rg.srv.RowCount("Elements"), "300 elements, and the annex's two sections and paragraph")
	require.Zero(t, rg.srv.Responses(413))
	rg.step(t, "first run (publish 303 rows)", run)
	require.Empty(t, run.Warnings)

	// 2. A correction of one element re-embeds only the chunk or two that
	// hold it.
	target := "Paragraph 7 of article 9:"
	rowID, row := rg.rowOf(t, "Paragraph 7 of article 9:")
	require.Contains(t, row["parsed_text"], target)
	require.Len(t, rg.chunkWith(target), 1)
	corrected := "Paragraph 7 of article 9: the operator of a widget in class 9 shall keep the inspection log for ten years."
	rg.clock = rg.clock.Add(time.Hour)
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{rowID: {"corrected_text": corrected}})
	require.Equal(t, expert.Email, rg.srv.Table("Elements")[rowID]["corrected_by"])
	run = rg.sync(t)
	correctionRows := run.Counts.ReviewRowsWritten
	require.Equal(t, 1, run.Counts.RecordsChanged)
	require.LessOrEqual(t, run.Counts.ChunksEmbedded, 2)
	require.Positive(t, run.Counts.ChunksEmbedded)
	require.Equal(t, 1, run.Counts.ReviewExpertChanges)
	rg.step(t, "one correction", run)
	require.Empty(t, run.Warnings)
	require.NotEmpty(t, rg.chunkWith("ten years"))
	require.Empty(t, rg.chunkWith("shall keep records 7 for inspection by the authority, and report incidents concerning item 9-7"))
	chunk, _ := rg.graph.Node("Chunk", rg.chunkOf(t, row["element"].(string)))
	require.Contains(t, chunk["text"], "ten years")
	require.Equal(t, "expert", chunk["text_source"])
	require.Equal(t, expert.Email, chunk["corrected_by"])
	el, ok := rg.graph.Node("Element", row["element"].(string))
	require.True(t, ok)
	require.Equal(t, corrected, el["text"])
	require.Equal(t, "expert", el["text_source"])
	require.Equal(t, expert.Email, el["corrected_by"])
	require.Equal(t, "2026-12-01T10:00:00Z", el["corrected_at"])
	require.Contains(t, el["parsed_text"], "shall keep records 7")
	_, sib := rg.rowOf(t, "Paragraph 6 of article 9:")
	other, _ := rg.graph.Node("Element", sib["element"].(string))
	require.Equal(t, "parsed", other["text_source"])

	// A run with nothing changed writes nothing and embeds nothing.
	run = rg.sync(t)
	rg.step(t, "no change", run)
	require.Empty(t, run.Warnings)
	// When the correction moved a chunk boundary, the run patched the
	// chunk column of the elements that changed chunk, and this run reads
	// those rows back once (/sql): /compare cannot tell them from an
	// expert's edit.
	readBack := 0
	if correctionRows > 0 {
		readBack = 1
	}
	require.LessOrEqual(t, rg.srv.Requests("", ""), 4+readBack, "/states, /compare (kgsync's own writes moved the document), /tables, /columns")
	require.Zero(t, run.Counts.RecordsChanged)
	require.Zero(t, run.Counts.EmbedRequests)
	require.Zero(t, rg.srv.Requests("POST", "/records")+rg.srv.Requests("PATCH", "/records"))

	// 3. An edit elsewhere in the file keeps the correction.
	rg.write(t, "widgets.md", regulation(func(a, p int) string {
		if a == 2 && p == 3 {
			return "Paragraph 3 of article 2: widgets of class 2 are exempt from the daily check."
		}
		return ""
	}))
	run = rg.sync(t)
	rg.step(t, "edit elsewhere in the file", run)
	require.Empty(t, run.Warnings)
	require.Equal(t, 1, run.Counts.RecordsChanged)
	require.NotEmpty(t, rg.chunkWith("ten years"))
	require.LessOrEqual(t, run.Counts.ChunksEmbedded, 2)
	_, row = rg.rowOf(t, "Paragraph 7 of article 9:")
	require.Equal(t, false, row["needs_review"])

	// 4. A chunk-size change regroups every chunk; the correction stays.
	rg.configure(t, 256)
	run = rg.sync(t)
	rg.step(t, "max_tokens 128 → 256", run)
	require.Empty(t, run.Warnings)
	require.Equal(t, 2, run.Counts.RecordsChanged)
	require.NotEmpty(t, rg.chunkWith("ten years"))
	require.Empty(t, rg.chunkWith("shall keep records 7 for inspection by the authority, and report incidents concerning item 9-7"))
	_, row = rg.rowOf(t, "Paragraph 7 of article 9:")
	require.Equal(t, corrected, row["corrected_text"])
	require.Equal(t, 303, rg.srv.RowCount("Elements"), "elements are the stable unit: no row added or lost")

	// 5. The file changes the corrected paragraph too: a conflict, flagged
	// with both texts, the correction kept.
	newParsed := "Paragraph 7 of article 9: the operator shall keep records 7 for twelve months."
	rg.write(t, "widgets.md", regulation(func(a, p int) string {
		switch {
		case a == 2 && p == 3:
			return "Paragraph 3 of article 2: widgets of class 2 are exempt from the daily check."
		case a == 9 && p == 7:
			return newParsed
		}
		return ""
	}))
	run = rg.sync(t)
	rg.step(t, "conflict", run)
	require.Empty(t, run.Warnings)
	require.Equal(t, 1, run.Counts.ReviewConflicts)
	rowID, row = rg.rowOf(t, "Paragraph 7 of article 9:")
	require.Equal(t, true, row["needs_review"])
	require.Equal(t, newParsed, row["parsed_text"])
	require.Contains(t, row["corrected_from"], "shall keep records 7 for inspection")
	require.Contains(t, row["review_reason"], "parsed text changed")
	require.Equal(t, corrected, row["corrected_text"])
	require.NotEmpty(t, rg.chunkWith("ten years"), "the correction still applies")
	require.Empty(t, rg.chunkWith("twelve months"))
	el, _ = rg.graph.Node("Element", row["element"].(string))
	require.Equal(t, pipeline.ReviewNeeded, el["review"])
	counts, err := rg.store.ReviewCounts(t.Context(), "docs")
	require.NoError(t, err)
	require.Equal(t, 1, counts.Flagged)

	// The expert checks it and unticks needs_review: resolved.
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{rowID: {"needs_review": false}})
	run = rg.sync(t)
	rg.step(t, "conflict resolved", run)
	require.Empty(t, run.Warnings)
	el, _ = rg.graph.Node("Element", row["element"].(string))
	require.Nil(t, el["review"])
	_, row = rg.rowOf(t, "Paragraph 7 of article 9:")
	require.Equal(t, false, row["needs_review"])
	require.Equal(t, "", row["review_reason"])
	counts, err = rg.store.ReviewCounts(t.Context(), "docs")
	require.NoError(t, err)
	require.Zero(t, counts.Flagged)

	// 6. Exclude: the element leaves chunks and graph; its row stays.
	exID, exRow := rg.rowOf(t, "Paragraph 2 of article 4:")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{exID: {"exclude": true}})
	run = rg.sync(t)
	rg.step(t, "exclude", run)
	require.Empty(t, run.Warnings)
	_, ok = rg.graph.Node("Element", exRow["element"].(string))
	require.False(t, ok)
	require.Empty(t, rg.chunkWith("Paragraph 2 of article 4:"))
	require.LessOrEqual(t, run.Counts.ChunksEmbedded, 2)

	// 7. mandatory_with to another document's element: a MANDATORY edge
	// from the expert.
	formID, formRow := rg.rowOf(t, "The incident form")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{rowID: {"mandatory_with": []any{"L", formID}, "note": "the form goes with the log"}})
	run = rg.sync(t)
	rg.step(t, "mandatory_with", run)
	require.Empty(t, run.Warnings)
	var mand []graphtest.Edge
	for _, e := range rg.graph.Edges() {
		if e.Type == "MANDATORY" {
			mand = append(mand, e)
		}
	}
	require.Len(t, mand, 1)
	require.Equal(t, row["element"], mand[0].From.ID)
	require.Equal(t, formRow["element"], mand[0].To.ID)
	require.Equal(t, "expert", rg.graph.EdgeProps(mand[0])["source"])
	require.Equal(t, "the form goes with the log", rg.graph.EdgeProps(mand[0])["note"])

	// 8. The corrected paragraph disappears from the file: its row is kept,
	// marked missing, flagged; nothing else of it is lost.
	rg.write(t, "widgets.md", regulation(func(a, p int) string {
		if a == 9 && p == 7 {
			return "-"
		}
		return ""
	}))
	run = rg.sync(t)
	rg.step(t, "corrected element removed", run)
	require.Empty(t, run.Warnings)
	_, row = rg.rowOf(t, "Paragraph 7 of article 9:")
	require.Equal(t, review.StatusMissing, row["status"])
	require.Equal(t, true, row["needs_review"])
	require.Equal(t, corrected, row["corrected_text"])
	require.Contains(t, row["review_reason"], "no longer in the document")
	require.Empty(t, rg.chunkWith("ten years"))

	// 9. The annex is deleted: its rows go, except the form's, which an
	// expert's link points at: kept and marked.
	require.NoError(t, os.Remove(filepath.Join(rg.root, "annex.md")))
	run = rg.sync(t)
	rg.step(t, "document deleted", run)
	require.Empty(t, run.Warnings)
	require.Equal(t, 1, run.Counts.RecordsDeleted)
	_, formRow = rg.rowOf(t, "The incident form")
	require.Equal(t, review.StatusDeleted, formRow["status"])
	require.Equal(t, true, formRow["needs_review"])
	_, err = findRow(rg, "annex.md › annex")
	require.Error(t, err, "the annex's other rows are deleted")
	require.Equal(t, 2, rg.srv.RowCount("Documents"), "the annex's row stays for its kept element")
}

func findRow(rg *reviewRig, suffix string) (int64, error) {
	for id, r := range rg.srv.Table("Elements") {
		if el, _ := r["element"].(string); strings.HasSuffix(el, suffix) {
			return id, nil
		}
	}
	return 0, fmt.Errorf("no row ends with %q", suffix)
}

// TestReviewSurvivesGristFailures: Grist failing during the read-back is a
// warning (the run succeeds with the corrections state holds); failing
// during the publish leaves the document pending; a POST whose answer was
// lost (the rows were added) is reconciled on the next run without
// duplicate rows.
func TestReviewSurvivesGristFailures(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	rg.write(t, "rules.md", "# Rules\n\nKeep the records for five years.\n\nDestroy them afterwards.\n")

	// Every POST /records of the first publish fails after Grist applied
	// it (the answer is lost): rows exist that state does not know.
	lost := true
	rg.srv.SetLoseAnswer(func(r *http.Request) bool {
		if lost && r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/Elements/records") {
			lost = false
			return true
		}
		return false
	})
	run := rg.sync(t)
	require.NotEmpty(t, run.Warnings, "the failed publish is a warning")
	require.Equal(t, 3, rg.srv.RowCount("Elements"), "Grist applied the lost POST")
	counts, err := rg.store.ReviewCounts(t.Context(), "docs")
	require.NoError(t, err)
	require.Equal(t, 1, counts.Pending)

	// Next run: the document is reconciled; no duplicate rows.
	run = rg.sync(t)
	require.Empty(t, run.Warnings)
	require.Equal(t, 3, rg.srv.RowCount("Elements"))
	counts, err = rg.store.ReviewCounts(t.Context(), "docs")
	require.NoError(t, err)
	require.Zero(t, counts.Pending)
	require.Equal(t, 3, counts.Elements)

	// A correction, then Grist is down for the whole next run: the run
	// succeeds with a warning; the correction arrives once Grist is back.
	id, _ := rg.rowOf(t, "Keep the records")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id: {"corrected_text": "Keep the records for ten years."}})
	rg.srv.SetFault(func(*http.Request) (int, string) { return 503, "down" })
	run = rg.sync(t)
	require.NotEmpty(t, run.Warnings)
	require.Empty(t, rg.chunkWith("ten years"))
	rg.srv.SetFault(nil)
	rg.sync(t)
	require.NotEmpty(t, rg.chunkWith("ten years"))

	// An expert who typed into parsed_text made a correction: it moves to
	// corrected_text, parsed_text is restored.
	id2, _ := rg.rowOf(t, "Destroy them")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id2: {"parsed_text": "Shred them afterwards."}})
	rg.sync(t)
	row := rg.srv.Table("Elements")[id2]
	require.Equal(t, "Shred them afterwards.", row["corrected_text"])
	require.Equal(t, "Destroy them afterwards.", row["parsed_text"])
	require.NotEmpty(t, rg.chunkWith("Shred them"))

	// An expert deleting a row drops its input: the element is published
	// again as parsed.
	rg.srv.DeleteRows("Elements", id)
	rg.sync(t)
	require.Empty(t, rg.chunkWith("ten years"))
	require.NotEmpty(t, rg.chunkWith("five years"))
	_, row = rg.rowOf(t, "Keep the records")
	require.Equal(t, "", row["corrected_text"])
}

// TestReviewFollowsRenumberedElements: under a parent of few leaves,
// elements are named by ordinal (p1, p2…), so a paragraph inserted before
// a corrected one renames it; the correction follows its text, and the
// rows are not duplicated.
func TestReviewFollowsRenumberedElements(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	rg.write(t, "rules.md", "# Rules\n\nAlpha rule applies.\n\nBeta rule applies.\n\nGamma rule applies.\n")
	rg.sync(t)
	id, row := rg.rowOf(t, "Beta rule")
	require.True(t, strings.HasSuffix(row["element"].(string), "p2"), row["element"])
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id: {"corrected_text": "Beta rule applies twice."}})
	rg.sync(t)
	require.NotEmpty(t, rg.chunkWith("twice"))

	rg.write(t, "rules.md", "# Rules\n\nNew first rule.\n\nAlpha rule applies.\n\nBeta rule applies.\n\nGamma rule applies.\n")
	rg.sync(t)
	require.NotEmpty(t, rg.chunkWith("twice"), "the correction followed its element")
	require.Empty(t, rg.chunkWith("Beta rule applies."))
	id2, row := rg.rowOf(t, "Beta rule")
	require.Equal(t, id, id2, "the same row, so the expert's row and links stay")
	require.True(t, strings.HasSuffix(row["element"].(string), "p3"), row["element"])
	require.Equal(t, false, row["needs_review"])
	require.Equal(t, 5, rg.srv.RowCount("Elements"), "one section and four paragraphs")
	el, _ := rg.graph.Node("Element", row["element"].(string))
	require.Equal(t, "expert", el["text_source"])
}

// TestReviewPlanKnowsTheMarks: a plan after a correction was applied
// finds nothing to do (it folds the same review marks into the hashes).
func TestReviewPlanKnowsTheMarks(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	rg.write(t, "rules.md", "# Rules\n\nKeep the records for five years.\n")
	rg.sync(t)
	id, _ := rg.rowOf(t, "Keep the records")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id: {"corrected_text": "Keep the records for ten years."}})
	rg.sync(t)
	rg.configure(t, 128) // a new process: nothing in memory
	plan, err := rg.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Empty(t, plan.Items, "nothing to process")
	require.Equal(t, 1, plan.Unchanged)
}

// TestReviewPublishCutShort: a process that dies after a batch's graph
// commit and before its publish left the document pending (Prepare runs
// before the write); the next run processes and publishes it, though its
// file did not change.
func TestReviewPublishCutShort(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	rg.write(t, "rules.md", "# Rules\n\nKeep the records for five years.\n")
	rg.sync(t)
	content, err := os.ReadFile(filepath.Join(rg.root, "rules.md"))
	require.NoError(t, err)
	root, err := chunker.Parse("md", content)
	require.NoError(t, err)
	a, err := rg.p.Review.Apply(t.Context(), "docs", "rules.md", "docs:rules.md", root)
	require.NoError(t, err)
	require.NoError(t, rg.p.Review.Prepare(t.Context(), []*review.Applied{a}))
	// … and the process dies: no Publish.
	rg.configure(t, 128)
	run := rg.sync(t)
	require.Equal(t, 1, run.Counts.RecordsChanged, "the pending document is processed again")
	require.Zero(t, run.Counts.ChunksEmbedded)
	counts, err := rg.store.ReviewCounts(t.Context(), "docs")
	require.NoError(t, err)
	require.Zero(t, counts.Pending)
	require.Equal(t, 2, rg.srv.RowCount("Elements"), "reconciled: no duplicate rows")
}

// TestReviewRealRegulation runs the review over the EUR-Lex MDR (the whole
// Official Journal HTML, thousands of elements) and a PDF conversion: every
// request within Grist's body cap, a correction of one point re-embeds the
// chunk or two that hold it, and an edit elsewhere in the file keeps it.
func TestReviewRealRegulation(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 512)
	for _, name := range []string{"eu-mdr-2017-745-oj.html", "mdcg-2019-9-rev1-sscp.md"} {
		b, err := os.ReadFile(filepath.Join(corpusDir(t), name))
		require.NoError(t, err)
		rg.write(t, name, string(b))
	}
	run := rg.sync(t)
	rg.step(t, "first run (MDR + MDCG)", run)
	require.Zero(t, rg.srv.Responses(413))
	n := rg.srv.RowCount("Elements")
	require.Greater(t, n, 3000)
	require.GreaterOrEqual(t, rg.srv.Requests("POST", "/Elements/records"), n/500)

	// Article 2 (71) defines 'substantial modification' … correct the
	// point that reads "'manufacturer' means".
	id, row := rg.rowOf(t, "(30) ‘manufacturer’ means")
	fixed := row["parsed_text"].(string) + " (as corrected by the review board)"
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id: {"corrected_text": fixed}})
	run = rg.sync(t)
	rg.step(t, "one point corrected", run)
	require.Equal(t, 1, run.Counts.RecordsChanged)
	require.Positive(t, run.Counts.ChunksEmbedded)
	require.LessOrEqual(t, run.Counts.ChunksEmbedded, 2)
	require.NotEmpty(t, rg.chunkWith("as corrected by the review board"))

	// An edit far away in the file: the correction stays, no conflict.
	b, err := os.ReadFile(filepath.Join(rg.root, "eu-mdr-2017-745-oj.html"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(b), "The Commission shall"))
	edited := strings.Replace(string(b), "The Commission shall", "The Commission must", 1)
	rg.write(t, "eu-mdr-2017-745-oj.html", edited)
	run = rg.sync(t)
	rg.step(t, "an edit elsewhere in the MDR", run)
	require.LessOrEqual(t, run.Counts.ChunksEmbedded, 2)
	require.NotEmpty(t, rg.chunkWith("as corrected by the review board"))
	_, row = rg.rowOf(t, "(30) ‘manufacturer’ means")
	require.Equal(t, false, row["needs_review"])
	require.Equal(t, fixed, row["corrected_text"])
	docs := rg.srv.Table("Documents")
	warned := false
	for _, d := range docs {
		if w, _ := d["warnings"].(string); strings.Contains(w, "noise") || strings.Contains(w, "unresolved") {
			warned = true
		}
	}
	require.True(t, warned, "parse warnings reach the Documents table")
}

// TestReviewRestoredRowsKeepTheirExpert: rows with expert input that are
// gone from Grist in numbers are written again by kgsync; Grist computes
// the trigger columns of a new record it is not given (grist-core
// sandbox/grist/useractions.py doBulkAddOrReplace) and keeps those it is
// given (docactions.py BulkUpdateRecord: prevent_recalc), so kgsync gives
// corrected_by and corrected_at as read back: the correction stays the
// expert's, not the API key's user's.
func TestReviewRestoredRowsKeepTheirExpert(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	rg.write(t, "steps.md", "# Steps\n\nOne step.\n\nTwo steps.\n\nThree steps.\n")
	rg.sync(t)
	edits, rows := map[int64]map[string]any{}, []int64{}
	for _, text := range []string{"One step", "Two steps"} {
		id, _ := rg.rowOf(t, text)
		edits[id], rows = map[string]any{"corrected_text": text + ", twice."}, append(rows, id)
	}
	rg.srv.UpdateRowsAs(expert, "Elements", edits)
	rg.sync(t)
	at := rg.srv.Table("Elements")[rows[0]]["corrected_at"]
	require.NotNil(t, at)

	rg.clock = rg.clock.Add(time.Hour)
	rg.srv.DeleteRows("Elements", rows...)
	// A full listing (as every FullEvery) finds them gone.
	require.NoError(t, rg.store.Commit(t.Context(), state.Commit{Pipeline: "docs", Cursors: map[string]string{review.CursorName: ""}}))
	rg.sync(t)
	_, row := rg.rowOf(t, "One step")
	require.Equal(t, "One step, twice.", row["corrected_text"], "the input was written again")
	require.Equal(t, expert.Email, row["corrected_by"])
	require.EqualValues(t, at, row["corrected_at"], "the same instant (seconds)")
	rg.sync(t)
	el, _ := rg.graph.Node("Element", row["element"].(string))
	require.Equal(t, "expert", el["text_source"])
	require.Equal(t, expert.Email, el["corrected_by"])
}

// TestReviewMovedEditKeepsItsExpert: an edit of parsed_text in a row that
// already carries the expert's input (a note) moves to corrected_text;
// Grist recomputes corrected_by and corrected_at when corrected_text
// changes and trims a given value equal to the cell (grist-core
// engine.py trim_update_action), so kgsync gives them back in a request
// of their own: the correction stays the expert's, not the API key's
// user's.
func TestReviewMovedEditKeepsItsExpert(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	rg.write(t, "steps.md", "# Steps\n\nOne step.\n\nTwo steps.\n")
	rg.sync(t)
	id, _ := rg.rowOf(t, "One step")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id: {"note": "check the wording"}})
	rg.sync(t)
	at := rg.srv.Table("Elements")[id]["corrected_at"]
	require.NotNil(t, at)

	rg.clock = rg.clock.Add(time.Hour)
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id: {"parsed_text": "One single step."}})
	rg.sync(t)
	row := rg.srv.Table("Elements")[id]
	require.Equal(t, "One single step.", row["corrected_text"])
	require.Equal(t, "One step.", row["parsed_text"])
	require.Equal(t, expert.Email, row["corrected_by"])
	require.EqualValues(t, at, row["corrected_at"], "the same instant (seconds)")
	rg.sync(t)
	el, _ := rg.graph.Node("Element", row["element"].(string))
	require.Equal(t, expert.Email, el["corrected_by"])
}
