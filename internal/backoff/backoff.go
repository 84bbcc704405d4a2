// Package backoff is the doubling wait shared by the retries of failed
// daemon jobs and of records quarantined for a limit.
package backoff

import "time"

// Doubled is base doubled n times (n < 0 counts as 0), at most limit; it
// stops doubling at limit, so it never overflows.
func Doubled(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
