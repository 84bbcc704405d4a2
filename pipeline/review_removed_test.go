package pipeline_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline/review"
)

// mandatoryEdges returns the graph's MANDATORY edges.
func (rg *reviewRig) mandatoryEdges() []graphtest.Edge {
	var out []graphtest.Edge
	for _, e := range rg.graph.Edges() {
		if e.Type == "MANDATORY" {
			out = append(out, e)
		}
	}
	return out
}

// requireSettled checks that the review state committed: no document is
// pending, and the next run has no warnings and changes nothing. It
// returns the summary taken before that run.
func (rg *reviewRig) requireSettled(t *testing.T) review.Summary {
	t.Helper()
	sum, err := review.Summarize(t.Context(), rg.store, "docs")
	require.NoError(t, err)
	require.Zero(t, sum.Pending)
	run := rg.sync(t)
	require.Empty(t, run.Warnings)
	require.Zero(t, run.Counts.RecordsChanged)
	return sum
}

// TestReviewRemovedParagraphKeepsItsRow: paragraphs are named by ordinal
// (p1, p2), so when a paragraph with expert input is removed from its
// file, the paragraph after it takes its id. The removed paragraph's row is
// kept missing, its input applying to nothing; the neighbour keeps its own
// row and input (a mandatory link); the run commits its state without a
// warning, and the next run is a no-op.
func TestReviewRemovedParagraphKeepsItsRow(t *testing.T) {
	t.Parallel()
	para := func(i int) string { return fmt.Sprintf("Text number %d of the rules, unique words %d.", i, i*7) }
	doc := func(n, drop int) string {
		var b strings.Builder
		b.WriteString("# Mini\n\n## Rules\n\n")
		for i := 1; i <= n; i++ {
			if i != drop {
				b.WriteString(para(i) + "\n\n")
			}
		}
		return b.String()
	}
	inputs := map[string]map[string]any{
		"correction": {"corrected_text": "EXPERT TEXT of the removed paragraph."},
		"exclusion":  {"exclude": true},
	}
	for _, c := range []struct{ n, drop int }{{2, 1}, {3, 1}, {3, 2}, {5, 2}} {
		for in, cells := range inputs {
			t.Run(fmt.Sprintf("p%d of %d/%s", c.drop, c.n, in), func(t *testing.T) {
				t.Parallel()
				rg := newReviewRig(t, 128)
				rg.write(t, "mini.md", doc(c.n, 0))
				rg.write(t, "other.md", "# Other\n\nThe incident form goes with every report.\n")
				run := rg.sync(t)
				require.Empty(t, run.Warnings)

				gone := fmt.Sprintf("Text number %d of", c.drop)
				next := fmt.Sprintf("Text number %d of", c.drop+1)
				id, row := rg.rowOf(t, gone)
				goneElem := row["element"].(string)
				require.True(t, strings.HasSuffix(goneElem, fmt.Sprintf("p%d", c.drop)), goneElem)
				nextID, _ := rg.rowOf(t, next)
				formID, formRow := rg.rowOf(t, "The incident form")
				rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{
					id:     cells,
					nextID: {"mandatory_with": []any{"L", formID}},
				})
				run = rg.sync(t)
				require.Empty(t, run.Warnings)
				require.Len(t, rg.mandatoryEdges(), 1)

				// The paragraph is removed: the next one takes its id.
				rg.write(t, "mini.md", doc(c.n, c.drop))
				run = rg.sync(t)
				require.Empty(t, run.Warnings, "the review state commits")

				row = rg.srv.Table("Elements")[id]
				require.NotNil(t, row, "the expert's row is kept")
				require.Equal(t, review.StatusMissing, row["status"])
				require.Equal(t, true, row["needs_review"])
				require.Equal(t, goneElem, row["element"], "the missing row names where its element was")
				require.Empty(t, rg.elementsWith("EXPERT TEXT"), "the correction applies to nothing")
				require.Empty(t, rg.elementsWith(gone))

				nrow := rg.srv.Table("Elements")[nextID]
				require.Equal(t, goneElem, nrow["element"], "the neighbour holds the removed paragraph's id")
				require.Equal(t, review.StatusCurrent, nrow["status"])
				require.Equal(t, false, nrow["needs_review"])
				require.Empty(t, nrow["corrected_text"])
				require.NotEqual(t, true, nrow["exclude"])
				n := rg.elementsWith(next)
				require.Len(t, n, 1, "the neighbour is in the graph as parsed")
				require.Equal(t, "parsed", n[0]["text_source"])
				mand := rg.mandatoryEdges()
				require.Len(t, mand, 1, "the neighbour's link stays with it")
				require.Equal(t, goneElem, mand[0].From.ID)
				require.Equal(t, formRow["element"], mand[0].To.ID)

				sum, err := review.Summarize(t.Context(), rg.store, "docs")
				require.NoError(t, err)
				require.Zero(t, sum.Pending, "no document waits to be written to Grist again")
				require.Len(t, sum.NeedsReview, 1)
				require.Equal(t, review.StatusMissing, sum.NeedsReview[0].Status)
				require.Equal(t, goneElem, sum.NeedsReview[0].Element)
				require.Equal(t, id, sum.NeedsReview[0].Row)

				// Nothing changed: a no-op.
				run = rg.sync(t)
				require.Empty(t, run.Warnings)
				require.Zero(t, run.Counts.RecordsChanged)
				require.Zero(t, run.Counts.ReviewRowsWritten)
				require.Len(t, rg.mandatoryEdges(), 1)

				// The paragraph comes back: its input is matched again.
				rg.write(t, "mini.md", doc(c.n, 0))
				run = rg.sync(t)
				require.Empty(t, run.Warnings)
				row = rg.srv.Table("Elements")[id]
				require.Equal(t, review.StatusCurrent, row["status"])
				require.Equal(t, goneElem, row["element"])
				if in == "correction" {
					require.Len(t, rg.elementsWith("EXPERT TEXT"), 1)
				} else {
					require.Empty(t, rg.elementsWith(gone))
				}
				mand = rg.mandatoryEdges()
				require.Len(t, mand, 1)
				require.Equal(t, rg.srv.Table("Elements")[nextID]["element"], mand[0].From.ID)
				rg.requireSettled(t)
			})
		}
	}
}

// TestReviewMissingRowAfterRenumbering: the last paragraph, corrected, is
// removed (no other paragraph takes its id then); later one is inserted
// first and the others are renumbered onto the removed one's id. The row
// kept missing must not collide with them.
func TestReviewMissingRowAfterRenumbering(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	doc := func(paras ...string) string {
		return "# Mini\n\n## Rules\n\n" + strings.Join(paras, "\n\n") + "\n"
	}
	const (
		alpha = "Alpha paragraph about apples."
		bravo = "Bravo paragraph about bananas."
		cedar = "Cedar paragraph about cherries."
		delta = "Delta paragraph inserted first, about dates."
	)
	rg.write(t, "mini.md", doc(alpha, bravo, cedar))
	run := rg.sync(t)
	require.Empty(t, run.Warnings)
	id, row := rg.rowOf(t, "Cedar")
	cedarElem := row["element"].(string)
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id: {"corrected_text": "Cedar, as the expert wrote it."}})
	run = rg.sync(t)
	require.Empty(t, run.Warnings)

	rg.write(t, "mini.md", doc(alpha, bravo))
	run = rg.sync(t)
	require.Empty(t, run.Warnings)
	require.Equal(t, review.StatusMissing, rg.srv.Table("Elements")[id]["status"])

	// A paragraph inserted first: Bravo becomes p3, the removed Cedar's id.
	rg.write(t, "mini.md", doc(delta, alpha, bravo))
	run = rg.sync(t)
	require.Empty(t, run.Warnings, "the review state commits")
	_, brow := rg.rowOf(t, "Bravo")
	require.Equal(t, cedarElem, brow["element"])
	require.Equal(t, review.StatusCurrent, brow["status"])
	row = rg.srv.Table("Elements")[id]
	require.Equal(t, review.StatusMissing, row["status"], "the inserted paragraph does not take the removed one's input")
	require.Equal(t, true, row["needs_review"])
	require.Empty(t, rg.elementsWith("as the expert wrote it"))
	_, drow := rg.rowOf(t, "Delta")
	require.Equal(t, false, drow["needs_review"])
	require.Empty(t, drow["corrected_text"])
	rg.requireSettled(t)
}

// TestReviewRemovedParagraphAfterLostPublish: the publish of a removal
// reaches Grist but its answers are lost, so state keeps the rows as they
// were (as a commit refused after the write left them): the next run
// reconciles and commits, the neighbour's link is in the graph again.
func TestReviewRemovedParagraphAfterLostPublish(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	const (
		alpha = "Alpha paragraph about apples."
		bravo = "Bravo paragraph about bananas."
	)
	rg.write(t, "mini.md", "# Mini\n\n## Rules\n\n"+alpha+"\n\n"+bravo+"\n")
	rg.write(t, "other.md", "# Other\n\nThe incident form goes with every report.\n")
	rg.sync(t)
	id, row := rg.rowOf(t, "Alpha")
	alphaElem := row["element"].(string)
	bravoID, _ := rg.rowOf(t, "Bravo")
	formID, _ := rg.rowOf(t, "The incident form")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{
		id:      {"corrected_text": "Alpha, as the expert wrote it."},
		bravoID: {"mandatory_with": []any{"L", formID}},
	})
	run := rg.sync(t)
	require.Empty(t, run.Warnings)

	rg.write(t, "mini.md", "# Mini\n\n## Rules\n\n"+bravo+"\n")
	rg.srv.SetLoseAnswer(func(r *http.Request) bool {
		return r.Method == "PATCH" && strings.HasSuffix(r.URL.Path, "/Elements/records")
	})
	run = rg.sync(t)
	require.NotEmpty(t, run.Warnings, "the lost answers are a warning")
	rg.srv.SetLoseAnswer(nil)

	run = rg.sync(t)
	require.Empty(t, run.Warnings)
	require.Equal(t, review.StatusMissing, rg.srv.Table("Elements")[id]["status"])
	require.Equal(t, alphaElem, rg.srv.Table("Elements")[bravoID]["element"])
	mand := rg.mandatoryEdges()
	require.Len(t, mand, 1)
	require.Equal(t, alphaElem, mand[0].From.ID)
	sum := rg.requireSettled(t)
	require.Len(t, sum.NeedsReview, 1)
	// mini, rules, the missing Alpha, Bravo; other and its form.
	require.Equal(t, 6, rg.srv.RowCount("Elements"), "no duplicate rows")
}
