package memgraph

import (
	"context"
	"fmt"
	"net/url"
)

// Ping checks that the server answers: the driver opens (or reuses) a
// Bolt connection and completes the handshake and authentication
// (DriverWithContext.VerifyConnectivity), bounded by ctx. It makes the Sink
// a daemon readiness check (daemon.Pinger, GET /readyz). Errors name the
// URI without its password.
func (s *Sink) Ping(ctx context.Context) error {
	if err := s.driver.VerifyConnectivity(ctx); err != nil {
		return fmt.Errorf("memgraph sink: ping %s: %w", redacted(s.cfg.URI), err)
	}
	return nil
}

// redacted returns uri with any password replaced, or uri itself when it
// does not parse.
func redacted(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	return u.Redacted()
}
