package embed

import (
	"fmt"
	"time"
)

// StatusError is a provider's HTTP error response, returned (wrapped) by the
// HTTP providers once retries are exhausted or for a status that is not
// retried. Use errors.As to read the code. It never holds credentials: the
// body excerpt is cut short and any API key in it is redacted.
type StatusError struct {
	// Code is the HTTP status code, e.g. 400, 429, 503.
	Code int
	// Body is an excerpt of the response body (at most a few hundred bytes).
	Body string
	// RetryAfter is the server's Retry-After of the last response, 0 if none.
	RetryAfter time.Duration
}

// Error returns "status 400: <excerpt>".
func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("status %d", e.Code)
	}
	return fmt.Sprintf("status %d: %s", e.Code, e.Body)
}

// Temporary reports whether a later attempt may succeed (429 and 5xx).
func (e *StatusError) Temporary() bool {
	return e.Code == 429 || e.Code >= 500
}
