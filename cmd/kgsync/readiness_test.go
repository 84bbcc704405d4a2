package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
)

// refusedURI returns a bolt:// URI on a loopback port nothing listens on.
func refusedURI(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "bolt://" + addr
}

func memgraphSinkConfig(uri string) config.Sink {
	return config.Sink{Type: "memgraph", Memgraph: &config.MemgraphSink{URI: uri, Timeout: 2 * time.Second}}
}

func TestSinkCheckConnectsLazilyAndPings(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	down := newSinkCheck(memgraphSinkConfig(refusedURI(t)), "kb", sink.Schema{}, nil)
	err := down.Ping(ctx)
	require.Error(t, err, "nothing listens: the check fails instead of the daemon")
	require.Contains(t, err.Error(), `pipeline "kb"`)
	require.NoError(t, down.Close(ctx), "never connected: nothing to close")

	srv := bolttest.Start(t)
	srv.EmulateSchema()
	up := newSinkCheck(memgraphSinkConfig(srv.URI()), "kb", sink.Schema{}, nil)
	require.NoError(t, up.Ping(ctx), "first ping connects")
	require.NoError(t, up.Ping(ctx), "second ping goes through memgraph.Sink.Ping")
	srv.Close()
	require.Error(t, up.Ping(ctx), "server gone")
	require.NoError(t, up.Close(ctx))
}

// TestReadyzReportsSink wires the checks as runDaemon does and asks
// /readyz: 503 naming the unreachable sink, 200 once every sink answers.
func TestReadyzReportsSink(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, err := pipeline.OpenStore(ctx, config.State{Driver: "sqlite", Path: filepath.Join(t.TempDir(), "state.db")})
	require.NoError(t, err)
	defer store.Close()
	cfg := &config.Config{Pipelines: []config.Pipeline{{Name: "kb"}}}
	ready := func(checks map[string]any) (int, map[string]any) {
		d, err := daemon.New(daemon.Options{Config: cfg, Store: store, Runner: &pipelineRunner{cfg: cfg, store: store},
			Checks: checks, Registerer: prometheus.NewRegistry()})
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		d.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/readyz", nil))
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		return rec.Code, body
	}

	down := newSinkCheck(memgraphSinkConfig(refusedURI(t)), "kb", sink.Schema{}, nil)
	code, body := ready(map[string]any{"sink of kb": down})
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body["failed"], "sink of kb")

	srv := bolttest.Start(t)
	srv.EmulateSchema()
	up := newSinkCheck(memgraphSinkConfig(srv.URI()), "kb", sink.Schema{}, nil)
	defer func() { require.NoError(t, up.Close(context.Background())) }()
	code, body = ready(map[string]any{"sink of kb": up})
	require.Equal(t, http.StatusOK, code, body)

	// A Memgraph without edge properties is not ready for a pipeline of
	// documents (their cross-references carry properties); /readyz names
	// the flag.
	bare := bolttest.Start(t)
	bare.EmulateMemgraph(bolttest.Memgraph{NoEdgeProperties: true})
	docs, err := pipeline.SchemaOf(&config.Pipeline{Name: "kb", Embedder: &config.Embedder{Provider: "hashing", Dimensions: 8},
		Sources: []config.Source{{Name: "d", Files: &config.FilesSource{Root: "."}}}})
	require.NoError(t, err)
	noProps := newSinkCheck(memgraphSinkConfig(bare.URI()), "kb", docs, nil)
	defer func() { require.NoError(t, noProps.Close(context.Background())) }()
	code, body = ready(map[string]any{"sink of kb": noProps})
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body["failed"].(map[string]any)["sink of kb"], "--storage-properties-on-edges=true")
}

func TestPipelineModeAllowMassDelete(t *testing.T) {
	t.Parallel()
	require.Equal(t, pipeline.Mode{Full: true, AllowMassDelete: true}, pipelineMode(daemon.ModeFull.WithAllowMassDelete()))
	require.Equal(t, pipeline.Mode{AllowMassDelete: true}, pipelineMode(daemon.ModeIncremental.WithAllowMassDelete()))
}

// TestReadyzRechecksServer: /readyz is red for a Memgraph without edge
// properties; once it is restarted with the flag the message asks for,
// the check turns green within checkTTL instead of keeping its first
// answer for the daemon's life.
func TestReadyzRechecksServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := bolttest.Start(t)
	sc := srv.EmulateMemgraph(bolttest.Memgraph{NoEdgeProperties: true})
	docs, err := pipeline.SchemaOf(&config.Pipeline{Name: "kb", Embedder: &config.Embedder{Provider: "hashing", Dimensions: 8},
		Sources: []config.Source{{Name: "d", Files: &config.FilesSource{Root: "."}}}})
	require.NoError(t, err)
	c := newSinkCheck(memgraphSinkConfig(srv.URI()), "kb", docs, nil)
	defer func() { require.NoError(t, c.Close(context.Background())) }()
	clock := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return clock }
	require.ErrorContains(t, c.Ping(ctx), "--storage-properties-on-edges=true")

	sc.Restart(bolttest.Memgraph{})
	clock = clock.Add(checkTTL)
	require.NoError(t, c.Ping(ctx), "the restarted server is asked again")
	sc.Restart(bolttest.Memgraph{Version: "3.0.0"})
	clock = clock.Add(checkTTL / 2)
	require.NoError(t, c.Ping(ctx), "within checkTTL the answer is reused")
	clock = clock.Add(checkTTL / 2)
	require.ErrorContains(t, c.Ping(ctx), "Memgraph 3.0.0 is too old")
}
