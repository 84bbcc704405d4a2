package memgraph

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The daemon's readiness check needs exactly this method set
// (daemon.Pinger); sink must not import daemon, so the shape is restated.
var _ interface{ Ping(context.Context) error } = (*Sink)(nil)

func TestPingReportsReachability(t *testing.T) {
	tb := setup(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, tb.sink.Ping(ctx))
	// Pinging runs no query: it would otherwise show in the recorded RUNs.
	require.Empty(t, tb.srv.Queries())

	tb.srv.Close()
	ctx2, cancel2 := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel2()
	err := tb.sink.Ping(ctx2)
	require.Error(t, err)
	require.Contains(t, err.Error(), "memgraph sink: ping bolt://127.0.0.1:")
}
