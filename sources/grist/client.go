package grist

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// APIError is a non-2xx answer from Grist. Message is the server's "error"
// field, followed by ": " and details.userError when present (grist-api.md
// §7), never the API key.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Doc is the document id, Table the table (may be "") and Op a short
	// description of the call ("read rows", "compare").
	Doc, Table, Op string
	// Message is the "error" field of the body (with details.userError),
	// or the body's start.
	Message string
}

// Error names the document, table and call; it never includes the API key.
func (e *APIError) Error() string {
	where := "grist document " + e.Doc
	if e.Table != "" {
		where += " table " + e.Table
	}
	hint := ""
	switch e.Status {
	case http.StatusUnauthorized:
		hint = " (check the API key configured for this document)"
	case http.StatusForbidden:
		hint = " (the API key's user lacks access)"
	case http.StatusNotFound:
		hint = " (document or table not found)"
	}
	return fmt.Sprintf("%s: %s: HTTP %d: %s%s", where, e.Op, e.Status, e.Message, hint)
}

// sqlTimeout reports whether err is the SQL endpoint's statement timeout
// (400 "a slow statement resulted in a database interrupt", grist-api.md §4).
func sqlTimeout(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusBadRequest &&
		strings.Contains(ae.Message, "slow statement")
}

func statusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// client performs Grist API calls for one document with bounded concurrency
// and retries.
type client struct {
	base   string // ".../api/docs/{docId}"
	doc    string
	key    string
	rc     *retryablehttp.Client
	sem    chan struct{}
	stats  *counters
	logger *slog.Logger
}

// semTransport caps in-flight requests; a request waiting for a retry holds
// no slot.
type semTransport struct {
	next http.RoundTripper
	sem  chan struct{}
}

func (t *semTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case t.sem <- struct{}{}:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		<-t.sem
		return nil, err
	}
	resp.Body = &releaseBody{ReadCloser: resp.Body, sem: t.sem}
	return resp, nil
}

// releaseBody frees the slot once the body is closed: a response being
// streamed still counts as in flight.
type releaseBody struct {
	io.ReadCloser
	sem  chan struct{}
	done atomic.Bool
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	if b.done.CompareAndSwap(false, true) {
		<-b.sem
	}
	return err
}

// jitterBackoff is exponential backoff with full jitter: a random wait in
// [min, min*2^attempt] capped at max. grist-core sends no Retry-After on
// 429 (grist-api.md §7, docs/grist-notes.md); a proxy or hosted service in
// front of it may: a 429 or 503 whose Retry-After (seconds or an HTTP
// date) asks for longer waits that long, never more than max.
func jitterBackoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if attempt > 30 {
		attempt = 30
	}
	hi := min << uint(attempt)
	if hi > max || hi <= 0 {
		hi = max
	}
	wait := min
	if hi > min {
		wait = min + time.Duration(rand.Int64N(int64(hi-min)))
	}
	if ra := retryAfter(resp, time.Now()); ra > wait {
		wait = ra
	}
	if wait > max && max >= min {
		wait = max
	}
	return wait
}

// retryAfter is how long a 429 or 503 answer's Retry-After header asks to
// wait (RFC 9110 §10.2.3: delay-seconds or an HTTP date), 0 when it has
// none or it cannot be read.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > 1<<31 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func newClient(cfg Config, stats *counters, logger *slog.Logger) (*client, error) {
	base := strings.TrimRight(cfg.Server, "/")
	if !strings.HasSuffix(base, "/api") {
		base += "/api"
	}
	base += "/docs/" + url.PathEscape(cfg.DocID)
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Minute}
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	sem := make(chan struct{}, cfg.MaxInFlight)
	wrapped := *hc
	wrapped.Transport = &semTransport{next: next, sem: sem}
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &wrapped
	rc.Logger = nil
	rc.RetryMax = cfg.RetryMax
	rc.RetryWaitMin = cfg.RetryWaitMin
	rc.RetryWaitMax = cfg.RetryWaitMax
	rc.Backoff = jitterBackoff
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil {
			return true, nil
		}
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			stats.Retries429.Add(1)
			return true, nil
		case resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
			// /compare answers 500 for an unknown or pruned hash
			// (grist-api.md "Observed" §8): that is an answer, not an outage.
			if strings.HasSuffix(resp.Request.URL.Path, "/compare") {
				return false, nil
			}
			stats.Retries5xx.Add(1)
			return true, nil
		}
		return false, nil
	}
	return &client{base: base, doc: cfg.DocID, key: cfg.APIKey, rc: rc, sem: sem, stats: stats, logger: logger}, nil
}

// do sends one request and returns the response with a 2xx or 304 status;
// any other status becomes an *APIError. body, if non-nil, is sent as JSON.
// The caller closes the body.
func (c *client) do(ctx context.Context, method, path string, q url.Values, body any, hdr http.Header, table, op string) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var raw any
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("grist document %s: %s: encode body: %w", c.doc, op, err)
		}
		raw = b
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, method, u, raw)
	if err != nil {
		return nil, fmt.Errorf("grist document %s: %s: %w", c.doc, op, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	c.stats.Requests.Add(1)
	resp, err := c.rc.Do(req)
	if err != nil {
		// err comes from net/http or the context; it holds the URL (no key).
		return nil, fmt.Errorf("grist document %s: %s: %w", c.doc, op, err)
	}
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotModified {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(b))
	// {"error": ..., "details"?: {"userError"?: ...}} (grist-api.md §7)
	var eb struct {
		Error   string `json:"error"`
		Details struct {
			UserError string `json:"userError"`
		} `json:"details"`
	}
	if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
		msg = eb.Error
		if eb.Details.UserError != "" {
			msg += ": " + eb.Details.UserError
		}
	}
	if c.key != "" {
		msg = strings.ReplaceAll(msg, c.key, "<redacted>")
	}
	return nil, &APIError{Status: resp.StatusCode, Doc: c.doc, Table: table, Op: op, Message: msg}
}

// getJSON decodes a JSON answer into out.
func (c *client) getJSON(ctx context.Context, method, path string, q url.Values, body any, table, op string, out any) error {
	resp, err := c.do(ctx, method, path, q, body, nil, table, op)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("grist document %s table %s: %s: decode response: %w", c.doc, table, op, err)
	}
	return nil
}

// download fetches raw bytes (attachments).
func (c *client) download(ctx context.Context, path, op string) ([]byte, error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil, nil, "", op)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, resp.Body); err != nil {
		return nil, fmt.Errorf("grist document %s: %s: %w", c.doc, op, err)
	}
	return buf.Bytes(), nil
}
