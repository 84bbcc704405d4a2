package pipeline_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// TestReviewAddedColumnIsData: a column `kgsync grist review install` adds
// to review tables that lack it (tables of an older kgsync, a column an
// expert removed) goes through POST /columns, where Grist makes a column
// without isFormula an empty formula column that the first value written
// turns into data (grist-core useractions.py _make_clean_col_info,
// _ensure_column_accepts_data). kgsync's columns are data from the start:
// the publish that first writes one changes no schema, and the next
// read-back reads the rows that changed, not the whole table again.
func TestReviewAddedColumnIsData(t *testing.T) {
	t.Parallel()
	rg := newReviewRig(t, 128)
	rg.write(t, "rules.md", regulation(nil))
	rg.sync(t)

	rg.srv.RemoveColumn("Elements", "note")
	_, err := rg.p.Review.Install(t.Context())
	require.NoError(t, err)
	for _, c := range rg.srv.Columns("Elements") {
		require.False(t, c.IsFormula, "column %s", c.ID)
	}
	run := rg.sync(t)
	rg.step(t, "column added", run)
	require.Empty(t, run.Warnings)

	rg.write(t, "rules.md", regulation(func(a, p int) string {
		if a == 2 && p == 3 {
			return "Paragraph 3 of article 2: widgets of class 2 are exempt from the daily check."
		}
		return ""
	}))
	run = rg.sync(t)
	rg.step(t, "one paragraph edited", run)
	require.Empty(t, run.Warnings)
	run = rg.sync(t)
	rg.step(t, "no change", run)
	require.Empty(t, run.Warnings)
	require.Less(t, run.Counts.ReviewRowsRead, 10, "the rows the edit wrote, not a full listing of %d rows", rg.srv.RowCount("Elements"))
}

// removeColumnAs removes column col of table through the API as u does:
// DELETE /tables/{t}/columns/{c}, the RemoveColumn user action the Grist
// UI sends when a column is deleted.
func (rg *reviewRig) removeColumnAs(t *testing.T, u gristtest.User, table, col string) {
	t.Helper()
	key := "expert-" + strings.Repeat("0", 33)
	rg.srv.AddAPIKey(key, u)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete,
		rg.srv.URL+"/api/docs/"+gristtest.DocID+"/tables/"+table+"/columns/"+col, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestReviewRemovedColumnIsInstalledAgain: an expert removes a column
// kgsync writes from a review table: an expert's (note, a dependency of
// the trigger columns) or kgsync's own (chunk) of Elements, or one of
// Documents (warnings), which the read-back does not read. The run says
// so, naming the table and the column, adds the column back as `kgsync
// grist review install` does (with its place in the trigger columns'
// dependencies), and publishes every row — a Documents column is found by
// the write Grist refuses, and that batch is written on the next run; the
// expert's input in the other columns is read and kept, and the runs
// after it are clean.
func TestReviewRemovedColumnIsInstalledAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ table, col string }{{"Elements", "note"}, {"Elements", "chunk"}, {"Documents", "warnings"}} {
		t.Run(tc.col, func(t *testing.T) {
			t.Parallel()
			testRemovedColumn(t, tc.table, tc.col)
		})
	}
}

func testRemovedColumn(t *testing.T, table, col string) {
	rg := newReviewRig(t, 128)
	rg.write(t, "rules.md", regulation(nil))
	rg.write(t, "other.md", "# Other\n\nThe incident form goes with every report.\n")
	rg.sync(t)
	a, _ := rg.rowOf(t, "Paragraph 3 of article 2:")
	b, _ := rg.rowOf(t, "Paragraph 4 of article 2:")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{
		a: {"corrected_text": "Article 2(3) as the expert wrote it."},
		b: {"note": "Check with legal."},
	})
	run := rg.sync(t)
	require.Empty(t, run.Warnings)

	rg.removeColumnAs(t, expert, table, col)
	c, _ := rg.rowOf(t, "Paragraph 5 of article 2:")
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{c: {"exclude": true}})
	rg.write(t, "rules.md", regulation(func(a, p int) string {
		if a == 7 && p == 1 {
			return "Paragraph 1 of article 7: widgets of class 7 are exempt from the daily check."
		}
		return ""
	}))
	rg.write(t, "other.md", "# Other\n\nThe incident form goes with every report, signed.\n")
	run = rg.sync(t)
	rg.step(t, col+" removed", run)
	t.Logf("warnings: %q", run.Warnings)
	require.Len(t, run.Warnings, 1+btoi(table == "Documents"), "the removed column is reported")
	joined := strings.Join(run.Warnings, "\n")
	require.Contains(t, joined, fmt.Sprintf("table %q column %q, which kgsync writes, is gone", table, col))
	require.Contains(t, joined, "kgsync grist review install")
	if table == "Documents" {
		// The refused batch is written by the next run.
		run = rg.sync(t)
		require.Empty(t, run.Warnings)
	}

	// The column is back, data; the trigger columns depend on the
	// expert's four columns again.
	cols := map[string]gristtest.Column{}
	for _, c := range rg.srv.Columns(table) {
		cols[c.ID] = c
	}
	require.Contains(t, cols, col)
	require.False(t, cols[col].IsFormula)
	cols = map[string]gristtest.Column{}
	for _, c := range rg.srv.Columns("Elements") {
		cols[c.ID] = c
	}
	require.Len(t, cols["corrected_by"].RecalcDeps, 4)
	require.Len(t, cols["corrected_at"].RecalcDeps, 4)

	// Every document was written: the edited paragraph and the other
	// document; the expert's other input was read and applied.
	_, row := rg.rowOf(t, "Paragraph 1 of article 7: widgets")
	require.Equal(t, review.StatusCurrent, row["status"])
	_, row = rg.rowOf(t, "The incident form goes with every report, signed.")
	require.Equal(t, review.StatusCurrent, row["status"])
	require.Len(t, rg.chunkWith("as the expert wrote it"), 1)
	require.Empty(t, rg.chunkWith("Paragraph 5 of article 2:"), "the exclusion made with the column gone applies")
	sum, err := review.Summarize(t.Context(), rg.store, "docs")
	require.NoError(t, err)
	require.Zero(t, sum.Pending, "no document waits to be written to Grist again")
	require.Equal(t, 1, sum.Corrected)
	require.Equal(t, 1, sum.Excluded)

	// The note is gone with its column, as the expert removed it; an expert
	// writing one again is read back.
	rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{b: {"note": "Check with legal again."}})
	run = rg.sync(t)
	require.Empty(t, run.Warnings)
	require.Equal(t, expert.Email, rg.srv.Table("Elements")[b]["corrected_by"], "the re-added column triggers corrected_by")
	rg.requireSettled(t)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
