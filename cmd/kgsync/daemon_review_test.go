package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/internal/pgtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
	"github.com/kgsync/kgsync/state"
)

// TestDaemonRunsReviewPipelineOnWebhook: the daemon runs a pipeline with
// a review section, on SQLite and on Postgres state: a webhook delivery
// for the Elements table publishes the document's elements, and the next
// one, after an expert's correction, applies it.
func TestDaemonRunsReviewPipelineOnWebhook(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			srv := gristtest.New(t)
			path, _ := reviewConfig(t, srv)
			if driver == "postgres" {
				dsn, schema := pgtest.Schema(t)
				body, err := os.ReadFile(path)
				require.NoError(t, err)
				yaml := strings.Replace(string(body), "state: {driver: sqlite, path: state.db}",
					fmt.Sprintf("state: {driver: postgres, dsn: %q, schema: %s}", dsn, schema), 1)
				require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
			}
			code, _, errOut := kgsync(t, "grist", "review", "install", "docs", "--config", path)
			require.Equal(t, 0, code, errOut)

			cfg, err := config.Load(path)
			require.NoError(t, err)
			hs := serveDaemon(t, cfg)

			deliver := func(body string) {
				req, err := http.NewRequest("POST", hs.URL+"/hooks/grist/docs/Elements", strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer s3cret")
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusAccepted, resp.StatusCode)
			}
			deliver(`[{"id": 1}]`)
			require.Eventually(t, func() bool { return srv.RowCount("Elements") == 4 }, 20*time.Second, 20*time.Millisecond,
				"the daemon's run published the elements")

			row := elementRow(t, srv, "Keep the records for five years.")
			srv.UpdateRowsAs(gristtest.User{Email: "ann@example.com"}, "Elements", map[int64]map[string]any{row: {"corrected_text": "Keep the records for ten years."}})
			deliver(fmt.Sprintf(`[{"id": %d, "corrected_text": "Keep the records for ten years."}]`, row))
			require.Eventually(t, func() bool {
				for _, r := range srv.Table("Documents") {
					if c, _ := r["corrections"].(int64); c == 1 {
						return true
					}
					if c, _ := r["corrections"].(float64); c == 1 {
						return true
					}
				}
				return false
			}, 20*time.Second, 20*time.Millisecond, "the daemon's run applied the correction")
		})
	}
}

// TestDaemonRunDoesNotRetakeItsLock: the daemon's job holds the
// pipeline's lock when it asks the runner for a run; the run does not
// take it again (it would find it held: state.ErrLocked). The run sees
// the store itself, so the optional interfaces the pipeline finds by type
// assertion are there (TestDaemonRunsReviewPipelineOnWebhook needs
// state.ReviewStore).
func TestDaemonRunDoesNotRetakeItsLock(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(quickstart(t))
	require.NoError(t, err)
	store, err := pipeline.OpenStore(t.Context(), cfg.State)
	require.NoError(t, err)
	defer store.Close()
	unlock, err := store.Lock(t.Context(), "docs")
	require.NoError(t, err)
	defer func() { require.NoError(t, unlock()) }()
	_, err = store.Lock(t.Context(), "docs")
	require.ErrorIs(t, err, state.ErrLocked, "the lock is held")
	r := &pipelineRunner{cfg: cfg, store: store, log: slog.New(slog.DiscardHandler)}
	run, err := r.Run(t.Context(), "docs", state.TriggerManual, daemon.ModeIncremental)
	require.NoError(t, err)
	require.Equal(t, state.StatusSucceeded, run.Status)
}
