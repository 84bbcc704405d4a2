package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// TestGristOnlyListedIgnoresUnlistedColumns: an anchor with only_listed
// maps only its listed columns and links, so what changes elsewhere in its
// rows is no change of its records: two rows whose unlisted columns change
// before every run (a status or timestamp column someone else writes) are
// rewritten by no run, and a key renamed in another table rewrites the
// rows that name it through a listed link only, not those that name it
// through an unlisted Ref column. The graph stays that of a fresh sync.
func TestGristOnlyListedIgnoresUnlistedColumns(t *testing.T) {
	t.Parallel()
	srv := shapeDoc(t)
	codeID := map[string]int64{}
	for id, r := range srv.Table("HSCodes") {
		codeID[r["hscode"].(string)] = id
	}
	// Every FAQ row also names a heading through a Ref column the model
	// does not list.
	topics := map[int64]any{}
	for id := range srv.Table("FAQ") {
		topics[id] = codeID["0102"]
	}
	srv.AddColumn("FAQ", gristtest.Column{ID: "topic", Type: "Ref:HSCodes"}, topics)
	sc, m := shapeSource(srv), shapeModel()
	for i := range m.Anchors {
		m.Anchors[i].OnlyListed = true
	}
	r := newShapeRig(t, sc, m)
	first := r.sync(t, pipeline.Mode{})
	r.report(t, "first sync", first)
	require.Equal(t, 19+2+3+8, first.Counts.RecordsNew)

	for i := range 2 {
		// Only the unlisted "category" column of two rows changes.
		srv.UpdateRows("FAQ", map[int64]map[string]any{1: {"category": fmt.Sprintf("c%d", i)}, 2: {"category": fmt.Sprintf("c%d", i)}})
		r.emb.reset()
		run := r.sync(t, pipeline.Mode{})
		st, rows := r.cy.counted()
		t.Logf("run %d: %d Cypher statements (%d rows); read %d, changed %d", i+2, st, rows, run.Counts.RecordsRead, run.Counts.RecordsChanged)
		require.Zero(t, run.Counts.RecordsChanged, "run %d: unlisted columns changed only", i+2)
		require.Zero(t, st, "run %d writes nothing", i+2)
		require.Zero(t, run.Counts.ChunksEmbedded)
	}

	// A renamed key: its row moves, its child (PARENT, listed) and the
	// link-table row naming it change; the FAQ rows (topic, unlisted) do not.
	srv.UpdateRows("HSCodes", map[int64]map[string]any{codeID["0102"]: {"hscode": "0102X"}})
	run := r.sync(t, pipeline.Mode{})
	r.report(t, "key renamed", run)
	require.Equal(t, 1, run.Counts.RecordsRenamed)
	require.Equal(t, 2, run.Counts.RecordsChanged, "the child 010221 and one HeadingGuides row")
	requireFresh(t, r, sc, m)
}
