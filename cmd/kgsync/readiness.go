package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
)

// sinkCheck is the /readyz check of one pipeline's sink (a daemon.Pinger).
// It connects on the first Ping rather than at start, so a daemon whose
// Memgraph is down still starts, serves /healthz and reports the sink in
// /readyz's "failed" map until the server answers; once connected it
// pings through the sink (memgraph.Sink.Ping: a Bolt handshake, no query)
// and checks the server against the pipeline's schema
// (memgraph.Sink.Check: version, edge properties), asking the server again
// once checkTTL has passed since it last did, so that a Memgraph restarted
// with the flag the message asked for turns /readyz green.
type sinkCheck struct {
	cfg      config.Sink
	pipeline string
	schema   sink.Schema
	log      *slog.Logger
	// now is the clock (time.Now; tests replace it).
	now func() time.Time

	mu      sync.Mutex
	s       sink.Sink // nil until a connection succeeded
	checked time.Time // when the server was last asked
}

// checkTTL is how long a readiness check reuses the server's answers
// (version, edge properties).
const checkTTL = 5 * time.Second

// serverForgetter is a sink that keeps the server's answers
// (memgraph.Sink.ForgetServer).
type serverForgetter interface{ ForgetServer() }

// newSinkCheck returns the check for pipeline name's sink configuration
// and the schema its graph needs (pipeline.SchemaOf).
func newSinkCheck(cfg config.Sink, name string, schema sink.Schema, log *slog.Logger) *sinkCheck {
	return &sinkCheck{cfg: cfg, pipeline: name, schema: schema, log: log, now: time.Now}
}

var _ daemon.Pinger = (*sinkCheck)(nil)

// Ping connects when not yet connected, then pings the sink when it can be
// pinged. Errors come from the connection or the ping, bounded by ctx.
func (c *sinkCheck) Ping(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		s, err := pipeline.NewSink(ctx, c.cfg, c.pipeline, c.log)
		if err != nil {
			return fmt.Errorf("pipeline %q: %w", c.pipeline, err)
		}
		c.s = s // New verified the connection
	} else if p, ok := c.s.(daemon.Pinger); ok {
		if err := p.Ping(ctx); err != nil {
			return err
		}
	}
	if f, ok := c.s.(serverForgetter); ok && c.now().Sub(c.checked) >= checkTTL {
		f.ForgetServer()
		c.checked = c.now()
	}
	if ck, ok := c.s.(serverChecker); ok {
		if _, err := ck.Check(ctx, c.schema); err != nil {
			return fmt.Errorf("pipeline %q: %w", c.pipeline, err)
		}
	}
	return nil
}

// Close closes the sink if the check connected it.
func (c *sinkCheck) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		return nil
	}
	err := c.s.Close(ctx)
	c.s = nil
	return err
}
