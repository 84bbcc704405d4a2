package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/embed/hashing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-test-0123456789abcdef"

// fakeAPI speaks the OpenAI embeddings API. By default it embeds every input
// with the hashing embedder (so expected vectors are computed independently
// of the client) and answers in order; reply overrides the answer of a
// request by number (1-based).
type fakeAPI struct {
	t      *testing.T
	dims   int
	hash   *hashing.Embedder
	reply  func(n int, w http.ResponseWriter, req request) bool // true = handled
	mu     sync.Mutex
	reqs   []request
	auth   []string
	server *httptest.Server
}

func newFakeAPI(t *testing.T, dims int) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, dims: dims, hash: hashing.New("", dims)}
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.server.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	n := len(f.reqs)
	f.mu.Unlock()
	if f.reply != nil && f.reply(n, w, req) {
		return
	}
	f.write(w, req, slices.Collect(indexes(len(req.Input))))
}

func indexes(n int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// write answers req with the data items of the given input indexes, in that order.
func (f *fakeAPI) write(w http.ResponseWriter, req request, order []int) {
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, 0, len(order))
	for _, i := range order {
		data = append(data, item{Object: "embedding", Index: i, Embedding: f.hash.Vector(req.Input[i])})
	}
	w.Header().Set("Content-Type", "application/json")
	require.NoError(f.t, json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)},
	}))
}

func (f *fakeAPI) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// config returns a fast-retrying config for the fake.
func (f *fakeAPI) config() Config {
	return Config{
		BaseURL:      f.server.URL + "/v1/",
		Model:        "text-embedding-3-small",
		Dimensions:   f.dims,
		APIKey:       testKey,
		BatchSize:    4,
		MaxRetries:   3,
		RetryWaitMin: time.Millisecond,
		RetryWaitMax: 5 * time.Millisecond,
	}
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text number %d about topic %d", i, i%3)
	}
	return out
}

func newEmbedder(t *testing.T, cfg Config) (*Embedder, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := New(cfg, logger)
	require.NoError(t, err)
	return e, &logs
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestBatchingAndOrder(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	e, _ := newEmbedder(t, f.config())
	in := texts(10)

	got, err := e.Embed(t.Context(), in)
	require.NoError(t, err)
	require.Len(t, got, 10)
	for i, text := range in {
		require.Equal(t, f.hash.Vector(text), got[i], "text %d", i)
	}
	reqs := f.requests()
	require.Len(t, reqs, 3) // ceil(10 / 4)
	var sizes []int
	var sent []string
	for _, r := range reqs {
		sizes = append(sizes, len(r.Input))
		sent = append(sent, r.Input...)
		require.Equal(t, "text-embedding-3-small", r.Model)
		require.Equal(t, 8, r.Dimensions)
		require.Equal(t, "float", r.EncodingFormat)
	}
	slices.Sort(sizes)
	require.Equal(t, []int{2, 4, 4}, sizes)
	slices.Sort(sent)
	want := slices.Clone(in)
	slices.Sort(want)
	require.Equal(t, want, sent, "every text sent exactly once")
	require.Equal(t, int64(10), e.Tokens())
}

func TestShuffledIndexRestoresOrder(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	f.reply = func(_ int, w http.ResponseWriter, req request) bool {
		order := slices.Collect(indexes(len(req.Input)))
		slices.Reverse(order)
		order[0], order[1] = order[1], order[0]
		f.write(w, req, order)
		return true
	}
	cfg := f.config()
	cfg.BatchSize = 5
	e, _ := newEmbedder(t, cfg)
	in := texts(5)
	got, err := e.Embed(t.Context(), in)
	require.NoError(t, err)
	for i, text := range in {
		require.Equal(t, f.hash.Vector(text), got[i], "text %d", i)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	f.reply = func(n int, w http.ResponseWriter, _ request) bool {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"message":"rate limited"}}`, http.StatusTooManyRequests)
			return true
		}
		return false
	}
	e, _ := newEmbedder(t, f.config())
	var waits []time.Duration
	e.onWait = func(d time.Duration) { waits = append(waits, d) } // one request: no concurrent calls
	start := time.Now()
	got, err := e.Embed(t.Context(), []string{"hello"})
	elapsed := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, f.hash.Vector("hello"), got[0])
	require.Len(t, f.requests(), 2)
	// The server's 1s, not the configured 1–5 ms back-off.
	require.Equal(t, []time.Duration{time.Second}, waits)
	require.GreaterOrEqual(t, elapsed, time.Second)
}

// TestInsufficientQuotaIsFinal: a 429 whose body says the quota is spent
// was retried (11 times in 10 s); no wait makes it pass: one request, and
// the error carries the status and body.
func TestInsufficientQuotaIsFinal(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	f.reply = func(n int, w http.ResponseWriter, _ request) bool {
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, http.StatusTooManyRequests)
		return true
	}
	e, _ := newEmbedder(t, f.config())
	_, err := e.Embed(t.Context(), []string{"hello"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "insufficient_quota")
	require.Len(t, f.requests(), 1, "not retried")
}

func TestComputeWait(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	e, err := New(Config{BaseURL: "http://x", Model: "m", MaxRetryAfter: time.Minute}, nil)
	require.NoError(t, err)
	e.now = func() time.Time { return now }
	resp := func(code int, retryAfter string) *http.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	lo, hi := 100*time.Millisecond, 2*time.Second
	tests := []struct {
		name     string
		resp     *http.Response
		attempt  int
		min, max time.Duration
	}{
		{"429 seconds", resp(429, "7"), 0, 7 * time.Second, 7 * time.Second},
		{"503 http date", resp(503, now.Add(30*time.Second).Format(http.TimeFormat)), 0, 30 * time.Second, 30 * time.Second},
		{"503 date in the past backs off", resp(503, now.Add(-time.Hour).Format(http.TimeFormat)), 0, lo, lo},
		// A Retry-After shorter than the back-off does not stop it
		// doubling: attempt 4 waits lo·2^4.
		{"429 Retry-After below the back-off", resp(429, "1"), 4, 16 * lo, 16 * lo},
		{"429 capped at MaxRetryAfter", resp(429, "86400"), 0, time.Minute, time.Minute},
		// Retry-After is only honoured on 429 and 503; 500 backs off.
		{"500 ignores Retry-After", resp(500, "7"), 0, lo / 2, lo},
		{"429 without header backs off", resp(429, ""), 1, lo, 2 * lo},
		{"429 garbage header backs off", resp(429, "soon"), 0, lo / 2, lo},
		{"connection error attempt 2", nil, 2, 2 * lo, 4 * lo},
		{"capped at max", resp(502, ""), 10, hi / 2, hi},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 50 { // jitter: every draw within [base/2, base]
				d := e.computeWait(lo, hi, tt.attempt, tt.resp)
				require.GreaterOrEqual(t, d, tt.min)
				require.LessOrEqual(t, d, tt.max)
			}
		})
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	f.reply = func(n int, w http.ResponseWriter, _ request) bool {
		if n == 1 {
			http.Error(w, "upstream hiccup", http.StatusInternalServerError)
			return true
		}
		return false
	}
	e, _ := newEmbedder(t, f.config())
	got, err := e.Embed(t.Context(), []string{"a", "b"})
	require.NoError(t, err)
	require.Equal(t, [][]float32{f.hash.Vector("a"), f.hash.Vector("b")}, got)
	require.Len(t, f.requests(), 2)
}

func TestServerErrorRetriesExhausted(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	f.reply = func(_ int, w http.ResponseWriter, _ request) bool {
		http.Error(w, "still down", http.StatusBadGateway)
		return true
	}
	cfg := f.config()
	cfg.MaxRetries = 2
	e, _ := newEmbedder(t, cfg)
	_, err := e.Embed(t.Context(), []string{"a"})
	var se *embed.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusBadGateway, se.Code)
	require.ErrorContains(t, err, "embed texts 0-0: POST "+f.server.URL+"/v1/embeddings: status 502: still down")
	require.Len(t, f.requests(), 3) // first attempt + 2 retries
}

func TestBadRequestNotRetried(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	long := strings.Repeat("x", 1000)
	f.reply = func(_ int, w http.ResponseWriter, _ request) bool {
		http.Error(w, `{"error": {"message": "input too long", "detail": "`+long+`"}}`, http.StatusBadRequest)
		return true
	}
	e, _ := newEmbedder(t, f.config())
	_, err := e.Embed(t.Context(), []string{"a"})
	var se *embed.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusBadRequest, se.Code)
	require.False(t, se.Temporary())
	require.ErrorContains(t, err, `status 400: {"error": {"message": "input too long"`)
	require.Less(t, len(err.Error()), 600, "the body is cut to an excerpt")
	require.Len(t, f.requests(), 1)
}

func TestAPIKeySentButNeverShown(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	f.reply = func(_ int, w http.ResponseWriter, _ request) bool {
		// Some servers echo the key they rejected.
		http.Error(w, "Incorrect API key provided: "+testKey+".", http.StatusUnauthorized)
		return true
	}
	e, logs := newEmbedder(t, f.config())
	_, err := e.Embed(t.Context(), []string{"a"})
	require.Error(t, err)
	require.Equal(t, []string{"Bearer " + testKey}, f.auth)
	require.NotContains(t, err.Error(), testKey)
	require.ErrorContains(t, err, "status 401: Incorrect API key provided: [redacted].")
	require.NotEmpty(t, logs.String(), "the logger is used")
	require.NotContains(t, logs.String(), testKey)

	// Without a key, no Authorization header.
	f2 := newFakeAPI(t, 8)
	cfg := f2.config()
	cfg.APIKey = ""
	e2, _ := newEmbedder(t, cfg)
	_, err = e2.Embed(t.Context(), []string{"a"})
	require.NoError(t, err)
	require.Equal(t, []string{""}, f2.auth)
}

func TestResponseValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    func(req request) string
		wantErr string
	}{
		{
			name: "wrong dimension",
			body: func(request) string {
				return `{"data":[{"index":0,"embedding":[1,2,3]},{"index":1,"embedding":[1,2,3]}]}`
			},
			wantErr: "response data[0] (index 0) has 3 dimensions, want 8",
		},
		{
			name:    "fewer vectors than inputs",
			body:    func(request) string { return `{"data":[{"index":0,"embedding":[1,2,3,4,5,6,7,8]}]}` },
			wantErr: "response has 1 vectors for 2 inputs",
		},
		{
			name:    "malformed JSON",
			body:    func(request) string { return `{"data":[{"index":0,"embedding":[1,2` },
			wantErr: "malformed response JSON: unexpected end of JSON input",
		},
		{
			name: "base64 instead of floats",
			body: func(request) string {
				return `{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]}`
			},
			wantErr: "malformed response JSON",
		},
		{
			name: "index out of range",
			body: func(request) string {
				return `{"data":[{"index":0,"embedding":[1,2,3,4,5,6,7,8]},{"index":2,"embedding":[1,2,3,4,5,6,7,8]}]}`
			},
			wantErr: "response data[1] has index 2, want 0..1",
		},
		{
			name: "repeated index",
			body: func(request) string {
				return `{"data":[{"index":1,"embedding":[1,2,3,4,5,6,7,8]},{"index":1,"embedding":[1,2,3,4,5,6,7,8]}]}`
			},
			wantErr: "response data[1] repeats index 1",
		},
		{
			name:    "missing index",
			body:    func(request) string { return `{"data":[{"embedding":[1]},{"embedding":[1]}]}` },
			wantErr: "response data[0] has no index",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, 8)
			f.reply = func(_ int, w http.ResponseWriter, req request) bool {
				w.Header().Set("Content-Type", "application/json")
				_, err := w.Write([]byte(tt.body(req)))
				require.NoError(t, err)
				return true
			}
			e, _ := newEmbedder(t, f.config())
			got, err := e.Embed(t.Context(), []string{"a", "b"})
			require.ErrorContains(t, err, tt.wantErr)
			require.Nil(t, got)
			require.Len(t, f.requests(), 1, "a bad 200 response is not retried")
		})
	}
}

func TestDimensionsLearntThenEnforced(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	cfg := f.config()
	cfg.Dimensions = 0
	e, _ := newEmbedder(t, cfg)
	require.Equal(t, "openai/text-embedding-3-small/auto", e.Model())
	require.Zero(t, e.Dimensions())

	d, err := e.Probe(t.Context())
	require.NoError(t, err)
	require.Equal(t, 8, d)
	require.Equal(t, 8, e.Dimensions())
	require.Equal(t, "openai/text-embedding-3-small/auto", e.Model(), "the cache key does not move")
	require.Zero(t, f.requests()[0].Dimensions, "dimensions not sent when not configured")

	f.reply = func(_ int, w http.ResponseWriter, _ request) bool {
		_, err := w.Write([]byte(`{"data":[{"index":0,"embedding":[1,2,3]}]}`))
		require.NoError(t, err)
		return true
	}
	_, err = e.Embed(t.Context(), []string{"a"})
	require.ErrorContains(t, err, "has 3 dimensions, want 8")
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	var inFlight, maxInFlight atomic.Int64
	arrived := make(chan struct{}, 100)
	release := make(chan struct{})
	f := newFakeAPI(t, 8)
	f.reply = func(_ int, _ http.ResponseWriter, _ request) bool {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		arrived <- struct{}{}
		<-release
		return false
	}
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before the server's Close, also when the test fails
	cfg := f.config()
	cfg.BatchSize = 2
	cfg.MaxConcurrency = 2
	e, _ := newEmbedder(t, cfg)
	require.Equal(t, 4, e.CallSize())

	type result struct {
		vecs [][]float32
		err  error
	}
	done := make(chan result, 1)
	in := texts(12) // 6 batches
	go func() {
		v, err := e.Embed(context.Background(), in)
		done <- result{v, err}
	}()
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(5 * time.Second):
			t.Fatal("two requests should be in flight")
		}
	}
	select {
	case <-arrived:
		t.Fatal("a third request arrived while two were in flight")
	case <-time.After(100 * time.Millisecond):
	}
	unblock()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		for i, text := range in {
			require.Equal(t, f.hash.Vector(text), r.vecs[i])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("embed did not finish")
	}
	require.Equal(t, int64(2), maxInFlight.Load())
	require.Len(t, f.requests(), 6)
}

func TestFirstFailureCancelsTheRest(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	f.reply = func(_ int, w http.ResponseWriter, req request) bool {
		if slices.Contains(req.Input, "poison") {
			http.Error(w, "bad input", http.StatusBadRequest)
			return true
		}
		return false
	}
	cfg := f.config()
	cfg.BatchSize = 1
	cfg.MaxConcurrency = 1
	e, _ := newEmbedder(t, cfg)
	_, err := e.Embed(t.Context(), []string{"a", "poison", "c", "d", "e"})
	require.ErrorContains(t, err, "embed texts 1-1: ")
	require.ErrorContains(t, err, "status 400: bad input")
	require.Len(t, f.requests(), 2, "no batch is sent after the failure")
}

func TestContextCancelled(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	e, _ := newEmbedder(t, f.config())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := e.Embed(ctx, texts(9))
	require.ErrorIs(t, err, context.Canceled)
}

func TestNewValidatesAndDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg     Config
		wantErr string
	}{
		{Config{Model: "m"}, "openai embedder: base_url is required"},
		{Config{BaseURL: "ftp://x", Model: "m"}, `openai embedder: base_url "ftp://x": want an http or https URL`},
		{Config{BaseURL: "localhost:8080", Model: "m"}, `want an http or https URL`},
		{Config{BaseURL: "http://x"}, "openai embedder: model is required"},
		{Config{BaseURL: "http://x", Model: "m", BatchSize: -1}, "openai embedder: batch_size must be >= 0, got -1"},
		{Config{BaseURL: "http://x", Model: "m", Dimensions: -3}, "openai embedder: dimensions must be >= 0, got -3"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg, nil)
		require.ErrorContains(t, err, tt.wantErr)
	}
	e, err := New(Config{BaseURL: "https://api.example.com/v1", Model: "text-embedding-3-large", Dimensions: 256}, nil)
	require.NoError(t, err)
	require.Equal(t, "openai/text-embedding-3-large/256", e.Model())
	require.Equal(t, 256, e.Dimensions())
	require.Equal(t, DefaultBatchSize*DefaultMaxConcurrency, e.CallSize())
	require.Equal(t, "https://api.example.com/v1/embeddings", e.endpoint)
	require.Equal(t, DefaultTimeout, e.client.HTTPClient.Timeout)
	require.Zero(t, e.client.RetryMax, "MaxRetries 0 means no retries")
}

func TestEmptyInput(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	e, _ := newEmbedder(t, f.config())
	got, err := e.Embed(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Empty(t, f.requests())
}

// TestWithEmbedAll checks the provider behind the cache lookup: a second
// EmbedAll over the same texts sends nothing.
func TestWithEmbedAll(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, 8)
	e, _ := newEmbedder(t, f.config())
	cache := embed.NewMemCache()
	in := texts(10)
	_, st, err := embed.EmbedAll(t.Context(), e, cache, in)
	require.NoError(t, err)
	require.Equal(t, 10, st.Embedded)
	require.Equal(t, 2, st.Calls) // CallSize 4×2 = 8, then 2
	_, st, err = embed.EmbedAll(t.Context(), e, cache, in)
	require.NoError(t, err)
	require.Equal(t, embed.Stats{Reused: 10}, st)
	require.Len(t, f.requests(), 3) // 8 texts in 2 batches, then 2 in 1
}

func TestConfigFrom(t *testing.T) {
	t.Parallel()
	zero := 0
	c := ConfigFrom(config.Embedder{
		Provider: "openai", Model: "m", Dimensions: 64, BaseURL: "http://h/v1", APIKey: "k",
		BatchSize: 8, MaxConcurrency: 3, Timeout: time.Second,
	})
	require.Equal(t, Config{
		BaseURL: "http://h/v1", Model: "m", Dimensions: 64, APIKey: "k",
		BatchSize: 8, MaxConcurrency: 3, Timeout: time.Second, MaxRetries: 5,
	}, c)
	require.Zero(t, ConfigFrom(config.Embedder{MaxRetries: &zero}).MaxRetries)
}
