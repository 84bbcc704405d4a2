package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/internal/testlog"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// TestDaemonRunsQuickstartFromRemoteSync serves the quickstart with the
// real pipeline runner and triggers it with `kgsync sync --remote`.
func TestDaemonRunsQuickstartFromRemoteSync(t *testing.T) {
	t.Parallel()
	const token = "remote-token-93b1"
	cfg, err := config.Load(quickstart(t))
	require.NoError(t, err)
	cfg.Daemon.APIToken = token
	srv := serveDaemon(t, cfg)

	code, _, errOut := kgsync(t, "sync", "--remote", srv.URL, "--json")
	require.Equal(t, 1, code, "no token: 401")
	require.Contains(t, errOut, "401")
	require.NotContains(t, errOut, token)

	code, out, errOut := kgsync(t, "sync", "--remote", srv.URL, "--token", token, "--json", "docs")
	require.Equal(t, 0, code, errOut)
	var tr daemon.JobJSON
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &tr), out)
	require.Equal(t, "docs", tr.Pipeline)
	require.Equal(t, "incremental", tr.Mode)
	require.Positive(t, tr.ID)

	get := func(path string, v any) {
		req, err := http.NewRequest("GET", srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		require.NoError(t, json.Unmarshal(body, v))
	}
	require.Eventually(t, func() bool {
		get("/api/jobs/"+strconv.FormatInt(tr.ID, 10), &tr)
		return tr.State == "completed"
	}, 90*time.Second, 10*time.Millisecond) // the quick start's first sync: 2 s quiet, over 20 s at load average 20
	var run daemon.RunJSON
	get("/api/runs/"+strconv.FormatInt(tr.RunID, 10), &run)
	require.Equal(t, string(state.StatusSucceeded), run.Status, run.Error)
	require.Equal(t, string(state.TriggerManual), run.Trigger)
	require.Equal(t, 3, run.Counts.RecordsNew, "the quickstart has three documents")
}

func TestPipelineMode(t *testing.T) {
	t.Parallel()
	require.Equal(t, pipeline.Mode{}, pipelineMode(daemon.ModeIncremental))
	require.Equal(t, pipeline.Mode{Full: true}, pipelineMode(daemon.ModeFull))
	require.Equal(t, pipeline.Mode{Reembed: true}, pipelineMode(daemon.ModeReembed))
	require.Equal(t, pipeline.Mode{RebuildGraph: true}, pipelineMode(daemon.ModeRebuildGraph))
}

// TestDaemonRefusesOpenAPI: `kgsync daemon` on every interface without
// daemon.api_token exits 2 naming the fix; --insecure-no-auth serves with
// a warning.
func TestDaemonRefusesOpenAPI(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "daemon", "--config", cfg, "--listen", ":0")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "without daemon.api_token")
	require.Contains(t, errOut, "--insecure-no-auth")
	require.Equal(t, 1, strings.Count(errOut, "refusing"), "printed once: %s", errOut)

	ctx, cancel := context.WithCancel(context.Background())
	var errb testlog.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"daemon", "--config", cfg, "--listen", ":0", "--insecure-no-auth"}, io.Discard, &errb)
	}()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "daemon listening") }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.Equal(t, 0, <-done)
	require.Contains(t, errb.String(), "the API is open to the network")
}

// serveDaemon runs a daemon on cfg with the real pipeline runner (poll
// interval an hour: runs start on triggers only) and serves its API;
// the test's cleanup stops it and checks that Run returned no error.
func serveDaemon(t *testing.T, cfg *config.Config) *httptest.Server {
	t.Helper()
	cfg.Daemon.PollInterval = time.Hour
	store, err := pipeline.OpenStore(t.Context(), cfg.State)
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	d, err := daemon.New(daemon.Options{
		Config: cfg, Store: store, Runner: &pipelineRunner{cfg: cfg, store: store, log: slog.New(slog.DiscardHandler)},
		Registerer: prometheus.NewRegistry(),
	})
	require.NoError(t, err)
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx, nil) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return srv
}
