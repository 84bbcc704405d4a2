// Package assistant serves a pipeline's graph to assistants as MCP tools,
// a resource and a prompt (Model Context Protocol, with the official Go
// SDK github.com/modelcontextprotocol/go-sdk): `kgsync mcp` runs it over
// stdio, the daemon mounts it at /mcp over streamable HTTP.
//
// Tools, all read-only (readOnlyHint):
//   - schema: the data model as the graph holds it, with counts;
//   - search: the hybrid search of package retrieval, restricted to an
//     anchor and attribute like vts, with expansion to the minimal
//     sufficient context;
//   - lookup: document elements by address; term: definitions;
//   - neighbors: a node's edges (cross-references, MANDATORY,
//     parent/children, link edges with their properties);
//   - rows: exact filters, counts and complete lists over the data model,
//     from state or from Memgraph;
//   - cypher: read-only Cypher on a Memgraph sink (see cypher.go for the
//     guard).
//
// Resource kgsync://schema/{pipeline} is the data model tables `kgsync
// schema` prints; prompt "playbook" is the config's assistant.playbook
// file (or a built-in one).
package assistant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink/memgraph"
)

// Defaults of Options.
const (
	// DefaultCypherTimeout bounds one cypher call's transaction.
	DefaultCypherTimeout = 10 * time.Second
	// DefaultCypherMaxRows is how many rows a cypher call returns at most.
	DefaultCypherMaxRows = 1000
	// DefaultRowsLimit is the page size of rows when the call names none;
	// MaxRowsLimit the largest page it may ask for.
	DefaultRowsLimit = 50
	MaxRowsLimit     = 500
)

// Options configure a Server.
type Options struct {
	// Pipelines are served, in this order; at least one. With several,
	// every tool takes the pipeline's name.
	Pipelines []*pipeline.Pipeline
	// Playbook is the file served as prompt "playbook" ("" serves the
	// built-in playbook). It is read on each request, so edits show
	// without a restart.
	Playbook string
	// Version is the server version announced at initialization.
	Version string
	// CypherTimeout and CypherMaxRows bound cypher calls (0: the defaults).
	CypherTimeout time.Duration
	CypherMaxRows int
	// SessionTimeout closes an MCP streamable HTTP session that has had no
	// request for this long (0: DefaultSessionTimeout), so a long-running
	// daemon does not keep every client that went away. The go-sdk keeps
	// idle sessions forever when it is zero (StreamableHTTPOptions,
	// mcp/streamable.go:166-171 at v1.8.0). A client whose session closed
	// gets 404 and initializes again, as the MCP transport specification
	// says for an unknown session.
	SessionTimeout time.Duration
	// Logger receives the server's logs; nil discards.
	Logger *slog.Logger
}

// DefaultSessionTimeout is Options.SessionTimeout when unset.
const DefaultSessionTimeout = 30 * time.Minute

// Server is the MCP server over a set of pipelines. It reads the
// pipelines' state and, for cypher and rows on Memgraph, their sink; it
// never writes either. Safe for concurrent use.
type Server struct {
	opts  Options
	mcp   *mcp.Server
	mu    sync.Mutex
	views map[string]*view
}

// New returns a Server with every tool, the schema resource and the
// playbook prompt. Errors: no pipeline, or two with one name.
func New(opts Options) (*Server, error) {
	if len(opts.Pipelines) == 0 {
		return nil, errors.New("assistant: no pipeline to serve")
	}
	seen := map[string]bool{}
	for _, p := range opts.Pipelines {
		if seen[p.Name] {
			return nil, fmt.Errorf("assistant: pipeline %q given twice", p.Name)
		}
		seen[p.Name] = true
	}
	if opts.CypherTimeout <= 0 {
		opts.CypherTimeout = DefaultCypherTimeout
	}
	if opts.CypherMaxRows <= 0 {
		opts.CypherMaxRows = DefaultCypherMaxRows
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, views: map[string]*view{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "kgsync", Title: "kgsync knowledge graph", Version: opts.Version},
		&mcp.ServerOptions{Instructions: s.instructions(), Logger: opts.Logger})
	s.addTools()
	s.addResources()
	s.addPrompts()
	return s, nil
}

// MCP returns the SDK server, for Run over a transport or an HTTP handler.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// HTTPHandler serves the tools over MCP streamable HTTP, every session on
// this server, the SDK logging to Options.Logger; a session idle for
// Options.SessionTimeout is closed.
func (s *Server) HTTPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Logger: s.opts.Logger, SessionTimeout: s.opts.SessionTimeout})
}

// RunStdio serves one client over stdin and stdout until it disconnects or
// ctx is done.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.mcp.Run(ctx, &mcp.StdioTransport{})
}

// names lists the served pipelines.
func (s *Server) names() []string {
	out := make([]string, len(s.opts.Pipelines))
	for i, p := range s.opts.Pipelines {
		out[i] = p.Name
	}
	return out
}

func (s *Server) instructions() string {
	var b strings.Builder
	b.WriteString("kgsync serves a knowledge graph kept in step with its sources. ")
	b.WriteString("Call `schema` first to learn the anchors (node labels), attributes and links. ")
	b.WriteString("Use `rows` for exact answers over tables: how many, show all, which X has Y (complete lists with the total stated). ")
	b.WriteString("Use `search` for questions in words (restrict it with anchor and attribute), `lookup` for an address such as \"Article 7(3)\", ")
	b.WriteString("`term` for a definition and `neighbors` for what a node links to. Cite the ids the tools return. ")
	fmt.Fprintf(&b, "Pipelines: %s.", strings.Join(s.names(), ", "))
	return b.String()
}

// pipelineFor resolves a tool's pipeline argument.
func (s *Server) pipelineFor(name string) (*pipeline.Pipeline, error) {
	if name == "" {
		if len(s.opts.Pipelines) == 1 {
			return s.opts.Pipelines[0], nil
		}
		return nil, fmt.Errorf("several pipelines are served: name one in \"pipeline\" (%s)", strings.Join(s.names(), ", "))
	}
	for _, p := range s.opts.Pipelines {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pipeline %q is not served (%s)", name, strings.Join(s.names(), ", "))
}

// graphOf is the pipeline's Memgraph sink, nil for another sink.
func graphOf(p *pipeline.Pipeline) *memgraph.Sink {
	mg, _ := p.Sink.(*memgraph.Sink)
	return mg
}

// view is what the tools read of one pipeline at one state version: the
// searcher with its corpus, and the rows snapshot, each built on first
// use. A sync that finishes a run changes the version, and the next call
// builds a new view.
type view struct {
	version string
	srch    *retrieval.Searcher
	corpus  *cachedCorpus

	rowsOnce sync.Once
	rows     *table
	rowsErr  error

	unitsOnce sync.Once
	units     map[string]map[string]bool // anchor → embeddable attributes with units
	unitsErr  error
}

// searchable returns, by anchor, the attributes search can restrict to.
func (v *view) searchable(ctx context.Context) (map[string]map[string]bool, error) {
	v.unitsOnce.Do(func() {
		c, err := v.corpus.Corpus(ctx)
		if err != nil {
			v.unitsErr = err
			return
		}
		v.units = map[string]map[string]bool{}
		for _, u := range c.Units {
			if v.units[u.NodeLabel] == nil {
				v.units[u.NodeLabel] = map[string]bool{}
			}
			attr := u.Attribute()
			if u.Label == retrieval.LabelChunk {
				if i := strings.LastIndex(u.Address, u.Node+"#"); i >= 0 {
					attr = u.Address[i+len(u.Node)+1:]
					if j := strings.IndexAny(attr, " ›"); j >= 0 {
						attr = attr[:j]
					}
				}
			}
			if attr != "" {
				v.units[u.NodeLabel][attr] = true
			}
		}
	})
	return v.units, v.unitsErr
}

// cachedCorpus loads a pipeline's corpus once for search, term and
// neighbors.
type cachedCorpus struct {
	p    *pipeline.Pipeline
	once sync.Once
	c    *retrieval.Corpus
	err  error
}

// Corpus implements retrieval.CorpusLoader.
func (c *cachedCorpus) Corpus(ctx context.Context) (*retrieval.Corpus, error) {
	c.once.Do(func() { c.c, c.err = c.p.Corpus(ctx) })
	return c.c, c.err
}

// viewOf returns the pipeline's view for the current state version: the
// id, status and end of its latest run.
func (s *Server) viewOf(ctx context.Context, p *pipeline.Pipeline) (*view, error) {
	runs, err := p.Store.RunList(ctx, p.Name, 1)
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	version := "none"
	if len(runs) > 0 {
		r := runs[0]
		version = fmt.Sprintf("%d/%s/%d", r.ID, r.Status, r.FinishedAt.UnixNano())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.views[p.Name]; ok && v.version == version {
		return v, nil
	}
	srch := p.Searcher()
	cc := &cachedCorpus{p: p}
	srch.Corpus = cc
	v := &view{version: version, srch: srch, corpus: cc}
	s.views[p.Name] = v
	return v, nil
}

// dropViews forgets every view; the next call builds its view anew.
func (s *Server) dropViews() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.views)
}

// rowsOf returns the view's rows snapshot, reading it from state on first
// use.
func (v *view) rowsOf(ctx context.Context, p *pipeline.Pipeline) (*table, error) {
	v.rowsOnce.Do(func() { v.rows, v.rowsErr = loadTable(ctx, p) })
	return v.rows, v.rowsErr
}

// readPlaybook returns the playbook prompt's text.
func (s *Server) readPlaybook() (string, error) {
	if s.opts.Playbook == "" {
		return defaultPlaybook, nil
	}
	b, err := os.ReadFile(s.opts.Playbook)
	if err != nil {
		return "", fmt.Errorf("playbook: %w", err)
	}
	return string(b), nil
}

// hasGraph reports whether any served pipeline writes to Memgraph.
func (s *Server) hasGraph() bool {
	return slices.ContainsFunc(s.opts.Pipelines, func(p *pipeline.Pipeline) bool { return graphOf(p) != nil })
}
