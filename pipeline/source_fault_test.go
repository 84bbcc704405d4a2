package pipeline_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/httpapi"
	"github.com/kgsync/kgsync/state"
)

// TestSourceFaultsDeleteNothing syncs ten API items, then lets the API
// answer badly: an HTML error page with status 200, a body cut short, an
// empty list. Each must end in a failed run that deletes nothing (the empty
// list by the mass-delete guard); once the API is healthy the graph is as
// before.
func TestSourceFaultsDeleteNothing(t *testing.T) {
	t.Parallel()
	items := make([]map[string]any, 10)
	for i := range items {
		items[i] = map[string]any{"id": fmt.Sprint(i + 1), "title": fmt.Sprintf("Ticket %d about proxies", i+1)}
	}
	healthy, _ := json.Marshal(map[string]any{"items": items})
	for _, tc := range []struct {
		name string
		body []byte
		ct   string
		want string // substring of the run's error
	}{
		{"HTML error page with status 200", []byte("<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"), "text/html", "invalid JSON"},
		{"truncated body", healthy[:len(healthy)/2], "application/json", "invalid JSON"},
		{"empty listing", []byte(`{"items": []}`), "application/json", "mass-delete guard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var broken atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if broken.Load() {
					w.Header().Set("Content-Type", tc.ct)
					_, _ = w.Write(tc.body)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(healthy)
			}))
			t.Cleanup(srv.Close)
			src, err := httpapi.New("api", httpapi.Config{
				URL: srv.URL, Records: ".items[]", Key: ".id", Anchor: "ticket",
				Attributes: map[string]string{"title": ".title"},
			}, nil)
			require.NoError(t, err)
			b := setup(t, t.TempDir(), 256, 32)
			b.p.Sources = []sources.Source{src}
			b.p.BatchSize = 3
			b.sync(t, pipeline.Mode{})
			require.Equal(t, 10, b.graph.Count("ticket"))
			before := snapshotLabel(b, "ticket")

			broken.Store(true)
			res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
			require.Error(t, err)
			require.ErrorContains(t, err, tc.want)
			t.Logf("%s: %v", tc.name, err)
			require.Equal(t, state.StatusFailed, res.Run.Status)
			require.Zero(t, res.Run.Counts.RecordsDeleted)
			require.Equal(t, before, snapshotLabel(b, "ticket"), "the graph is untouched")
			recs, err := b.store.RecordList(t.Context(), "docs", "api")
			require.NoError(t, err)
			require.Len(t, recs, 10, "state is untouched")

			broken.Store(false)
			c := b.sync(t, pipeline.Mode{})
			require.Zero(t, c.RecordsNew+c.RecordsChanged+c.RecordsDeleted)
			require.Equal(t, before, snapshotLabel(b, "ticket"))
		})
	}
}

// TestEmptiedFolderIsStoppedByTheGuard: every file of a folder source
// disappears but the folder stays (an emptied mount): the listing is
// complete and empty, so only the mass-delete guard stands between the run
// and deleting every document. It must stop the run with nothing deleted.
func TestEmptiedFolderIsStoppedByTheGuard(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	want := snapshot(b.graph)
	entries, err := os.ReadDir(b.root)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.Remove(filepath.Join(b.root, e.Name())))
	}
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.ErrorContains(t, err, "delete 3 of 3 records")
	require.Zero(t, res.Run.Counts.RecordsDeleted)
	require.Equal(t, want, snapshot(b.graph))
	recs, err := b.store.RecordList(t.Context(), "docs", "docs")
	require.NoError(t, err)
	require.Len(t, recs, 3)
}

// snapshotLabel is the nodes of one label with their properties, without
// _synced_at.
func snapshotLabel(b *bundle, label string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, id := range b.graph.Nodes(label) {
		n, _ := b.graph.Node(label, id)
		delete(n, "_synced_at")
		out[id] = n
	}
	return out
}
