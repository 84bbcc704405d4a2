package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/kgsync/kgsync/sources"
)

// limitedTransport waits for the rate limiter before every attempt.
type limitedTransport struct {
	base    http.RoundTripper
	limiter *rate.Limiter
}

// RoundTrip implements http.RoundTripper.
func (t *limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.limiter.Wait(r.Context()); err != nil {
		return nil, fmt.Errorf("rate limit: %w", err)
	}
	return t.base.RoundTrip(r)
}

// exhaustedError reports that retries ran out.
type exhaustedError struct {
	attempts int
	err      error // last transport error, nil when the last answer was an HTTP status
}

func (e *exhaustedError) Error() string {
	return fmt.Sprintf("giving up after %d attempts: %v", e.attempts, e.err)
}

func (e *exhaustedError) Unwrap() error { return e.err }

// redactedError is an error whose message has the source's secrets removed;
// Unwrap keeps errors.Is working.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact returns err with every configured secret replaced by "[redacted]".
func (s *Source) redact(err error) error {
	if err == nil || len(s.secrets) == 0 {
		return err
	}
	msg := err.Error()
	clean := msg
	for _, sec := range s.secrets {
		clean = strings.ReplaceAll(clean, sec, "[redacted]")
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// newClient builds the retrying client: DefaultRetryPolicy (429, 5xx except
// 501, transport errors) and DefaultBackoff (Retry-After on 429/503, else
// exponential), capped at Retry.RetryAfterMax.
func (s *Source) newClient() *retryablehttp.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = s.cfg.Concurrency + 1
	var rt http.RoundTripper = base
	if s.cfg.RateLimit > 0 {
		rt = &limitedTransport{base: base, limiter: rate.NewLimiter(rate.Limit(s.cfg.RateLimit), s.cfg.Burst)}
	}
	c := retryablehttp.NewClient()
	c.HTTPClient = &http.Client{Transport: rt, Timeout: s.cfg.Timeout}
	c.Logger = s.logger
	c.RetryMax = s.cfg.Retry.Max
	c.RetryWaitMin = s.cfg.Retry.WaitMin
	c.RetryWaitMax = s.cfg.Retry.WaitMax
	c.Backoff = func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
		d := retryablehttp.DefaultBackoff(lo, hi, attempt, resp)
		if d > s.cfg.Retry.RetryAfterMax {
			d = s.cfg.Retry.RetryAfterMax
		}
		if s.wait != nil {
			return s.wait(d)
		}
		return d
	}
	c.ErrorHandler = func(resp *http.Response, err error, attempts int) (*http.Response, error) {
		return resp, &exhaustedError{attempts: attempts, err: err}
	}
	return c
}

// response is a decoded answer.
type response struct {
	body   any
	header http.Header
}

// errClient4xx marks a 4xx answer (not 429), which retrying cannot fix.
var errClient4xx = errors.New("client error")

// get fetches u and decodes its JSON body. body is the request body ("" for
// none). Errors name the method and URL; the caller adds page and record.
// Its stages: take a concurrency slot, build the request (newRequest),
// send it with retries (do), decode the answer (decode).
func (s *Source) get(ctx context.Context, method string, u *url.URL, body string) (*response, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.sem }()

	req, err := s.newRequest(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	resp, attempts, err := s.do(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return s.decode(resp, attempts)
}

// newRequest builds the request for u with the configured headers and
// auth.
func (s *Source) newRequest(ctx context.Context, method string, u *url.URL, body string) (*retryablehttp.Request, error) {
	var rb any
	if body != "" {
		rb = []byte(body)
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, method, u.String(), rb)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	a := s.cfg.Auth
	switch {
	case a.Bearer != "":
		req.Header.Set("Authorization", "Bearer "+a.Bearer)
	case a.APIKeyHeader != "":
		req.Header.Set(a.APIKeyHeader, a.APIKey)
	case a.Username != "" || a.Password != "":
		req.SetBasicAuth(a.Username, a.Password)
	}
	return req, nil
}

// do sends req, retrying as the client does, and returns the last answer
// with the number of attempts it took. An answer whose status exhausted
// the retries is returned as an answer (decode reports it); a transport
// failure as an error without the URL, which the caller names.
func (s *Source) do(ctx context.Context, req *retryablehttp.Request) (*http.Response, int, error) {
	resp, err := s.client.Do(req)
	attempts := 1
	var ex *exhaustedError
	if errors.As(err, &ex) {
		attempts = ex.attempts
		if ex.err == nil {
			err = nil // the last answer was a retryable status; reported below
		}
	}
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return nil, attempts, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named by the caller
		}
		return nil, attempts, fmt.Errorf("after %d attempts: %w", attempts, err)
	}
	return resp, attempts, nil
}

// errBodyBytes bounds what is read of an error answer's body (a status
// outside 2xx): its start is only quoted. A longer body is not read to
// its end: closing it drops the connection instead of downloading up to
// max_body_bytes, as go-retryablehttp does with the answers it retries
// (4 KiB too); a body that ends within the bound leaves the connection
// to be reused.
const errBodyBytes = 4 << 10

// decode reads resp's body (at most MaxBodyBytes) and decodes it as JSON.
// 304 (which has no body) is sources.ErrNotModified; another status
// outside 2xx is an error (errClient4xx for a 4xx but 429, which
// retrying cannot fix) quoting the
// start of the body, of which at most errBodyBytes are read.
func (s *Source) decode(resp *http.Response, attempts int) (*response, error) {
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return nil, sources.ErrNotModified
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, min(errBodyBytes, s.cfg.MaxBodyBytes)))
		err := fmt.Errorf("status %d %s after %d attempts%s", resp.StatusCode, http.StatusText(resp.StatusCode), attempts, snippet(b))
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
			err = fmt.Errorf("%w: %w", errClient4xx, err)
		}
		return nil, err
	}
	b, readErr := io.ReadAll(io.LimitReader(resp.Body, s.cfg.MaxBodyBytes+1))
	if readErr != nil {
		return nil, fmt.Errorf("read body: %w", readErr)
	}
	if int64(len(b)) > s.cfg.MaxBodyBytes {
		return nil, fmt.Errorf("body larger than %d bytes (max_body_bytes)", s.cfg.MaxBodyBytes)
	}
	v, err := decodeJSON(b)
	if err != nil {
		ct := resp.Header.Get("Content-Type")
		if mt, _, perr := mime.ParseMediaType(ct); perr == nil {
			ct = mt
		}
		return nil, fmt.Errorf("invalid JSON (status %d, content-type %q): %w%s", resp.StatusCode, ct, err, snippet(b))
	}
	return &response{body: v, header: resp.Header}, nil
}

// decodeJSON decodes exactly one JSON value, numbers as json.Number.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty body")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// snippet quotes the start of a body for an error message.
func snippet(b []byte) string {
	const n = 120
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	if len(b) > n {
		return fmt.Sprintf("; body begins %q…", b[:n])
	}
	return fmt.Sprintf("; body %q", b)
}

// nextLink returns the target of the rel="next" link in RFC 8288 Link header
// values, resolved against base ("" when there is none).
func nextLink(base *url.URL, values []string) (string, error) {
	for _, v := range values {
		for _, link := range splitLinks(v) {
			link = strings.TrimSpace(link)
			if !strings.HasPrefix(link, "<") {
				continue
			}
			end := strings.IndexByte(link, '>')
			if end < 0 {
				continue
			}
			target := link[1:end]
			for _, param := range strings.Split(link[end+1:], ";") {
				name, val, ok := strings.Cut(strings.TrimSpace(param), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(name), "rel") {
					continue
				}
				val = strings.Trim(strings.TrimSpace(val), `"`)
				for _, rel := range strings.Fields(val) {
					if strings.EqualFold(rel, "next") {
						u, err := base.Parse(target)
						if err != nil {
							return "", fmt.Errorf("link header target %q: %w", target, err)
						}
						return u.String(), nil
					}
				}
			}
		}
	}
	return "", nil
}

// splitLinks splits a Link header value at commas outside <…> and quotes.
func splitLinks(v string) []string {
	var out []string
	inURI, inQuote, start := false, false, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '<' && !inQuote:
			inURI = true
		case c == '>' && !inQuote:
			inURI = false
		case c == '"' && !inURI:
			inQuote = !inQuote
		case c == ',' && !inURI && !inQuote:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// basicToken is the credential part of a basic Authorization header.
func basicToken(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}
