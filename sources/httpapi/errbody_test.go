package httpapi

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// countingTransport counts the response body bytes its caller reads.
type countingTransport struct {
	base http.RoundTripper
	read *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if resp != nil {
		resp.Body = countingBody{ReadCloser: resp.Body, read: t.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	read *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// TestErrorBodyReadIsBounded: a 400 whose body never ends (the server
// writes until the connection is dropped, at most 256 MiB) is read only
// up to errBodyBytes, not up to max_body_bytes (64 MiB), and the error
// still quotes its start.
func TestErrorBodyReadIsBounded(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		n, _ := w.Write([]byte(`{"error":"invalid filter","detail":"`))
		served.Add(int64(n))
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for served.Load() < 256<<20 {
			n, err := w.Write(chunk)
			served.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".[]", Key: ".id", Anchor: "ticket"})
	var read atomic.Int64
	b.src.client.HTTPClient.Transport = countingTransport{base: b.src.client.HTTPClient.Transport, read: &read}
	_, err := readAll(t, b.src, "")
	require.ErrorIs(t, err, errClient4xx)
	require.ErrorContains(t, err, `page 1 (GET `+srv.URL+`/tickets): client error: status 400 Bad Request after 1 attempts; body begins "{\"error\":\"invalid filter\",\"detail\":\"xxx`)
	require.LessOrEqual(t, read.Load(), int64(errBodyBytes), "bytes of the error body read")
	srv.Close() // waits for the handler, which stops once the connection is dropped
	t.Logf("error body: %d bytes read, %d bytes served (socket buffers)", read.Load(), served.Load())
	require.Less(t, served.Load(), int64(DefaultMaxBodyBytes), "bytes served")
}

// TestErrorBodyConnectionReuse: an error body that ends within
// errBodyBytes is read to its end, so its connection is reused; a longer
// one is cut off and its connection dropped. Six detail fetches answering
// 404, one at a time, after the list page.
func TestErrorBodyConnectionReuse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		bodyBytes int
		conns     int32
	}{
		{"short body", 100, 1},
		{"long body", 1 << 20, 6}, // the list page's connection serves the first detail
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/tickets" {
					writeJSON(w, map[string]any{"tickets": tickets(6)})
					return
				}
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write(bytes.Repeat([]byte("n"), tc.bodyBytes))
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			b := setup(t, Config{
				URL: srv.URL + "/tickets", Records: ".tickets[]", Key: ".id", Anchor: "ticket",
				Detail: &Detail{URL: srv.URL + "/tickets/{{.key}}"}, Concurrency: 1,
			})
			pages, err := readAll(t, b.src, "")
			require.NoError(t, err)
			require.Len(t, pages[0].Skipped, 6)
			require.Equal(t, tc.conns, conns.Load(), "connections opened")
		})
	}
}
