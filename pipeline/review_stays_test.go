package pipeline_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// elementsWith returns the Element nodes whose text contains s.
func (rg *reviewRig) elementsWith(s string) []map[string]any {
	var out []map[string]any
	for _, id := range rg.graph.Nodes("Element") {
		n, _ := rg.graph.Node("Element", id)
		if txt, _ := n["text"].(string); strings.Contains(txt, s) {
			out = append(out, n)
		}
	}
	return out
}

// TestReviewInputStaysOnItsElement: paragraphs are named by ordinal (p1,
// p2), so when the corrected or excluded paragraph is deleted, moved or
// duplicated in its file, another paragraph takes its id. The expert's
// input stays on the element whose text it was given against: a deleted
// one keeps its row as missing, its input applying to nothing; the
// paragraph that took its id is published as parsed.
func TestReviewInputStaysOnItsElement(t *testing.T) {
	t.Parallel()
	const (
		alpha = "Alpha paragraph about apples."
		bravo = "Bravo paragraph about bananas."
		fixed = "Alpha paragraph about pears."
	)
	doc := func(paras ...string) string {
		return "# Mini\n\n## Rules\n\n" + strings.Join(paras, "\n\n") + "\n"
	}
	inputs := map[string]map[string]any{
		"correction": {"corrected_text": fixed},
		"exclusion":  {"exclude": true},
	}
	const bravo2 = "Bravo paragraph about ripe bananas."
	edits := map[string][]string{
		"delete":               {bravo},
		"delete, Bravo edited": {bravo2},
		"move":                 {bravo, alpha},
		"duplicate":            {alpha, alpha, bravo},
		"duplicate after":      {alpha, bravo, alpha},
	}
	for in, cells := range inputs {
		for edit, paras := range edits {
			t.Run(in+"/"+edit, func(t *testing.T) {
				t.Parallel()
				rg := newReviewRig(t, 128)
				rg.write(t, "mini.md", doc(alpha, bravo))
				rg.sync(t)
				id, row := rg.rowOf(t, "Alpha")
				require.True(t, strings.HasSuffix(row["element"].(string), "p1"), row["element"])
				rg.srv.UpdateRowsAs(expert, "Elements", map[int64]map[string]any{id: cells})
				rg.sync(t)
				if in == "correction" {
					require.NotEmpty(t, rg.chunkWith(fixed))
				} else {
					require.Empty(t, rg.chunkWith(alpha))
				}

				rg.write(t, "mini.md", doc(paras...))
				rg.sync(t)

				// Bravo is in the graph as parsed, its row current and unflagged.
				b := rg.elementsWith("Bravo")
				require.Len(t, b, 1, "Bravo is in the graph once")
				require.Equal(t, paras[slices.IndexFunc(paras, func(p string) bool { return strings.HasPrefix(p, "Bravo") })], b[0]["text"])
				require.Equal(t, "parsed", b[0]["text_source"])
				require.Nil(t, b[0]["review"])
				require.NotEmpty(t, rg.chunkWith(b[0]["text"].(string)))
				_, brow := rg.rowOf(t, "Bravo")
				require.Equal(t, "current", brow["status"])
				require.Equal(t, false, brow["needs_review"])
				require.Empty(t, brow["corrected_text"])
				require.NotEqual(t, true, brow["exclude"])

				row = rg.srv.Table("Elements")[id]
				require.NotNil(t, row, "the expert's row is kept")
				switch edit {
				case "delete", "delete, Bravo edited":
					require.Equal(t, "missing", row["status"])
					require.Equal(t, true, row["needs_review"])
					require.Empty(t, rg.chunkWith(fixed), "the correction applies to nothing")
					require.Empty(t, rg.elementsWith("Alpha"))
				default:
					require.Equal(t, "current", row["status"])
					require.Equal(t, alpha, row["parsed_text"])
					if in == "correction" {
						require.Len(t, rg.elementsWith(fixed), 1, "the correction applies to one element")
						require.Equal(t, false, row["needs_review"])
					}
				}
				if edit == "move" {
					if in == "correction" {
						require.Empty(t, rg.elementsWith(alpha))
					} else {
						require.Empty(t, rg.elementsWith("Alpha"), "the excluded paragraph stays out")
					}
				}
			})
		}
	}
}
