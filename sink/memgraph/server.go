package memgraph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/kgsync/kgsync/sink"
)

// MinVersion is the oldest Memgraph kgsync writes to: SHOW VECTOR INDEX
// INFO, which Ensure reads, came in 3.1 (docs/memgraph.md §0). What kgsync
// does on each later version is sink.MemgraphRanges: text indexes from 3.6
// (before, lexical search comes from kgsync's own lexical index in state).
const MinVersion = "3.1"

// FlagEdgeProperties is the Memgraph flag without which edges carry no
// properties (off in the bare binary, on in the Docker/DEB configuration;
// docs/memgraph.md §12).
const FlagEdgeProperties = "--storage-properties-on-edges=true"

// ServerInfo is what the Sink learnt about its server.
type ServerInfo struct {
	// Version is SHOW VERSION's answer, e.g. "3.8.1" (Memgraph) or
	// dbms.components()' (Neo4j).
	Version string
	// EdgeProperties reports whether the server stores edge properties:
	// Memgraph only with FlagEdgeProperties; Neo4j always.
	EdgeProperties bool
	// Features is the version's row of the supported-version table
	// (sink.MemgraphFeatures; zero for Neo4j and for a version it cannot
	// read).
	Features sink.MemgraphRange
	// TextSearch reports whether kgsync creates and queries text indexes
	// on the server: Memgraph 3.6 or later (Features.TextIndexes), Neo4j
	// always. Without it lexical search comes from kgsync's state.
	TextSearch bool
}

// probeQuery creates an edge with a property inside a transaction that is
// rolled back: it fails with "Can't set property because properties on
// edges are disabled." when the server stores none (Memgraph
// src/query/common.hpp; docs/memgraph.md §12). In IN_MEMORY_ANALYTICAL
// storage a rollback undoes nothing, so the query deletes its own nodes
// when it succeeds, and probeCleanup removes what a failed probe left.
const probeQuery = "CREATE (a:`kgsync_probe`)-[e:`kgsync_probe`]->(b:`kgsync_probe`) SET e.`probe` = true DETACH DELETE a, b"

// probeCleanup deletes the nodes of a failed probe (auto-commit); in
// transactional storage there are none.
const probeCleanup = "MATCH (n:`kgsync_probe`) DETACH DELETE n"

// ServerTTL is how long Server keeps its answer: a server restarted with
// other flags or upgraded is seen again within it.
const ServerTTL = 30 * time.Second

// Server asks the server for its version (SHOW VERSION, auto-commit) and
// probes whether it stores edge properties (probeQuery in a transaction
// that is rolled back). The answer is kept for ServerTTL (ForgetServer
// drops it sooner), so it costs two round trips per Sink and TTL. Errors:
// the server is unreachable, refuses writes (a replica), or answers in an
// unknown form.
func (s *Sink) Server(ctx context.Context) (ServerInfo, error) {
	s.mu.Lock()
	if s.server != nil && time.Since(s.serverAt) < ServerTTL {
		info := *s.server
		s.mu.Unlock()
		return info, nil
	}
	s.mu.Unlock()
	fields, rows, _, err := s.runAuto(ctx, s.d.ShowVersion())
	if err != nil {
		return ServerInfo{}, fmt.Errorf("memgraph sink: %s: %w", s.d.ShowVersion().Query, err)
	}
	v, err := s.d.ParseVersion(fields, rows)
	if err != nil {
		return ServerInfo{}, fmt.Errorf("memgraph sink: %w", err)
	}
	info := ServerInfo{Version: v, EdgeProperties: true, TextSearch: true}
	if s.d.Name() == "memgraph" {
		f, err := sink.MemgraphFeatures(v)
		// A version in another scheme (a custom build) is tried like the
		// newest.
		info.Features, info.TextSearch = f, err != nil || f.TextIndexes
		if info.EdgeProperties, err = s.probeEdgeProperties(ctx); err != nil {
			return ServerInfo{}, fmt.Errorf("memgraph sink: probe edge properties: %w", err)
		}
	}
	s.mu.Lock()
	s.server, s.serverAt = &info, time.Now()
	s.mu.Unlock()
	return info, nil
}

// ForgetServer drops the answer Server keeps, so that the next Server,
// Check or Ensure asks the server again (a readiness check that must see
// a restart with the flag its message asked for).
func (s *Sink) ForgetServer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.server = nil
}

func (s *Sink) probeEdgeProperties(ctx context.Context) (bool, error) {
	var ok bool
	var retries int
	err := s.retry(ctx, &retries, func() error {
		session := s.driver.NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeWrite})
		defer session.Close(context.WithoutCancel(ctx))
		tx, err := session.BeginTransaction(ctx, neo4j.WithTxTimeout(s.cfg.Timeout))
		if err != nil {
			return err
		}
		defer tx.Close(context.WithoutCancel(ctx)) // rollback: the probe leaves nothing
		res, err := tx.Run(ctx, probeQuery, nil)
		if err == nil {
			_, err = res.Consume(ctx)
		}
		var nerr *neo4j.Neo4jError
		switch {
		case err == nil:
			ok = true
		case errors.As(err, &nerr) && strings.Contains(nerr.Msg, "properties on edges are disabled"):
			ok = false
		default:
			return err
		}
		return tx.Rollback(ctx)
	})
	if err != nil || ok {
		return ok, err
	}
	// The failed SET came after the CREATE of two nodes, which analytical
	// storage keeps.
	if _, _, _, err := s.runAuto(ctx, sink.Statement{Query: probeCleanup, Kind: sink.KindProbe, Target: "kgsync_probe"}); err != nil {
		return false, fmt.Errorf("remove the probe's nodes: %w", err)
	}
	return ok, nil
}

// Check verifies that the server can hold schema: Memgraph MinVersion or
// later, and edge properties when schema.Edges has edges that need them.
// The error names the version, or the flag and the edge types (with the
// properties they carry). It is what Ensure checks first, and what
// `kgsync validate --online` and GET /readyz report.
func (s *Sink) Check(ctx context.Context, schema sink.Schema) (ServerInfo, error) {
	info, err := s.Server(ctx)
	if err != nil {
		return info, err
	}
	if s.d.Name() == "memgraph" && !versionAtLeast(info.Version, MinVersion) {
		return info, fmt.Errorf("memgraph sink: Memgraph %s is too old: kgsync needs %s or later (docs/memgraph-support.md)", info.Version, MinVersion)
	}
	if !info.EdgeProperties {
		var need []string
		for _, e := range schema.Edges {
			if e.NeedsProperties() {
				need = append(need, describeEdge(e))
			}
		}
		if len(need) > 0 {
			return info, fmt.Errorf("memgraph sink: the server stores no edge properties; start Memgraph with %s "+
				"(the Docker and DEB packages' configuration sets it): pipeline %q writes %s",
				FlagEdgeProperties, s.cfg.Pipeline, strings.Join(need, ", "))
		}
	}
	return info, nil
}

// describeEdge is "TYPE (_key, p1, …)".
func describeEdge(e sink.EdgeType) string {
	var props []string
	if e.Keyed {
		props = append(props, "_key")
	}
	props = append(props, e.Properties...)
	return e.Type + " (" + strings.Join(props, ", ") + ")"
}

// checkEdgeProperties refuses a batch that writes edge properties to a
// server known to store none, naming the edge types.
func (s *Sink) checkEdgeProperties(b *sink.Batch) error {
	s.mu.Lock()
	info := s.server
	s.mu.Unlock()
	if info == nil || info.EdgeProperties {
		return nil
	}
	types := map[string]sink.EdgeType{}
	for _, e := range b.EdgeUpserts {
		if e.Key == "" && len(e.Props) == 0 {
			continue
		}
		t := types[e.Type]
		t.Type, t.Keyed = e.Type, t.Keyed || e.Key != ""
		for k := range e.Props {
			if !slices.Contains(t.Properties, k) {
				t.Properties = append(t.Properties, k)
			}
		}
		types[e.Type] = t
	}
	if len(types) == 0 {
		return nil
	}
	var need []string
	for _, name := range slices.Sorted(maps.Keys(types)) {
		t := types[name]
		slices.Sort(t.Properties)
		need = append(need, describeEdge(t))
	}
	return fmt.Errorf("the server stores no edge properties; start Memgraph with %s: the batch writes %s",
		FlagEdgeProperties, strings.Join(need, ", "))
}

var reVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// versionAtLeast compares the major.minor prefix of v with want
// ("3.1"); an unparseable v passes (a build with another version scheme).
func versionAtLeast(v, want string) bool {
	m, w := reVersion.FindStringSubmatch(v), reVersion.FindStringSubmatch(want)
	if m == nil || w == nil {
		return true
	}
	n := func(s string) int { i, _ := strconv.Atoi(s); return i }
	if n(m[1]) != n(w[1]) {
		return n(m[1]) > n(w[1])
	}
	return n(m[2]) >= n(w[2])
}
