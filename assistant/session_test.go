package assistant_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
)

// TestHTTPClosesIdleSessions: a streamable HTTP session with no request
// for SessionTimeout is closed, so the server does not keep every client
// that went away; a live session keeps working.
func TestHTTPClosesIdleSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, store, ps, err := build(ctx, quickstart(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	srv, err := assistant.New(assistant.Options{Pipelines: ps, SessionTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	hs := httptest.NewServer(srv.HTTPHandler())
	defer hs.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	defer cs.Close()
	for range 3 { // requests closer together than the timeout keep it open
		_, err = cs.ListTools(ctx, nil)
		require.NoError(t, err)
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	_, err = cs.ListTools(ctx, nil)
	require.Error(t, err, "an idle session is closed")
}
