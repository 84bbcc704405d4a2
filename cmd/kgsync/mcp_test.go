package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/internal/crashtest"
	"github.com/kgsync/kgsync/pipeline"
)

// rowsTotal calls rows for the guides and returns the total.
func rowsTotal(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rows",
		Arguments: map[string]any{"pipeline": "tables", "anchor": "guide", "count_only": true}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out struct {
		Total int `json:"total"`
	}
	require.NoError(t, json.Unmarshal(b, &out))
	return out.Total
}

// TestMCPStdioBesideNoopSync starts `kgsync mcp` as a desktop assistant
// does (a subprocess speaking MCP on stdin/stdout), and runs a sync while
// it serves: the sync is still a no-op (nothing new, changed, embedded or
// written), and the server answers before and after it.
func TestMCPStdioBesideNoopSync(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	bin := crashtest.BuildKgsync(t, t.TempDir())
	out, err := exec.Command(bin, "sync", "--config", cfg).CombinedOutput()
	require.NoError(t, err, string(out))

	ctx := context.Background()
	cmd := exec.Command(bin, "mcp", "--config", cfg)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 6)
	require.Equal(t, 19, rowsTotal(t, cs))

	for _, pipe := range []string{"docs", "tables"} {
		out, err := exec.Command(bin, "sync", pipe, "--config", cfg, "--json").Output()
		require.NoError(t, err, string(out))
		var r runJSON
		require.NoError(t, json.Unmarshal(out, &r), string(out))
		require.Equal(t, "succeeded", r.Status)
		require.Zero(t, r.Records.New+r.Records.Changed+r.Records.Deleted, string(out))
		require.Zero(t, r.Chunks.Embedded, string(out))
		require.Zero(t, r.Sink.Statements, string(out))
	}
	require.Equal(t, 19, rowsTotal(t, cs))
	files, err := filepath.Glob(filepath.Join(filepath.Dir(cfg), ".kgsync", "cypherl", "tables", "*-run*.cypherl"))
	require.NoError(t, err)
	require.Len(t, files, 1, "only the first run wrote the graph")
}

// bearer adds a token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestDaemonServesMCP connects the SDK's streamable HTTP client to the
// daemon's /mcp: without the API token it is refused, with it every tool
// is listed and rows answers.
func TestDaemonServesMCP(t *testing.T) {
	t.Parallel()
	const token = "mcp-token-5c1e"
	path := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "tables", "--config", path)
	require.Equal(t, 0, code, errOut)
	cfg, err := config.Load(path)
	require.NoError(t, err)
	cfg.Daemon.APIToken = token
	cfg.Daemon.PollInterval = time.Hour
	ctx := context.Background()
	store, err := pipeline.OpenStore(ctx, cfg.State)
	require.NoError(t, err)
	defer store.Close()
	log := slog.New(slog.DiscardHandler)
	h := &mcpHandler{cfg: cfg, store: store, log: log}
	defer h.Close()
	d, err := daemon.New(daemon.Options{
		Config: cfg, Store: store, Runner: &pipelineRunner{cfg: cfg, store: store, log: log},
		Registerer: prometheus.NewRegistry(), MCP: h,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}, MaxRetries: -1}, nil)
	require.NoError(t, err)
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 6)
	require.Equal(t, 19, rowsTotal(t, cs))
}

// TestEvalStructured runs `kgsync eval --structured` on the quick start's
// structured golden set: rows passes --min-rows 0.95 and the report has
// the search-only baselines beside it.
func TestEvalStructured(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "tables", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	golden := filepath.Join(filepath.Dir(cfg), "golden-tables.jsonl")
	code, out, errOut := kgsync(t, "eval", "--config", cfg, "--pipeline", "tables", "--structured", golden, "--min-rows", "0.95", "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Questions int `json:"questions"`
		Tools     []struct {
			Tool      string  `json:"tool"`
			ExactList float64 `json:"exact_list"`
			Count     float64 `json:"count"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, 33, rep.Questions)
	require.Len(t, rep.Tools, 3)
	require.Equal(t, "rows", rep.Tools[0].Tool)
	require.Equal(t, 1.0, rep.Tools[0].ExactList)
	require.Equal(t, "search", rep.Tools[1].Tool)

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"id": "x", "question": "q", "kind": "count", "answers": [], "count": 5, "rows": {"anchor": "guide"}}`+"\n"), 0o600))
	code, _, errOut = kgsync(t, "eval", "--config", cfg, "--pipeline", "tables", "--structured", bad, "--min-rows", "0.95")
	require.Equal(t, 4, code, errOut)
	require.Contains(t, errOut, "below --min-rows")
}
