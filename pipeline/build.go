package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/embed/openai"
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/httpapi"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/postgres"
	"github.com/kgsync/kgsync/state/sqlite"
)

// MappingVersion is part of every pipeline's fingerprint: bump it when the
// default mapping (labels, properties, edges) changes, so that every record
// is rewritten once.
const MappingVersion = 3

// OpenStore opens the configured state store and applies its migrations.
func OpenStore(ctx context.Context, cfg config.State) (state.Store, error) {
	switch cfg.Driver {
	case "", "sqlite":
		s, err := sqlite.Open(ctx, cfg.Path)
		if err != nil {
			return nil, fmt.Errorf("open sqlite state %s: %w", cfg.Path, err)
		}
		return s, nil
	case "postgres":
		return postgres.Open(ctx, cfg.DSN, cfg.Schema) // its errors say "open postgres state"
	}
	return nil, fmt.Errorf("state.driver: unknown driver %q", cfg.Driver)
}

// NewEmbedder builds the configured embedding provider.
func NewEmbedder(cfg config.Embedder, logger *slog.Logger) (embed.Embedder, error) {
	switch cfg.Provider {
	case "", "hashing":
		return hashing.New(cfg.Model, cfg.Dimensions), nil
	case "openai":
		return openai.New(openai.ConfigFrom(cfg), logger)
	}
	return nil, fmt.Errorf("embedder.provider: unknown provider %q", cfg.Provider)
}

// NewSink builds the configured sink for one pipeline.
func NewSink(ctx context.Context, cfg config.Sink, pipeline string, logger *slog.Logger) (sink.Sink, error) {
	switch cfg.Type {
	case "", "cypherl":
		dir := ".kgsync/cypherl"
		var opts []cypherl.Option
		if cfg.Cypherl != nil && cfg.Cypherl.Dir != "" {
			dir = cfg.Cypherl.Dir
		}
		if cfg.Cypherl != nil && cfg.Cypherl.MemgraphVersion != "" {
			opts = append(opts, cypherl.WithMemgraphVersion(cfg.Cypherl.MemgraphVersion))
		}
		return cypherl.New(dir, pipeline, sink.Memgraph, opts...)
	case "memgraph":
		m := cfg.Memgraph
		if m == nil {
			return nil, errors.New("sink.memgraph: missing")
		}
		if m.Dialect == "" {
			m.Dialect = "memgraph"
		}
		d, err := sink.DialectByName(m.Dialect)
		if err != nil {
			return nil, fmt.Errorf("sink.memgraph.dialect: %w", err)
		}
		retries := 8
		if m.MaxRetries != nil {
			retries = *m.MaxRetries
		}
		return memgraph.New(ctx, memgraph.Config{
			URI: m.URI, Username: m.Username, Password: m.Password, Pipeline: pipeline, Dialect: d,
			BatchSize: m.BatchSize, DeleteBatchSize: m.DeleteBatchSize, MaxRetries: retries, Timeout: m.Timeout, VectorCapacity: m.VectorCapacity,
		}, logger)
	}
	return nil, fmt.Errorf("sink.type: unknown sink %q", cfg.Type)
}

// Fingerprint hashes the config that shapes a pipeline's output: the mapping
// version, chunking settings, and the embedder's model and dimensions. When
// it changes, every record of the pipeline is reprocessed on the next run.
func Fingerprint(pc *config.Pipeline, e embed.Embedder) uint64 {
	h, _ := diff.Hash(Settings(pc, e)) // only encodable values
	return h
}

// Settings are the values Fingerprint hashes, by name. A run stores them
// (settingsCursor) so that `kgsync plan` can name what changed, with its
// old and new value ("chunking.max_tokens: 512 → 400").
func Settings(pc *config.Pipeline, e embed.Embedder) map[string]any {
	ch := pc.Chunking
	fp := map[string]any{
		"mapping_version": int64(MappingVersion),
		"chunker_version": int64(chunker.Version),
		"max_tokens":      int64(ch.MaxTokens),
		"overlap_tokens":  int64(ch.OverlapTokens),
		"tokenizer":       ch.Tokenizer,
		"embedder":        e.Model(),
		"analyzer":        retrieval.AnalyzerVersion,
	}
	if pc.Review != nil {
		// Reviewed documents' nodes carry their text's provenance.
		fp["review"] = strings.Join(ReviewedSources(pc), ",")
	}
	return fp
}

// Build wires one configured pipeline: its sources, embedder, sink and
// chunker options, sharing the given store. Close the returned pipeline's
// Sink when done.
func Build(ctx context.Context, cfg *config.Config, pc *config.Pipeline, store state.Store, logger *slog.Logger) (*Pipeline, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tok, err := chunker.NewTokenizer(pc.Chunking.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("pipeline %q: chunking.tokenizer: %w", pc.Name, err)
	}
	emb, err := NewEmbedder(*pc.Embedder, logger)
	if err != nil {
		return nil, fmt.Errorf("pipeline %q: %w", pc.Name, err)
	}
	search := calibratedSearch(cfg, pc, emb.Model(), logger)
	if limit := pc.Embedder.MaxInputTokens; limit > 0 && pc.Chunking.MaxTokens+pc.Chunking.OverlapTokens > limit {
		return nil, fmt.Errorf("pipeline %q: chunking.max_tokens + overlap_tokens (%d) exceeds embedder.max_input_tokens (%d)",
			pc.Name, pc.Chunking.MaxTokens+pc.Chunking.OverlapTokens, limit)
	}
	srcs, err := buildSources(cfg, pc, logger)
	if err != nil {
		return nil, err
	}
	sk, err := NewSink(ctx, *pc.Sink, pc.Name, logger)
	if err != nil {
		return nil, fmt.Errorf("pipeline %q: %w", pc.Name, err)
	}
	ratio := 0.3
	if pc.MaxDeleteRatio != nil {
		ratio = *pc.MaxDeleteRatio
	}
	capacity := 10000
	if pc.Sink.Memgraph != nil && pc.Sink.Memgraph.VectorCapacity > 0 {
		capacity = pc.Sink.Memgraph.VectorCapacity
	}
	rv, err := NewReview(cfg, pc, store, logger)
	if err != nil {
		return nil, err
	}
	return &Pipeline{
		Review:          rv,
		Name:            pc.Name,
		Sources:         srcs,
		Embedder:        emb,
		Sink:            sk,
		Store:           store,
		DocumentTimeout: pc.Chunking.DocumentTimeout,
		Chunking: chunker.Options{
			MaxTokens: pc.Chunking.MaxTokens, OverlapTokens: pc.Chunking.OverlapTokens, Tokenizer: tok,
		},
		Model:          NewModel(pc.Model),
		Mandatory:      mandatoryLinks(pc.Mandatory),
		BatchSize:      pc.BatchSize,
		MaxDeleteRatio: ratio,
		Fingerprint:    Fingerprint(pc, emb),
		Settings:       Settings(pc, emb),
		VectorCapacity: capacity,
		Search:         search,
		Logger:         logger,

		BatchChunkBytes: int(pc.BatchChunkBytes),
		WriterBytes:     int(pc.WriterBytes),
	}, nil
}

// calibratedSearch is pc's search config with the relevance floor's
// calibration for the embedder model, if eval wrote one; an unreadable
// file is reported and the floor's own thresholds apply.
func calibratedSearch(cfg *config.Config, pc *config.Pipeline, model string, logger *slog.Logger) retrieval.Config {
	search := SearchConfig(pc.Search)
	if cal, err := retrieval.LoadCalibration(CalibrationPath(cfg, pc), model); err != nil {
		if logger != nil {
			logger.Warn("relevance floor calibration not used", "pipeline", pc.Name, "err", err)
		}
	} else if cal != nil {
		search.Floor.Calibration = cal
	}
	return search
}

// buildSources wires pc's sources, in their config order.
func buildSources(cfg *config.Config, pc *config.Pipeline, logger *slog.Logger) ([]sources.Source, error) {
	var srcs []sources.Source
	for i, sc := range pc.Sources {
		switch {
		case sc.Files != nil:
			s, err := files.New(sc.Name, *sc.Files, chunker.Formats(), logger, files.WithTextCheck(TextCheck))
			if err != nil {
				return nil, fmt.Errorf("pipeline %q: sources[%d] (%q): %w", pc.Name, i, sc.Name, err)
			}
			srcs = append(srcs, s)
		case sc.Grist != nil:
			gc := GristConfig(sc.Grist, pc.Model, fmt.Sprintf("%s.sources[%d].grist", pipelinePath(cfg, pc), i))
			gc.Require = requiredTables(pc, i, gc.Require)
			s, err := grist.New(sc.Name, gc, logger)
			if err != nil {
				return nil, fmt.Errorf("pipeline %q: sources[%d] (%q): %w", pc.Name, i, sc.Name, err)
			}
			srcs = append(srcs, s)
		case sc.HTTP != nil:
			s, err := httpapi.New(sc.Name, httpConfig(sc.HTTP), logger)
			if err != nil {
				return nil, fmt.Errorf("pipeline %q: sources[%d] (%q): %w", pc.Name, i, sc.Name, err)
			}
			srcs = append(srcs, s)
		case sc.CSV != nil:
			s, err := csvtable.New(sc.Name, csvConfig(sc.CSV), logger)
			if err != nil {
				return nil, fmt.Errorf("pipeline %q: sources[%d] (%q): %w", pc.Name, i, sc.Name, err)
			}
			srcs = append(srcs, s)
		default:
			return nil, fmt.Errorf("pipeline %q: sources[%d]: no source kind set", pc.Name, i)
		}
	}
	return srcs, nil
}

// ReviewedSources are the names of the files sources pc's review covers:
// review.sources, or every files source.
func ReviewedSources(pc *config.Pipeline) []string {
	if pc.Review == nil {
		return nil
	}
	if len(pc.Review.Sources) > 0 {
		return pc.Review.Sources
	}
	var out []string
	for _, s := range pc.Sources {
		if s.Files != nil {
			out = append(out, s.Name)
		}
	}
	return out
}

// NewReview returns pc's expert review (nil when it has none), keeping its
// state in store, which must implement state.ReviewStore.
func NewReview(cfg *config.Config, pc *config.Pipeline, store state.Store, logger *slog.Logger) (*review.Review, error) {
	if pc.Review == nil || pc.Review.Grist == nil {
		return nil, nil
	}
	rs, ok := store.(review.Store)
	if !ok {
		return nil, fmt.Errorf("pipeline %q: review: the %T state store keeps no review state", pc.Name, store)
	}
	g := pc.Review.Grist
	rv, err := review.New(review.Config{
		Pipeline: pc.Name,
		Grist: grist.Config{Server: g.Server, DocID: g.DocID, APIKey: g.APIKey, MaxInFlight: g.MaxInFlight, FullEvery: g.FullEvery,
			Path: pipelinePath(cfg, pc) + ".review.grist"},
		DocumentsTable: g.DocumentsTable, ElementsTable: g.ElementsTable,
		Sources: ReviewedSources(pc), Store: rs, Logger: logger,
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline %q: %w", pc.Name, err)
	}
	return rv, nil
}

// pipelinePath is pc's config path, "pipelines[i]".
func pipelinePath(cfg *config.Config, pc *config.Pipeline) string {
	if cfg != nil {
		for i := range cfg.Pipelines {
			if cfg.Pipelines[i].Name == pc.Name {
				return fmt.Sprintf("pipelines[%d]", i)
			}
		}
	}
	return "pipelines[?]"
}

// SearchConfig is the retrieval configuration of a config's search section
// (nil: retrieval.DefaultConfig); unset keys keep the defaults.
func SearchConfig(sc *config.Search) retrieval.Config {
	c := retrieval.DefaultConfig()
	if sc == nil {
		return c
	}
	if sc.K > 0 {
		c.K = sc.K
	}
	if sc.Budget > 0 {
		c.Budget = sc.Budget
	}
	if sc.RRFK > 0 {
		c.RRFK = sc.RRFK
	}
	if sc.OverFetch > 0 {
		c.OverFetch = sc.OverFetch
	}
	if w := sc.Weights; w != nil {
		for _, f := range []struct {
			v  *float64
			to *float64
		}{{w.Vector, &c.Weights.Vector}, {w.Lexical, &c.Weights.Lexical}, {w.Element, &c.Weights.Element},
			{w.Term, &c.Weights.Term}, {w.Address, &c.Weights.Address}, {w.Proximity, &c.Weights.Proximity}} {
			if f.v != nil {
				*f.to = *f.v
			}
		}
	}
	if f := sc.Floor; f != nil {
		c.Floor.Disabled = f.Disabled
		if f.MinCoverage != nil {
			c.Floor.MinCoverage = *f.MinCoverage
		}
		if f.MinEvidence != nil {
			c.Floor.MinEvidence = *f.MinEvidence
		}
		if f.ScoreWeight != nil {
			c.Floor.ScoreWeight = *f.ScoreWeight
		}
		if f.MinScore != nil {
			c.Floor.MinScore = *f.MinScore
		}
		if f.QuantityShare != nil {
			c.Floor.QuantityShare = *f.QuantityShare
		}
		if f.Hits > 0 {
			c.Floor.Hits = f.Hits
		}
		if f.DeclineEvidence != nil {
			c.Floor.DeclineEvidence = *f.DeclineEvidence
		}
	}
	return c
}

// DefaultCalibrationFile is where the relevance floor's calibration is
// kept when search.floor.calibration names no file, relative to the
// config file's directory.
const DefaultCalibrationFile = ".kgsync/floor-calibration.json"

// CalibrationPath is the file of pc's floor calibration
// (search.floor.calibration, else DefaultCalibrationFile), absolute when
// cfg.Dir is.
func CalibrationPath(cfg *config.Config, pc *config.Pipeline) string {
	path := DefaultCalibrationFile
	if pc.Search != nil && pc.Search.Floor != nil && pc.Search.Floor.Calibration != "" {
		path = pc.Search.Floor.Calibration
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(cfg.Dir, path)
	}
	return path
}

func gristConfig(c *config.GristSource) grist.Config {
	return grist.Config{
		Server: c.Server, DocID: c.DocID, APIKey: c.APIKey, Tables: c.Tables, KeyColumns: c.KeyColumns,
		PageSize: c.PageSize, MaxInFlight: c.MaxInFlight, FullEvery: c.FullEvery,
		// Attachments in a format the chunker reads become documents of their own.
		AttachmentFormats: chunker.Formats(),
	}
}

func csvConfig(c *config.CSVSource) csvtable.Config {
	var out csvtable.Config
	for _, t := range c.Tables {
		out.Tables = append(out.Tables, csvtable.Table{
			Path: t.Path, Table: t.Table, Key: t.Key, Columns: t.Columns, Skip: t.Skip, Delimiter: t.Delimiter,
		})
	}
	return out
}

func httpConfig(c *config.HTTPSource) httpapi.Config {
	out := httpapi.Config{
		URL: c.URL, Method: c.Method, Headers: c.Headers, Query: c.Query, Body: c.Body,
		Timeout: c.Timeout, MaxBodyBytes: c.MaxBodyBytes, MaxPages: c.MaxPages,
		Records: c.Records, Key: c.Key, Anchor: c.Anchor, Attributes: c.Attributes,
		RateLimit: c.RateLimit, Burst: c.Burst, Concurrency: c.Concurrency,
	}
	if c.Auth != nil {
		out.Auth = httpapi.Auth{Bearer: c.Auth.Bearer, APIKeyHeader: c.Auth.APIKeyHeader, APIKey: c.Auth.APIKey,
			Username: c.Auth.Username, Password: c.Auth.Password}
	}
	if c.Pagination != nil {
		out.Pagination = httpapi.Pagination{Style: c.Pagination.Style, Param: c.Pagination.Param, Start: c.Pagination.Start,
			SizeParam: c.Pagination.SizeParam, Size: c.Pagination.Size, Next: c.Pagination.Next,
			Total: c.Pagination.Total, HasMore: c.Pagination.HasMore}
	}
	if len(c.Links) > 0 {
		out.Links = map[string]httpapi.LinkConfig{}
		for k, l := range c.Links {
			out.Links[k] = httpapi.LinkConfig{Anchor: l.Anchor, Expr: l.Expr}
		}
	}
	if c.Incremental != nil {
		out.Incremental = &httpapi.Incremental{Param: c.Incremental.Param, Cursor: c.Incremental.Cursor,
			Ordered: c.Incremental.Ordered, FullEvery: c.Incremental.FullEvery}
	}
	if c.Detail != nil {
		out.Detail = &httpapi.Detail{URL: c.Detail.URL, Path: c.Detail.Path}
	}
	if c.MaxRetries > 0 {
		out.Retry.Max = c.MaxRetries
	}
	return out
}

// TextCheck accepts the content of a text format (txt, md, html) when the
// chunker can decode it: UTF-8 (with or without BOM), UTF-16 with a BOM, or
// Windows-1251. Binary formats (pdf, docx) are checked by their parsers.
func TextCheck(format string, content []byte) error {
	switch format {
	case "txt", "md", "html":
		if _, _, err := chunker.Decode(content); err != nil {
			return err
		}
	}
	return nil
}

func mandatoryLinks(ms []config.Mandatory) []MandatoryLink {
	out := make([]MandatoryLink, 0, len(ms))
	for _, m := range ms {
		out = append(out, MandatoryLink{From: m.From, To: m.To, Note: m.Note})
	}
	return out
}

// GristConfig is the Grist source configuration of c, a source at config
// path path (e.g. "pipelines[0].sources[1].grist") of a pipeline whose data
// model is m: the tables and columns m maps become the source's Names,
// each with its config path, so that the source follows their renames and
// stops on a mapped column that is gone.
func GristConfig(c *config.GristSource, m *config.Model, path string) grist.Config {
	out := gristConfig(c)
	out.Path = path
	out.Names = ModelNames(m, modelPath(path))
	if len(c.Tables) == 0 {
		out.Require = ModelTables(m)
	}
	return out
}

// ModelTables lists, sorted, the tables a data model maps: its anchors'
// tables, link tables and mandatory tables.
func ModelTables(m *config.Model) []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, a := range m.Anchors {
		t := a.Table
		if t == "" {
			t = a.Name
		}
		out = append(out, t)
	}
	for _, lt := range m.LinkTables {
		out = append(out, lt.Table)
	}
	for _, mt := range m.MandatoryTables {
		out = append(out, mt.Table)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// requiredTables narrows the tables Grist source i of pc must have (every
// table read) to those no other source provides: a CSV source's tables, a
// files or HTTP source's anchor, a Grist source's listed tables. With
// another Grist source reading every table, none can be required of one
// of them.
func requiredTables(pc *config.Pipeline, i int, req []string) []string {
	other := map[string]bool{}
	for j, sc := range pc.Sources {
		if j == i {
			continue
		}
		switch {
		case sc.Grist != nil && len(sc.Grist.Tables) == 0:
			return nil
		case sc.Grist != nil:
			for _, t := range sc.Grist.Tables {
				other[t] = true
			}
		case sc.CSV != nil:
			src, err := csvtable.New(sc.Name, csvConfig(sc.CSV), nil)
			if err != nil {
				return nil // Build reports it
			}
			for _, t := range src.Tables() {
				other[t] = true
			}
		case sc.HTTP != nil:
			other[sc.HTTP.Anchor] = true
		case sc.Files != nil:
			other[cmp.Or(sc.Files.Anchor, "Document")] = true
		}
	}
	return slices.DeleteFunc(req, func(t string) bool { return other[t] })
}

// modelPath is the config path of the model of the pipeline a source path
// belongs to: "pipelines[0].sources[1].grist" → "pipelines[0].model".
func modelPath(sourcePath string) string {
	if i := strings.Index(sourcePath, ".sources["); i >= 0 {
		return sourcePath[:i] + ".model"
	}
	return "model"
}

// ModelNames lists the table and column names a data model uses, with
// their config paths under prefix (e.g. "pipelines[0].model"): anchors'
// tables, attribute and link columns, link tables' tables, ends and
// properties, mandatory tables' tables and columns.
func ModelNames(m *config.Model, prefix string) []grist.Name {
	if m == nil {
		return nil
	}
	var out []grist.Name
	or := func(a, b string) (string, string) {
		if a != "" {
			return a, "column"
		}
		return b, "name"
	}
	for i, a := range m.Anchors {
		at := fmt.Sprintf("%s.anchors[%d]", prefix, i)
		table, field := a.Table, "table"
		if table == "" {
			table, field = a.Name, "name"
		}
		out = append(out, grist.Name{Table: table, Path: at + "." + field})
		for j, attr := range a.Attributes {
			col, f := or(attr.Column, attr.Name)
			out = append(out, grist.Name{Table: table, Column: col, Path: fmt.Sprintf("%s.attributes[%d].%s", at, j, f)})
		}
		for j, l := range a.Links {
			col, f := or(l.Column, l.Name)
			out = append(out, grist.Name{Table: table, Column: col, Path: fmt.Sprintf("%s.links[%d].%s", at, j, f)})
		}
	}
	for i, lt := range m.LinkTables {
		at := fmt.Sprintf("%s.link_tables[%d]", prefix, i)
		out = append(out, grist.Name{Table: lt.Table, Path: at + ".table"},
			grist.Name{Table: lt.Table, Column: lt.From.Column, Path: at + ".from.column"},
			grist.Name{Table: lt.Table, Column: lt.To.Column, Path: at + ".to.column"})
		for j, p := range lt.Properties {
			out = append(out, grist.Name{Table: lt.Table, Column: p, Path: fmt.Sprintf("%s.properties[%d]", at, j)})
		}
	}
	for i, mt := range m.MandatoryTables {
		at := fmt.Sprintf("%s.mandatory_tables[%d]", prefix, i)
		out = append(out, grist.Name{Table: mt.Table, Path: at + ".table"})
		for f, col := range map[string]string{"from": mt.From, "to": mt.To, "note": mt.Note} {
			if col != "" {
				out = append(out, grist.Name{Table: mt.Table, Column: col, Path: at + "." + f})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b grist.Name) int { return strings.Compare(a.Path, b.Path) })
	return out
}
