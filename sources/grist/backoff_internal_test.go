package grist

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBackoffHonoursRetryAfter: a 429 asking for one second is retried
// after at least a second, not after the 0.5 s backoff; a longer ask is
// bounded by the configured maximum; an HTTP date counts too.
func TestBackoffHonoursRetryAfter(t *testing.T) {
	min, max := 500*time.Millisecond, 30*time.Second
	resp := func(status int, ra string) *http.Response {
		h := http.Header{}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		return &http.Response{StatusCode: status, Header: h}
	}
	for range 20 {
		require.GreaterOrEqual(t, jitterBackoff(min, max, 0, resp(429, "1")), time.Second)
		require.LessOrEqual(t, jitterBackoff(min, max, 0, resp(429, "")), 2*min)
	}
	require.Equal(t, max, jitterBackoff(min, max, 0, resp(429, "3600")), "bounded")
	require.GreaterOrEqual(t, jitterBackoff(min, max, 0, resp(503, "5")), 5*time.Second)
	require.LessOrEqual(t, jitterBackoff(min, max, 0, resp(500, "5")), 2*min, "only 429 and 503 are asked to wait")
	when := time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)
	require.Greater(t, jitterBackoff(min, max, 0, resp(429, when)), 8*time.Second)
	require.LessOrEqual(t, jitterBackoff(min, max, 0, resp(429, "soon")), 2*min, "unreadable: the backoff")
}
