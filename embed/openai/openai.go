// Package openai is an embed.Embedder for any OpenAI-compatible embeddings
// endpoint (OpenAI, Azure-style proxies, vLLM, LiteLLM, llama.cpp server,
// ...): POST {base_url}/embeddings with
//
//	{"model": "...", "input": ["...", ...], "dimensions": N, "encoding_format": "float"}
//
// ("dimensions" only when configured), answered by
//
//	{"data": [{"index": i, "embedding": [...]}, ...], "usage": {"prompt_tokens": n, "total_tokens": n}}
//
// Inputs are split into batches of Config.BatchSize texts, at most
// Config.MaxConcurrency requests are in flight per Embedder, and each
// request is retried by github.com/hashicorp/go-retryablehttp on connection
// errors, 429 and 5xx (except 501): after the server's Retry-After (seconds
// or an HTTP date) on 429 and 503, otherwise after an exponential back-off
// with jitter. Vectors are put back in input order by their "index" and
// checked for count and length. The API key is sent as a bearer token and
// never appears in logs or errors.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/kgsync/kgsync/embed"
)

// Defaults applied by New to zero Config fields (the same as config.Embedder's).
const (
	DefaultBatchSize      = 64
	DefaultMaxConcurrency = 2
	DefaultTimeout        = 60 * time.Second
	DefaultMaxRetries     = 5
	DefaultRetryWaitMin   = 500 * time.Millisecond
	DefaultRetryWaitMax   = 30 * time.Second
	DefaultMaxRetryAfter  = 5 * time.Minute
)

// maxResponseBytes bounds one response body (a batch of 2048 vectors of
// 3072 floats is about 120 MiB of JSON).
const maxResponseBytes = 256 << 20

// excerptBytes is the length of a response body excerpt in errors.
const excerptBytes = 300

// Config configures the client; ConfigFrom builds it from config.Embedder.
// Zero values take the Default* constants, except MaxRetries, where 0 means
// no retries.
type Config struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1"; requests go
	// to BaseURL + "/embeddings". Required, http or https.
	BaseURL string
	// Model is the model name sent to the API, e.g. "text-embedding-3-small". Required.
	Model string
	// Dimensions is the vector length, sent as "dimensions" when > 0. When 0
	// it is learnt from the first response and then enforced.
	Dimensions int
	// APIKey is sent as "Authorization: Bearer <key>" when not empty.
	APIKey string
	// BatchSize is the maximum number of texts per request.
	BatchSize int
	// MaxConcurrency is the maximum number of requests in flight per Embedder.
	MaxConcurrency int
	// Timeout bounds one HTTP attempt (connect, send, read the response).
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt of a request.
	MaxRetries int
	// RetryWaitMin and RetryWaitMax bound the exponential back-off: the
	// wait before retry n (from 0) is about RetryWaitMin × 2^n with jitter,
	// at most RetryWaitMax. They do not bound a server's Retry-After.
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxRetryAfter caps a server's Retry-After, so a misbehaving server
	// cannot park a run for hours.
	MaxRetryAfter time.Duration
	// HTTPClient is the client to use (its Timeout is overwritten with
	// Timeout); nil means a fresh pooled client.
	HTTPClient *http.Client
}

// Embedder is the OpenAI-compatible client; it satisfies embed.Embedder and
// embed.CallSizer and is safe for concurrent use.
type Embedder struct {
	cfg      Config
	endpoint string
	client   *retryablehttp.Client
	sem      chan struct{}
	dims     atomic.Int64
	tokens   atomic.Int64

	// now and onWait are seams for tests: the clock used to read HTTP-date
	// Retry-After values, and an observer of every computed wait.
	now    func() time.Time
	onWait func(time.Duration)
}

// New validates cfg, applies defaults and returns a client. logger receives
// go-retryablehttp's request and retry messages (never the API key); nil
// discards them. It returns an error naming the first invalid field.
func New(cfg Config, logger *slog.Logger) (*Embedder, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai embedder: base_url is required")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai embedder: base_url %q: want an http or https URL", cfg.BaseURL)
	}
	if cfg.Model == "" {
		return nil, errors.New("openai embedder: model is required")
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"dimensions", int64(cfg.Dimensions)},
		{"batch_size", int64(cfg.BatchSize)},
		{"max_concurrency", int64(cfg.MaxConcurrency)},
		{"timeout", int64(cfg.Timeout)},
		{"max_retries", int64(cfg.MaxRetries)},
		{"retry wait min", int64(cfg.RetryWaitMin)},
		{"retry wait max", int64(cfg.RetryWaitMax)},
		{"max retry after", int64(cfg.MaxRetryAfter)},
	} {
		if f.v < 0 {
			return nil, fmt.Errorf("openai embedder: %s must be >= 0, got %d", f.name, f.v)
		}
	}
	cfg.BatchSize = orDefault(cfg.BatchSize, DefaultBatchSize)
	cfg.MaxConcurrency = orDefault(cfg.MaxConcurrency, DefaultMaxConcurrency)
	cfg.Timeout = orDefault(cfg.Timeout, DefaultTimeout)
	cfg.RetryWaitMin = orDefault(cfg.RetryWaitMin, DefaultRetryWaitMin)
	cfg.RetryWaitMax = max(orDefault(cfg.RetryWaitMax, DefaultRetryWaitMax), cfg.RetryWaitMin)
	cfg.MaxRetryAfter = orDefault(cfg.MaxRetryAfter, DefaultMaxRetryAfter)

	e := &Embedder{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/embeddings",
		sem:      make(chan struct{}, cfg.MaxConcurrency),
		now:      time.Now,
	}
	e.dims.Store(int64(cfg.Dimensions))

	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	} else {
		c := *hc
		hc = &c
	}
	hc.Timeout = cfg.Timeout
	rc := &retryablehttp.Client{
		HTTPClient:   hc,
		RetryWaitMin: cfg.RetryWaitMin,
		RetryWaitMax: cfg.RetryWaitMax,
		RetryMax:     cfg.MaxRetries,
		CheckRetry:   checkRetry,
		Backoff:      e.backoff,
		// Hand back the last response so errors carry its status and body.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	if logger != nil {
		rc.Logger = quietErrors{logger.With(slog.String("embedder", "openai"), slog.String("model", cfg.Model))}
	}
	e.client = rc
	return e, nil
}

func orDefault[T int | time.Duration](v, d T) T {
	if v == 0 {
		return d
	}
	return v
}

// Model returns "openai/<model>/<dims>", with "auto" for dims when
// Dimensions is not configured: the key must not change when the dimension
// is learnt, since it keys the embedding cache.
func (e *Embedder) Model() string {
	if e.cfg.Dimensions > 0 {
		return fmt.Sprintf("openai/%s/%d", e.cfg.Model, e.cfg.Dimensions)
	}
	return fmt.Sprintf("openai/%s/auto", e.cfg.Model)
}

// Dimensions returns the configured vector length, or the length learnt
// from the first response (0 until then; see Probe).
func (e *Embedder) Dimensions() int { return int(e.dims.Load()) }

// CallSize is BatchSize × MaxConcurrency: the texts one Embed call needs to
// keep every allowed request busy (see embed.CallSizer).
func (e *Embedder) CallSize() int { return e.cfg.BatchSize * e.cfg.MaxConcurrency }

// Tokens returns the total "usage.total_tokens" reported by the server so far.
func (e *Embedder) Tokens() int64 { return e.tokens.Load() }

// Probe makes sure Dimensions is known: when it is neither configured nor
// learnt yet, it embeds one short text and returns the learnt length.
func (e *Embedder) Probe(ctx context.Context) (int, error) {
	if d := e.Dimensions(); d > 0 {
		return d, nil
	}
	if _, err := e.Embed(ctx, []string{"dimension probe"}); err != nil {
		return 0, fmt.Errorf("probe dimensions: %w", err)
	}
	return e.Dimensions(), nil
}

// Embed returns one vector per text, in order, sending batches of at most
// BatchSize texts with at most MaxConcurrency requests in flight. The first
// failing batch cancels the others; its error names the batch's text range,
// the HTTP status (as *embed.StatusError) and a short body excerpt.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	fail := func(err error) {
		once.Do(func() {
			firstErr = err
			cancel(err)
		})
	}
loop:
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		end := min(start+e.cfg.BatchSize, len(texts))
		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		wg.Go(func() {
			defer func() { <-e.sem }()
			vecs, err := e.request(ctx, texts[start:end])
			if err != nil {
				fail(fmt.Errorf("embed texts %d-%d: %w", start, end-1, err))
				return
			}
			copy(out[start:end], vecs)
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embed %d texts: %w", len(texts), context.Cause(ctx))
	}
	return out, nil
}

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format"`
}

type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

// request sends one batch (with retries) and returns its vectors in input order.
func (e *Embedder) request(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{
		Model:          e.cfg.Model,
		Input:          texts,
		Dimensions:     e.cfg.Dimensions,
		EncodingFormat: "float",
	})
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, body)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
	resp, err := e.client.Do(req)
	if resp == nil {
		if err == nil {
			err = errors.New("no response")
		}
		return nil, fmt.Errorf("POST %s: %w", e.endpoint, e.redactErr(err))
	}
	defer resp.Body.Close()
	raw, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ra, _ := retryAfter(resp, e.now())
		return nil, fmt.Errorf("POST %s: %w", e.endpoint, &embed.StatusError{
			Code:       resp.StatusCode,
			Body:       e.excerpt(raw),
			RetryAfter: ra,
		})
	}
	if readErr != nil {
		return nil, fmt.Errorf("POST %s: read response: %w", e.endpoint, e.redactErr(readErr))
	}
	if len(raw) > maxResponseBytes {
		return nil, fmt.Errorf("POST %s: response larger than %d bytes", e.endpoint, maxResponseBytes)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("POST %s: malformed response JSON: %v (body: %s)", e.endpoint, err, e.excerpt(raw))
	}
	return e.vectors(&r, len(texts))
}

// vectors checks a decoded response against the batch and orders it by index.
func (e *Embedder) vectors(r *response, n int) ([][]float32, error) {
	if len(r.Data) != n {
		return nil, fmt.Errorf("response has %d vectors for %d inputs", len(r.Data), n)
	}
	out := make([][]float32, n)
	for i, d := range r.Data {
		if d.Index == nil {
			return nil, fmt.Errorf("response data[%d] has no index", i)
		}
		idx := *d.Index
		if idx < 0 || idx >= n {
			return nil, fmt.Errorf("response data[%d] has index %d, want 0..%d", i, idx, n-1)
		}
		if out[idx] != nil {
			return nil, fmt.Errorf("response data[%d] repeats index %d", i, idx)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("response data[%d] (index %d) has an empty embedding", i, idx)
		}
		want := e.dims.Load()
		if want == 0 && e.dims.CompareAndSwap(0, int64(len(d.Embedding))) {
			want = int64(len(d.Embedding))
		} else if want == 0 {
			want = e.dims.Load()
		}
		if int64(len(d.Embedding)) != want {
			return nil, fmt.Errorf("response data[%d] (index %d) has %d dimensions, want %d", i, idx, len(d.Embedding), want)
		}
		out[idx] = d.Embedding
	}
	e.tokens.Add(r.Usage.TotalTokens)
	return out, nil
}

// backoff is the retryablehttp.Backoff: Retry-After (capped at
// MaxRetryAfter) on 429 and 503 when the server sends it, otherwise
// "equal jitter" exponential back-off: half of min(max, min·2^attempt)
// plus a random share of the other half.
func (e *Embedder) backoff(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	wait := e.computeWait(lo, hi, attempt, resp)
	if e.onWait != nil {
		e.onWait(wait)
	}
	return wait
}

func (e *Embedder) computeWait(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	base := float64(lo) * math.Pow(2, float64(attempt))
	if base > float64(hi) || math.IsInf(base, 0) {
		base = float64(hi)
	}
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := retryAfter(resp, e.now()); ok {
			// The server's wait, or the back-off's when that is longer: a
			// server repeating "Retry-After: 1" still gets waits that
			// double.
			return min(max(d, time.Duration(base)), max(e.cfg.MaxRetryAfter, time.Duration(base)))
		}
	}
	half := time.Duration(base / 2)
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// quietErrors is go-retryablehttp's leveled logger over slog, with its
// per-attempt "request failed" errors at info level: a failure that ends
// the retries reaches the caller as the Embed error, reported once there.
type quietErrors struct{ *slog.Logger }

func (q quietErrors) Error(msg string, kv ...any) { q.Logger.Info(msg, kv...) }

// checkRetry is retryablehttp.DefaultRetryPolicy, except that a 429 whose
// body says the account's quota is spent (OpenAI's error code
// "insufficient_quota") is final: no wait makes it pass, and retrying it
// only repeats the refusal.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if err == nil && resp != nil && resp.StatusCode == http.StatusTooManyRequests && quotaSpent(resp) {
		return false, nil
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// quotaSpent reports whether a response body (its first 64 KiB, put back
// for the caller) names the error code insufficient_quota.
func quotaSpent(resp *http.Response) bool {
	if resp.Body == nil {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return err == nil && bytes.Contains(head, []byte(`"insufficient_quota"`))
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3), relative to now; a date in the past is 0.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// excerpt returns the start of a response body on one line, valid UTF-8,
// with the API key redacted.
func (e *Embedder) excerpt(b []byte) string {
	cut := len(b) > excerptBytes
	if cut {
		b = b[:excerptBytes]
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ { // do not split the last rune
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	s = e.redact(s)
	if cut {
		s += "…"
	}
	return s
}

func (e *Embedder) redact(s string) string {
	if e.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, e.cfg.APIKey, "[redacted]")
}

// redactErr keeps err for errors.Is/As unless its text holds the key.
func (e *Embedder) redactErr(err error) error {
	if e.cfg.APIKey == "" || !strings.Contains(err.Error(), e.cfg.APIKey) {
		return err
	}
	return redactedError{msg: e.redact(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (r redactedError) Error() string { return r.msg }
func (r redactedError) Unwrap() error { return r.err }
