package daemon

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
)

// TestWebhookToRunStartLatency is the measurement as a test (it also
// checks that every delivery starts a run).
func TestWebhookToRunStartLatency(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{daemon: config.Daemon{WebhookSecret: testSecret, Debounce: 0}})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("heap in use after start: %.1f MiB (whole test process)", float64(ms.HeapInuse)/(1<<20))
	client := &http.Client{}
	lat := make([]time.Duration, 0, 100)
	for i := range 100 {
		body := fmt.Sprintf(`[{"id": %d, "manualSort": %d, "title": "row %d"}]`, i+1, i+1, i)
		req, err := http.NewRequest("POST", b.srv.URL+"/hooks/grist/p/Guides", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testSecret)
		start := time.Now()
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		c := b.nextCall(t)
		lat = append(lat, c.at.Sub(start))
		b.settled(t)
	}
	slices.Sort(lat)
	t.Logf("webhook → run start over %d one-row deliveries (debounce 0, fake runner, SQLite state): median %v, p99 %v, max %v",
		len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	require.Less(t, lat[len(lat)/2], time.Second, "median latency")
}
