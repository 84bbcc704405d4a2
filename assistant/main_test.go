package assistant_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// quick is the quick start synced once for the package's tests.
var quick struct {
	once sync.Once
	dir  string
	err  error
}

// quickstart copies examples/quickstart into a directory shared by the
// package's tests and syncs it once; tests only read it.
func quickstart(t *testing.T) string {
	t.Helper()
	quick.once.Do(func() {
		dir, err := os.MkdirTemp("", "kgsync-assistant-")
		if err != nil {
			quick.err = err
			return
		}
		quick.dir = dir
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "examples", "quickstart"))); err != nil {
			quick.err = err
			return
		}
		_ = os.RemoveAll(filepath.Join(dir, ".kgsync"))
		ctx := context.Background()
		cfg, store, ps, err := build(ctx, filepath.Join(dir, "kgsync.yaml"))
		if err != nil {
			quick.err = err
			return
		}
		defer store.Close()
		_ = cfg
		for _, p := range ps {
			if _, err := p.Run(ctx, state.TriggerManual, pipeline.Mode{}); err != nil {
				quick.err = err
				return
			}
			_ = p.Sink.Close(ctx)
		}
	})
	require.NoError(t, quick.err)
	return filepath.Join(quick.dir, "kgsync.yaml")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if quick.dir != "" {
		_ = os.RemoveAll(quick.dir)
	}
	os.Exit(code)
}

// build loads the config and builds its pipelines over one store.
func build(ctx context.Context, path string) (*config.Config, state.Store, []*pipeline.Pipeline, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := pipeline.OpenStore(ctx, cfg.State)
	if err != nil {
		return nil, nil, nil, err
	}
	var ps []*pipeline.Pipeline
	for i := range cfg.Pipelines {
		p, err := pipeline.Build(ctx, cfg, &cfg.Pipelines[i], store, nil)
		if err != nil {
			_ = store.Close()
			return nil, nil, nil, err
		}
		ps = append(ps, p)
	}
	return cfg, store, ps, nil
}

// serve builds a server over the synced quick start and connects the SDK's
// client to it in memory.
func serve(t *testing.T) (*assistant.Server, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	cfg, store, ps, err := build(ctx, quickstart(t))
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, p := range ps {
			_ = p.Sink.Close(ctx)
		}
		_ = store.Close()
	})
	srv, err := assistant.New(assistant.Options{Pipelines: ps, Playbook: cfg.Assistant.Playbook})
	require.NoError(t, err)
	return srv, connect(t, srv)
}

func connect(t *testing.T, srv *assistant.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
