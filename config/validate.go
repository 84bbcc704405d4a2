package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/kgsync/kgsync/sink"
	"github.com/robfig/cron/v3"
)

// ScheduleFields are the robfig/cron/v3 parser options for Pipeline.Schedule:
// five fields ("*/5 * * * *"), an optional leading seconds field
// ("*/30 * * * * *"), and descriptors ("@hourly", "@every 5m"). The daemon
// must build its parser with the same options:
// cron.New(cron.WithParser(cron.NewParser(config.ScheduleFields)), cron.WithLocation(loc)).
const ScheduleFields = cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor

var (
	// namePattern is the pattern of pipeline and source names.
	namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	// labelPattern is the pattern of node labels the files source writes
	// (anchor); labels are also quoted when written, this keeps them plain.
	labelPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// schemaPattern is the pattern of a Postgres schema name kgsync uses
	// unquoted in its SQL.
	schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// checker collects validation problems, each prefixed with file:line (when
// known) and the key path.
type checker struct {
	src  *source
	errs []error
}

func (ck *checker) add(path, format string, args ...any) {
	ck.errs = append(ck.errs, fmt.Errorf("%s%s: %s", ck.src.atPath(path), path, fmt.Sprintf(format, args...)))
}

// oneOf checks that v is one of allowed.
func (ck *checker) oneOf(path, v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	ck.add(path, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
	return false
}

// positive checks that v > 0.
func (ck *checker) positive(path string, v int64) {
	if v <= 0 {
		ck.add(path, "must be > 0, got %d", v)
	}
}

// Validate checks the whole configuration and reports every problem found in
// one pass (errors.Join). Each message starts with the key path and, for a
// Config from Load or Parse, the file and line, then the value and what was
// expected: `kgsync.yaml:9: pipelines[0].chunking.max_tokens: must be >
// overlap_tokens (512 <= 600)`.
//
// Sections are validated as they are: Validate applies no defaults, so a
// Config built in Go must set every field it relies on. A pipeline section
// that equals the top-level one (inherited) is reported once, under its
// top-level path. Load and Parse call Validate.
func (c *Config) Validate() error {
	ck := &checker{src: c.src}

	ck.state(&c.State)
	ck.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	ck.oneOf("log.format", c.Log.Format, "text", "json")
	ck.daemon(&c.Daemon)
	if c.Sink != nil {
		ck.sink("sink", c.Sink)
	}
	if c.Embedder != nil {
		ck.embedder("embedder", c.Embedder)
	}
	if c.Chunking != nil {
		ck.chunking("chunking", c.Chunking)
	}
	if c.Search != nil {
		ck.search("search", c.Search)
	}

	names := map[string]int{}
	fits := map[string]bool{} // chunking paths already checked against an embedder
	for i := range c.Pipelines {
		p := &c.Pipelines[i]
		at := fmt.Sprintf("pipelines[%d]", i)
		ck.pipeline(at, p)
		ck.chunkFits(c, at, p, fits)
		if p.Name != "" {
			if j, dup := names[p.Name]; dup {
				ck.add(at+".name", "%q is used twice (also pipelines[%d])", p.Name, j)
			} else {
				names[p.Name] = i
			}
		}
		if p.Sink != nil && !(c.Sink != nil && reflect.DeepEqual(p.Sink, c.Sink)) {
			ck.sink(at+".sink", p.Sink)
		}
		if p.Embedder != nil && !(c.Embedder != nil && reflect.DeepEqual(p.Embedder, c.Embedder)) {
			ck.embedder(at+".embedder", p.Embedder)
		}
		if p.Chunking != nil && !(c.Chunking != nil && *p.Chunking == *c.Chunking) {
			ck.chunking(at+".chunking", p.Chunking)
		}
		if p.Search != nil && !(c.Search != nil && reflect.DeepEqual(p.Search, c.Search)) {
			ck.search(at+".search", p.Search)
		}
		if p.Eval != nil && p.Eval.Golden == "" {
			ck.add(at+".eval.golden", "must name the golden set file")
		}
	}
	return errors.Join(ck.errs...)
}

func (ck *checker) daemon(d *Daemon) {
	if d.Listen != "" {
		if _, port, err := net.SplitHostPort(d.Listen); err != nil || port == "" {
			ck.add("daemon.listen", "must be host:port such as \":8080\" or \"127.0.0.1:8080\", got %q", d.Listen)
		}
	}
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{"daemon.debounce", d.Debounce}, {"daemon.grace_period", d.GracePeriod}, {"daemon.poll_interval", d.PollInterval}, {"daemon.verify_interval", d.VerifyInterval},
		{"daemon.run_timeout", d.RunTimeout}, {"daemon.retry_backoff", d.RetryBackoff}} {
		if f.v < 0 {
			ck.add(f.key, "must be >= 0, got %s", f.v)
		}
	}
	if d.WebhookBufferBytes < 0 {
		ck.add("daemon.webhook_buffer_bytes", "must be >= 0, got %d", d.WebhookBufferBytes)
	}
	if d.WebhookBufferRows < 0 {
		ck.add("daemon.webhook_buffer_rows", "must be >= 0, got %d", d.WebhookBufferRows)
	}
	if d.MaxBodyBytes < 0 {
		ck.add("daemon.max_body_bytes", "must be >= 0, got %d", d.MaxBodyBytes)
	}
	if d.MaxAttempts < 0 {
		ck.add("daemon.max_attempts", "must be >= 0, got %d", d.MaxAttempts)
	}
}

func (ck *checker) state(s *State) {
	if !ck.oneOf("state.driver", s.Driver, "sqlite", "postgres") {
		return
	}
	switch s.Driver {
	case "sqlite":
		if s.Path == "" {
			ck.add("state.path", "required for driver sqlite")
		}
	case "postgres":
		if s.DSN == "" {
			ck.add("state.dsn", `required for driver postgres, e.g. "postgres://kgsync:${PGPASSWORD}@db:5432/kgsync"`)
		}
		if !schemaPattern.MatchString(s.Schema) {
			ck.add("state.schema", "must match %s, got %q", schemaPattern, s.Schema)
		}
	}
}

func (ck *checker) pipeline(at string, p *Pipeline) {
	switch {
	case p.Name == "":
		ck.add(at+".name", "required")
	case !namePattern.MatchString(p.Name):
		ck.add(at+".name", "must match %s, got %q", namePattern, p.Name)
	}
	if p.Schedule != "" {
		if err := checkSchedule(p.Schedule); err != nil {
			ck.add(at+".schedule", "%q is not a valid schedule: %v", p.Schedule, err)
		}
	}
	if _, err := time.LoadLocation(p.TimeZone); err != nil {
		ck.add(at+".time_zone", "%q is not an IANA time zone such as \"Europe/Berlin\": %v", p.TimeZone, err)
	}
	ck.positive(at+".batch_size", int64(p.BatchSize))
	ck.positive(at+".batch_chunk_bytes", p.BatchChunkBytes)
	ck.positive(at+".writer_bytes", p.WriterBytes)
	if p.BatchChunkBytes > 0 && p.WriterBytes > 0 && p.WriterBytes < p.BatchChunkBytes {
		ck.add(at+".writer_bytes", "must be >= batch_chunk_bytes (%d), got %d", p.BatchChunkBytes, p.WriterBytes)
	}
	if r := p.MaxDeleteRatio; r != nil && !(*r > 0 && *r <= 1) {
		ck.add(at+".max_delete_ratio", "must be in (0, 1] (1 disables the guard), got %g", *r)
	}
	if len(p.Sources) == 0 {
		ck.add(at+".sources", "at least one source is required")
	}
	if p.Model != nil {
		ck.model(at+".model", p.Model)
	}
	ck.mandatory(at, p.Mandatory)
	if p.Review != nil {
		ck.review(at+".review", p)
	}
	names := map[string]int{}
	for j := range p.Sources {
		s := &p.Sources[j]
		sat := fmt.Sprintf("%s.sources[%d]", at, j)
		ck.source(sat, s)
		if s.Name == "" {
			continue
		}
		if k, dup := names[s.Name]; dup {
			ck.add(sat+".name", "%q is used twice in this pipeline (also sources[%d]); give each source a name", s.Name, k)
		} else {
			names[s.Name] = j
		}
	}
}

// checkSchedule parses spec as the daemon will (ScheduleFields).
func checkSchedule(spec string) (err error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return errors.New("set the zone with time_zone, not a TZ= prefix")
	}
	defer func() {
		if r := recover(); r != nil { // robfig/cron v3.0.1 panics on some malformed specs
			err = fmt.Errorf("cannot parse: %v", r)
		}
	}()
	if rest, ok := strings.CutPrefix(spec, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return fmt.Errorf("@every needs a duration such as \"5m\": %w", err)
		}
		if d < time.Second {
			return fmt.Errorf("@every interval must be at least 1s, got %s", d)
		}
	}
	if _, err := cron.NewParser(ScheduleFields).Parse(spec); err != nil {
		return err
	}
	return checkSteps(spec)
}

// cronBounds are the ranges of the five standard fields, from robfig/cron/v3
// (spec.go: minutes, hours, dom, months, dow).
var cronBounds = [][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}}

// checkSteps rejects a step ("*/61") that is not smaller than its field's
// range: robfig/cron accepts it, but it can only ever match the range's
// start, which is never what was meant.
func checkSteps(spec string) error {
	fields := strings.Fields(spec)
	if len(fields) == 0 || strings.HasPrefix(fields[0], "@") {
		return nil
	}
	bounds := cronBounds
	if len(fields) == 6 {
		bounds = append([][2]int{{0, 59}}, cronBounds...) // optional seconds
	}
	for i, f := range fields {
		if i >= len(bounds) {
			break
		}
		for part := range strings.SplitSeq(f, ",") {
			_, step, ok := strings.Cut(part, "/")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(step)
			if span := bounds[i][1] - bounds[i][0]; err == nil && n > span {
				return fmt.Errorf("step /%d in %q is larger than the field's range %d-%d, so it matches only the start of the range",
					n, f, bounds[i][0], bounds[i][1])
			}
		}
	}
	return nil
}

func (ck *checker) source(at string, s *Source) {
	set := 0
	for _, ok := range []bool{s.Files != nil, s.CSV != nil, s.Grist != nil, s.HTTP != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		ck.add(at, "exactly one of files, csv, grist, http must be set, got %d", set)
	}
	ck.otherSources(at, s)
	switch {
	case s.Name == "" && set == 0:
		// already reported: the name defaults to the kind
	case s.Name == "":
		ck.add(at+".name", "required")
	case !namePattern.MatchString(s.Name):
		ck.add(at+".name", "must match %s, got %q", namePattern, s.Name)
	}
	if f := s.Files; f != nil {
		if f.Root == "" {
			ck.add(at+".files.root", "required: the directory to read")
		}
		for k, g := range f.Include {
			ck.glob(fmt.Sprintf("%s.files.include[%d]", at, k), g)
		}
		for k, g := range f.Exclude {
			ck.glob(fmt.Sprintf("%s.files.exclude[%d]", at, k), g)
		}
		ck.positive(at+".files.max_file_bytes", f.MaxFileBytes)
		if !labelPattern.MatchString(f.Anchor) {
			ck.add(at+".files.anchor", "must be a node label matching %s, got %q", labelPattern, f.Anchor)
		}
	}
}

func (ck *checker) glob(at, g string) {
	switch {
	case g == "":
		ck.add(at, "empty pattern")
	case !doublestar.ValidatePattern(g):
		ck.add(at, "%q is not a valid glob pattern (see docs/config.md, files)", g)
	case strings.HasPrefix(g, "/"):
		ck.add(at, "%q must be relative to root: patterns match slash-separated paths such as \"guides/intro.md\"", g)
	case slices.Contains(strings.Split(g, "/"), ".."):
		// Paths under root never hold "..": the pattern can match nothing.
		ck.add(at, "%q has a \"..\" segment: the paths it is matched against (slash-separated, under root) never do, so it matches nothing", g)
	}
}

func (ck *checker) search(at string, s *Search) {
	for _, f := range []struct {
		key string
		v   int
	}{{"k", s.K}, {"budget", s.Budget}, {"over_fetch", s.OverFetch}} {
		if f.v < 0 {
			ck.add(at+"."+f.key, "must be >= 0, got %d", f.v)
		}
	}
	if s.RRFK < 0 {
		ck.add(at+".rrf_k", "must be >= 0, got %g", s.RRFK)
	}
	if w := s.Weights; w != nil {
		for _, f := range []struct {
			key string
			v   *float64
		}{{"vector", w.Vector}, {"lexical", w.Lexical}, {"element", w.Element}, {"term", w.Term}, {"address", w.Address}, {"proximity", w.Proximity}} {
			if f.v != nil && (*f.v < 0 || math.IsNaN(*f.v)) {
				ck.add(at+".weights."+f.key, "must be >= 0, got %g", *f.v)
			}
		}
	}
	if f := s.Floor; f != nil {
		for _, v := range []struct {
			key string
			v   *float64
		}{{"min_coverage", f.MinCoverage}, {"min_score", f.MinScore}, {"score_weight", f.ScoreWeight}, {"quantity_share", f.QuantityShare}} {
			if v.v != nil && !(*v.v >= 0 && *v.v <= 1) {
				ck.add(at+".floor."+v.key, "must be in [0, 1], got %g", *v.v)
			}
		}
		if f.MinEvidence != nil && !(*f.MinEvidence >= 0 && *f.MinEvidence <= 2) {
			ck.add(at+".floor.min_evidence", "must be in [0, 2], got %g", *f.MinEvidence)
		}
		if f.DeclineEvidence != nil && !(*f.DeclineEvidence >= 0 && *f.DeclineEvidence <= 2) {
			ck.add(at+".floor.decline_evidence", "must be in [0, 2], got %g", *f.DeclineEvidence)
		}
		if f.Hits < 0 {
			ck.add(at+".floor.hits", "must be >= 0, got %d", f.Hits)
		}
	}
}

func (ck *checker) chunking(at string, c *Chunking) {
	if c.MaxTokens < 16 {
		ck.add(at+".max_tokens", "must be >= 16, got %d", c.MaxTokens)
	}
	if c.OverlapTokens < 0 {
		ck.add(at+".overlap_tokens", "must be >= 0, got %d", c.OverlapTokens)
	}
	if c.MaxTokens <= c.OverlapTokens {
		ck.add(at+".max_tokens", "must be > overlap_tokens (%d <= %d)", c.MaxTokens, c.OverlapTokens)
	}
	ck.oneOf(at+".tokenizer", c.Tokenizer, "cl100k_base", "o200k_base")
	if c.DocumentTimeout < 0 {
		ck.add(at+".document_timeout", "must be >= 0, got %v", c.DocumentTimeout)
	}
}

func (ck *checker) embedder(at string, e *Embedder) {
	if !ck.oneOf(at+".provider", e.Provider, "hashing", "openai") {
		return
	}
	if e.Provider == "openai" {
		if e.Model == "" {
			ck.add(at+".model", `required for provider openai, e.g. "text-embedding-3-small"`)
		}
		switch u, err := url.Parse(e.BaseURL); {
		case e.BaseURL == "":
			ck.add(at+".base_url", `required for provider openai, e.g. "https://api.openai.com/v1"`)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			ck.add(at+".base_url", "must be an http:// or https:// URL such as \"https://api.openai.com/v1\", got %q", redactURL(e.BaseURL))
		}
	}
	// Memgraph stores a vector index's dimension as a 16-bit unsigned
	// integer (docs/memgraph.md §4). For openai, 0 means "use the model's".
	if !(e.Provider == "openai" && e.Dimensions == 0) && (e.Dimensions < 1 || e.Dimensions > 65535) {
		ck.add(at+".dimensions", "must be in 1..65535 (Memgraph stores a vector index's dimension as 16-bit unsigned), got %d", e.Dimensions)
	}
	ck.positive(at+".batch_size", int64(e.BatchSize))
	ck.positive(at+".max_concurrency", int64(e.MaxConcurrency))
	if e.Timeout <= 0 {
		ck.add(at+".timeout", "must be > 0, got %s", e.Timeout)
	}
	if e.MaxRetries != nil && *e.MaxRetries < 0 {
		ck.add(at+".max_retries", "must be >= 0, got %d", *e.MaxRetries)
	}
	ck.positive(at+".max_input_tokens", int64(e.MaxInputTokens))
}

func (ck *checker) sink(at string, s *Sink) {
	if !ck.oneOf(at+".type", s.Type, "cypherl", "memgraph") {
		return
	}
	switch s.Type {
	case "cypherl":
		if s.Memgraph != nil {
			ck.add(at+".memgraph", `set, but type is "cypherl"; remove it or set type: memgraph`)
		}
		if s.Cypherl == nil || s.Cypherl.Dir == "" {
			ck.add(at+".cypherl.dir", "required for type cypherl")
		}
		if s.Cypherl != nil && s.Cypherl.MemgraphVersion != "" {
			if r, err := sink.MemgraphFeatures(s.Cypherl.MemgraphVersion); err != nil {
				ck.add(at+".cypherl.memgraph_version", "%v", err)
			} else if !r.Supported {
				ck.add(at+".cypherl.memgraph_version", "%q: kgsync supports Memgraph 3.1 or later", s.Cypherl.MemgraphVersion)
			}
		}
	case "memgraph":
		if s.Cypherl != nil {
			ck.add(at+".cypherl", `set, but type is "memgraph"; remove it or set type: cypherl`)
		}
		if s.Memgraph == nil {
			ck.add(at+".memgraph", `required for type memgraph, e.g. {uri: "bolt://localhost:7687"}`)
			return
		}
		ck.memgraph(at+".memgraph", s.Memgraph)
	}
}

func (ck *checker) memgraph(at string, m *MemgraphSink) {
	dialectOK := ck.oneOf(at+".dialect", m.Dialect, "memgraph", "neo4j")
	switch u, err := url.Parse(m.URI); {
	case m.URI == "":
		ck.add(at+".uri", `required, e.g. "bolt://localhost:7687"`)
	case err != nil || u.Host == "":
		ck.add(at+".uri", "%q is not a Bolt URI such as \"bolt://localhost:7687\"", redactURL(m.URI))
	default:
		switch strings.ToLower(u.Scheme) {
		case "bolt", "bolt+s", "bolt+ssc":
		case "neo4j", "neo4j+s", "neo4j+ssc":
			if dialectOK && m.Dialect == "memgraph" {
				ck.add(at+".uri", "%q uses %s://, which Memgraph serves only on HA coordinators (Enterprise); "+
					"a single instance or a replication MAIN refuses routing, so use bolt://host:7687 (docs/memgraph.md §1)",
					redactURL(m.URI), u.Scheme)
			}
		default:
			ck.add(at+".uri", "scheme must be bolt://, bolt+s:// or bolt+ssc://, got %q", redactURL(m.URI))
		}
	}
	ck.positive(at+".batch_size", int64(m.BatchSize))
	ck.positive(at+".delete_batch_size", int64(m.DeleteBatchSize))
	if m.MaxRetries != nil && *m.MaxRetries < 0 {
		ck.add(at+".max_retries", "must be >= 0, got %d", *m.MaxRetries)
	}
	ck.positive(at+".vector_capacity", int64(m.VectorCapacity))
	ck.oneOf(at+".vector_metric", m.VectorMetric, "cos", "l2sq", "ip")
	if m.Timeout <= 0 {
		ck.add(at+".timeout", "must be > 0, got %s", m.Timeout)
	}
}

// redactURL hides a password in a URL before it goes into a message.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return s
}

// Pipeline returns the pipeline named name (a pointer into c.Pipelines) and
// whether it exists.
func (c *Config) Pipeline(name string) (*Pipeline, bool) {
	for i := range c.Pipelines {
		if c.Pipelines[i].Name == name {
			return &c.Pipelines[i], true
		}
	}
	return nil, false
}
