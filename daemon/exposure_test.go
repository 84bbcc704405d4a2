package daemon

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/internal/testlog"
	"github.com/kgsync/kgsync/state/sqlite"
)

// serve runs a daemon with cfg and opts on ln until the test ends and
// returns Run's error channel and its logs.
func serve(t *testing.T, cfg config.Daemon, opts Options, ln net.Listener) (chan error, *testlog.Buffer) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Hour
	}
	logs := &testlog.Buffer{}
	opts.Config = &config.Config{Daemon: cfg, Pipelines: []config.Pipeline{{Name: "p", TimeZone: "UTC"}}}
	opts.Store = store
	opts.Runner = &fakeRunner{store: store, calls: make(chan call, 100)}
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	d, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Error("daemon did not stop")
		}
	})
	return done, logs
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:80": true, "[::1]:8080": true,
		"0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.4:8080": false, ":8080": false,
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		require.NoError(t, err)
		require.Equal(t, want, Loopback(a), addr)
	}
	require.True(t, Loopback(&net.UnixAddr{Name: "/run/kgsync.sock", Net: "unix"}))
}

// TestOpenAPIRefusedOffLoopback: on every interface without api_token the
// daemon refuses to start; --insecure-no-auth starts it with a warning; a
// token or a loopback address needs neither.
func TestOpenAPIRefusedOffLoopback(t *testing.T) {
	t.Parallel()
	listen := func(addr string) net.Listener {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		return ln
	}
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		ln := listen(":0")
		done, _ := serve(t, config.Daemon{}, Options{}, ln)
		select {
		case err := <-done:
			require.ErrorIs(t, err, ErrOpenAPI)
			require.Contains(t, err.Error(), "--insecure-no-auth")
			done <- err // for the cleanup
		case <-time.After(waitFor):
			t.Fatal("daemon started on every interface without a token")
		}
		_, err := net.Dial("tcp", ln.Addr().String())
		require.Error(t, err, "the refused listener is closed")
	})
	for name, tc := range map[string]struct {
		cfg   config.Daemon
		opts  Options
		addr  string
		warns bool
	}{
		"insecure flag": {opts: Options{InsecureNoAuth: true}, addr: ":0", warns: true},
		"token":         {cfg: config.Daemon{APIToken: testToken}, addr: ":0"},
		"loopback":      {addr: "127.0.0.1:0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ln := listen(tc.addr)
			done, logs := serve(t, tc.cfg, tc.opts, ln)
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			require.Eventually(t, func() bool {
				resp, err := http.Get("http://127.0.0.1:" + port + "/healthz")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			}, waitFor, 10*time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("daemon stopped: %v", err)
			default:
			}
			require.Equal(t, tc.warns, strings.Contains(logs.String(), "the API is open to the network"), logs.String())
		})
	}
}

// TestTokenGuardsReembedAndMassDelete: with api_token set, a loopback
// caller without it can neither re-embed nor confirm a mass delete.
func TestTokenGuardsReembedAndMassDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{daemon: config.Daemon{APIToken: testToken}})
	for _, q := range []string{"?mode=reembed", "?allow_mass_delete=true", "?mode=full&allow_mass_delete=true", ""} {
		code, body := b.do(t, "POST", "/api/pipelines/p/sync"+q, "", nil)
		require.Equal(t, http.StatusUnauthorized, code, "%s: %s", q, body)
		code, body = b.do(t, "POST", "/api/pipelines/p/sync"+q, "Bearer wrong", nil)
		require.Equal(t, http.StatusUnauthorized, code, "%s: %s", q, body)
	}
	code, body := b.do(t, "POST", "/api/pipelines/p/sync?mode=reembed&allow_mass_delete=true", "Bearer "+testToken, nil)
	require.Equal(t, http.StatusAccepted, code, body)
	c := b.nextCall(t)
	require.Equal(t, ModeReembed, c.mode.Base())
	require.True(t, c.mode.AllowsMassDelete())
	b.noCall(t, 50*time.Millisecond) // the refused POSTs queued nothing
}

// TestServerLimits: an idle keep-alive connection and a slow body are cut
// off, and oversized headers are refused.
func TestServerLimits(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	limits := HTTPLimits{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, MaxHeaderBytes: 4 << 10}
	serve(t, config.Daemon{WebhookSecret: testSecret}, Options{HTTP: limits}, ln)
	addr := ln.Addr().String()
	closedWithin := func(t *testing.T, c net.Conn, d time.Duration) {
		t.Helper()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
		_, err := io.Copy(io.Discard, c)
		require.NoError(t, err, "the server did not close the connection within %v", d)
	}
	t.Run("idle keep-alive", func(t *testing.T) {
		t.Parallel()
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		resp.Body.Close()
		closedWithin(t, c, 3*time.Second)
	})
	t.Run("slow body", func(t *testing.T) {
		t.Parallel()
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "POST /hooks/grist/p/T HTTP/1.1\r\nHost: x\r\nAuthorization: "+testSecret+
			"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[")
		require.NoError(t, err)
		start := time.Now()
		closedWithin(t, c, 3*time.Second)
		require.Less(t, time.Since(start), 3*time.Second)
	})
	t.Run("silent client", func(t *testing.T) {
		t.Parallel()
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "POST /api/pipelines/p/sync HTTP/1.1\r\n")
		require.NoError(t, err)
		closedWithin(t, c, 3*time.Second)
	})
	t.Run("huge header", func(t *testing.T) {
		t.Parallel()
		req, err := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
		require.NoError(t, err)
		req.Header.Set("X-Pad", strings.Repeat("a", 16<<10))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	})
}
