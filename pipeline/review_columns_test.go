package pipeline_test

import (
	"testing"

	"github.com/stretchr/testify/require"
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
