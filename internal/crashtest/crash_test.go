package crashtest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", to count the embedding cache

	"github.com/kgsync/kgsync/internal/crashtest"
	"github.com/kgsync/kgsync/internal/pgtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/postgres"
	"github.com/kgsync/kgsync/state/sqlite"
)

// Environment variables of the crash test.
const (
	envTrials = "KGSYNC_CRASH_TRIALS" // number of trials (default defaultTrials)
	envSeed   = "KGSYNC_CRASH_SEED"   // seed of the trial plan (default 1)
)

const (
	defaultTrials = 50
	dims          = 32
	// callSize is the embedding request size of the openai trials
	// (batch_size × max_concurrency): a kill loses at most one request's
	// answer, so it may cost at most this many extra texts.
	callSize = 8
	// maxKills bounds the kills of one trial (each restart may be killed
	// again before the last, uninterrupted one).
	maxKills = 3
)

// target is a Memgraph version the trials write CYPHERL for
// (sink.cypherl.memgraph_version) with the 3.x minor versions whose
// answers the replays of its files give.
type target struct {
	version string
	minors  []int
}

// targets are the oldest and the newest Memgraph versions kgsync supports
// (the first supported and the last row of sink.MemgraphRanges), each
// replayed as both ends of its row: a statement one of them refuses fails
// the trial as it would stop mgconsole.
func targets(t *testing.T) []target {
	first := slices.IndexFunc(sink.MemgraphRanges, func(r sink.MemgraphRange) bool { return r.Supported })
	require.GreaterOrEqual(t, first, 0)
	oldest, newest := sink.MemgraphRanges[first], sink.MemgraphRanges[len(sink.MemgraphRanges)-1]
	require.Negative(t, newest.MaxMinor, "the last row holds every later version")
	return []target{
		{version: fmt.Sprintf("3.%d", oldest.MinMinor), minors: []int{oldest.MinMinor, oldest.MaxMinor}},
		{version: fmt.Sprintf("3.%d", newest.MinMinor+1), minors: []int{newest.MinMinor, newest.MinMinor + 1}},
	}
}

// suite is what every trial shares.
type suite struct {
	bin      string
	template string // the documents of a first sync
	targets  []target
	// refs are the uninterrupted runs' results, by version, provider and
	// phase.
	refs map[string]reference
}

// reference is the result of an uninterrupted run of one phase.
type reference struct {
	graph *crashtest.Graph
	// duration is the wall time of the phase's run, including process start.
	duration time.Duration
	// cache is the number of embeddings cached after the phase.
	cache int
	// texts is the number of texts the phase sent to the provider.
	texts int
}

// trial is one planned crash trial.
type trial struct {
	n           int
	incremental bool   // kill the second sync (after mutate) instead of the first
	driver      string // "sqlite" or "postgres"
	provider    string // "hashing" or "openai"
	target      target // the Memgraph version the files are written for
	kills       int
	delays      []float64 // fraction of the reference duration, per kill
}

// TestCrashConvergence kills the real kgsync binary with SIGKILL at random
// points of first and incremental syncs, restarts it until a run succeeds,
// and checks that the graph (replayed from the CYPHERL files), the state
// and the embedding cache equal those of an uninterrupted run. The plan is
// drawn from a seeded math/rand ($KGSYNC_CRASH_SEED, default 1), so a
// failing trial is reproducible; $KGSYNC_CRASH_TRIALS sets the number of
// trials (default 50, one in five with Postgres state). Trials write CYPHERL
// for the oldest and the newest supported Memgraph version in turn, and
// their files are replayed as each end of that version's row answers.
func TestCrashConvergence(t *testing.T) {
	trials := envInt(t, envTrials, defaultTrials)
	seed := uint64(envInt(t, envSeed, 1))
	s := &suite{bin: crashtest.BuildKgsync(t, t.TempDir()), template: docSet(t), targets: targets(t)}
	s.references(t)

	rng := rand.New(rand.NewPCG(seed, 0x6b6773796e63))
	plan := make([]trial, trials)
	for i := range plan {
		tr := trial{n: i, incremental: i%2 == 1, driver: "sqlite", provider: "hashing", target: s.targets[(i/4)%len(s.targets)],
			kills: 1 + rng.IntN(maxKills)}
		if i%5 == 4 {
			tr.driver = "postgres"
		}
		if (i/2)%2 == 1 {
			tr.provider = "openai"
		}
		for range tr.kills {
			tr.delays = append(tr.delays, rng.Float64())
		}
		plan[i] = tr
	}

	var mu sync.Mutex
	var killed, afterWrite, missed, torn, failedRuns int
	for _, tr := range plan {
		t.Run(fmt.Sprintf("%02d-%s-%s-%s-%s", tr.n, phaseName(tr.incremental), tr.driver, tr.provider, tr.target.version), func(t *testing.T) {
			t.Parallel()
			r := s.runTrial(t, tr)
			mu.Lock()
			killed, afterWrite, missed = killed+r.killed, afterWrite+r.afterWrite, missed+r.missed
			torn, failedRuns = torn+r.torn, failedRuns+r.failed
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		t.Logf("crash trials: %d (seed %d), processes killed: %d (%d after writing to the sink), kills after the run had finished: %d, torn tails: %d, failed (not killed) runs: %d",
			trials, seed, killed, afterWrite, missed, torn, failedRuns)
	})
}

func phaseName(incremental bool) string {
	if incremental {
		return "incremental"
	}
	return "first"
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "$%s", name)
	require.Positive(t, n, "$%s", name)
	return n
}

// docSet prepares the documents of a first sync: three corpus documents
// and the SPDX chapter cut into nine files at its "## " headings, twelve
// records in all, so that batch_size 1 gives a dozen commit points.
func docSet(t *testing.T) string {
	corpus := crashtest.CorpusDocs(t)
	dir := t.TempDir()
	for _, n := range []string{"rfc7239.txt", "openchain-security-specification-1.1.md", "openchain-security-specification-1.1.docx"} {
		copyFile(t, filepath.Join(corpus, n), filepath.Join(dir, n))
	}
	body, err := os.ReadFile(filepath.Join(corpus, "spdx-2.3-package-information.md"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(body), "\n")
	var part []string
	parts, headings := 0, 0
	flush := func() {
		if len(part) == 0 {
			return
		}
		parts++
		name := filepath.Join(dir, fmt.Sprintf("spdx-part-%02d.md", parts))
		require.NoError(t, os.WriteFile(name, []byte(strings.Join(part, "")), 0o644))
		part = nil
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "## ") {
			headings++
			if headings > 1 && headings%3 == 1 {
				flush()
			}
		}
		part = append(part, l)
	}
	flush()
	require.Equal(t, 9, parts, "27 headings, three per part")
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o644))
}

// mutate is the change between the first and the incremental sync: one
// paragraph edited, one file deleted, one renamed and one added (a part of
// another corpus document), so the incremental run changes, deletes,
// renames (no embedding) and adds.
func mutate(t *testing.T, docs string) {
	t.Helper()
	path := filepath.Join(docs, "rfc7239.txt")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	old := "passing through several proxies, each proxy can add a set of"
	require.Contains(t, string(b), old)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, "passing through many proxies, every proxy may add its own set of", 1)), 0o644))
	require.NoError(t, os.Remove(filepath.Join(docs, "spdx-part-04.md")))
	require.NoError(t, os.Rename(filepath.Join(docs, "spdx-part-07.md"), filepath.Join(docs, "spdx-renamed.md")))
	rfc, err := os.ReadFile(filepath.Join(crashtest.CorpusDocs(t), "rfc7231.txt"))
	require.NoError(t, err)
	cut := strings.LastIndex(string(rfc[:24000]), "\n\n")
	require.NoError(t, os.WriteFile(filepath.Join(docs, "rfc7231-start.txt"), rfc[:cut+1], 0o644))
}

// workspace is one trial's (or reference's) folder: documents, config,
// state and CYPHERL output.
type workspace struct {
	dir, docs string
	driver    string
	target    target
	dsn       string
	schema    string
	provider  string
	// emb is the workspace's own embeddings endpoint (provider openai), so
	// that its count is the workspace's alone.
	emb *crashtest.EmbedServer
}

func (s *suite) newWorkspace(t *testing.T, driver, provider string, tg target) *workspace {
	t.Helper()
	w := &workspace{dir: t.TempDir(), driver: driver, provider: provider, target: tg}
	w.docs = filepath.Join(w.dir, "docs")
	require.NoError(t, os.Mkdir(w.docs, 0o755))
	entries, err := os.ReadDir(s.template)
	require.NoError(t, err)
	for _, e := range entries {
		copyFile(t, filepath.Join(s.template, e.Name()), filepath.Join(w.docs, e.Name()))
	}
	stateCfg := "  driver: sqlite\n  path: state.db\n"
	if driver == "postgres" {
		w.dsn, w.schema = pgtest.Schema(t)
		stateCfg = fmt.Sprintf("  driver: postgres\n  dsn: %q\n  schema: %s\n", w.dsn, w.schema)
	}
	embCfg := fmt.Sprintf("  provider: hashing\n  model: hashing-v1\n  dimensions: %d\n", dims)
	if provider == "openai" {
		w.emb = crashtest.NewEmbedServer(t, "hashing-v1", dims)
		embCfg = fmt.Sprintf("  provider: openai\n  base_url: %s\n  model: hashing-v1\n  dimensions: %d\n  batch_size: %d\n  max_concurrency: 1\n  max_retries: 0\n",
			w.emb.URL(), dims, callSize)
	}
	cfg := "state:\n" + stateCfg +
		"sink:\n  type: cypherl\n  cypherl:\n    dir: cypherl\n    memgraph_version: \"" + tg.version + "\"\n" +
		"embedder:\n" + embCfg +
		"chunking:\n  max_tokens: 128\n  overlap_tokens: 16\n" +
		"pipelines:\n  - name: docs\n    batch_size: 1\n    sources:\n      - name: docs\n        files:\n          root: docs\n"
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "kgsync.yaml"), []byte(cfg), 0o644))
	return w
}

// texts is the number of texts the workspace's runs sent to the provider
// (0 with the hashing provider).
func (w *workspace) texts() int {
	if w.emb == nil {
		return 0
	}
	return w.emb.Texts()
}

// runJSON is the part of `kgsync sync --json` output the test reads.
type runJSON struct {
	Status  string `json:"status"`
	Records struct {
		New, Changed, Deleted int
	} `json:"records"`
	Chunks struct {
		Embedded int `json:"embedded"`
	} `json:"chunks"`
	Sink struct {
		Statements int `json:"statements"`
	} `json:"sink"`
	Error string `json:"error"`
}

// sync runs `kgsync sync --json` once, with SIGKILL after killAfter (> 0).
func (s *suite) sync(t *testing.T, w *workspace, killAfter time.Duration) (crashtest.Outcome, runJSON) {
	t.Helper()
	out, err := crashtest.Exec(t.Context(), w.dir, s.bin, killAfter, "sync", "--json", "-c", "kgsync.yaml")
	require.NoError(t, err)
	var j runJSON
	if out.ExitCode == 0 {
		require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out.Stdout)), &j), "stdout: %s", out.Stdout)
		require.Equal(t, "succeeded", j.Status)
	}
	return out, j
}

// mustSync runs one uninterrupted sync that must succeed.
func (s *suite) mustSync(t *testing.T, w *workspace) (crashtest.Outcome, runJSON) {
	t.Helper()
	out, j := s.sync(t, w, 0)
	require.Zero(t, out.ExitCode, "kgsync sync failed:\n%s%s", out.Stdout, out.Stderr)
	return out, j
}

// replay replays the workspace's CYPHERL directory file by file as each
// minor version of its target answers; the graphs must agree. It returns
// the first one and its stats.
func (w *workspace) replay(t *testing.T) (*crashtest.Graph, crashtest.ReplayStats) {
	t.Helper()
	var g *crashtest.Graph
	var st crashtest.ReplayStats
	for _, minor := range w.target.minors {
		mg, mst, err := crashtest.ReplayDir(filepath.Join(w.dir, "cypherl", "docs"), minor)
		require.NoError(t, err, "files for %s replayed on 3.%d", w.target.version, minor)
		if g == nil {
			g, st = mg, mst
			continue
		}
		require.Equal(t, st, mst, "3.%d", minor)
		requireSameGraph(t, g, mg)
	}
	return g, st
}

// refKey names a reference run.
func refKey(version, provider string, incremental bool) string {
	return version + "/" + provider + "/" + phaseName(incremental)
}

// references runs each phase uninterrupted with both providers, writing
// for each target version: the graphs must agree (the server answers with
// the hashing embedder's vectors, and the versions differ only in their
// DDL), and they are what trials converge to.
func (s *suite) references(t *testing.T) {
	s.refs = map[string]reference{}
	var graphs = map[string]*crashtest.Graph{}
	for _, tg := range s.targets {
		for _, provider := range []string{"hashing", "openai"} {
			w := s.newWorkspace(t, "sqlite", provider, tg)
			for _, incremental := range []bool{false, true} {
				if incremental {
					mutate(t, w.docs)
				}
				before := w.texts()
				out, j := s.mustSync(t, w)
				g, st := w.replay(t)
				require.Empty(t, st.TornTails)
				key := refKey(tg.version, provider, incremental)
				s.refs[key] = reference{graph: g, duration: out.Duration, cache: cacheCount(t, w), texts: w.texts() - before}
				if provider == "openai" {
					require.Equal(t, j.Chunks.Embedded, s.refs[key].texts, "the server saw every text the run embedded, once")
				}
				if other, ok := graphs[phaseName(incremental)]; ok {
					requireSameGraph(t, other, g)
				}
				graphs[phaseName(incremental)] = g
				requireStateMatchesGraph(t, w, g)
			}
		}
	}
	newest := s.targets[len(s.targets)-1].version
	first, incr := s.refs[refKey(newest, "hashing", false)], s.refs[refKey(newest, "hashing", true)]
	require.Equal(t, 12, first.graph.Count("Document"))
	require.Equal(t, 12, incr.graph.Count("Document"), "one deleted, one added, one renamed")
	require.Greater(t, first.graph.Count(pipeline.LabelChunk), 200)
	t.Logf("reference runs: first sync %v (%d chunks), incremental %v; openai texts first %d, incremental %d",
		first.duration, first.graph.Count(pipeline.LabelChunk), incr.duration, s.refs[refKey(newest, "openai", false)].texts,
		s.refs[refKey(newest, "openai", true)].texts)
}

type trialResult struct{ killed, afterWrite, missed, torn, failed int }

// dirSize is the total size of the files in dir (0 when it does not exist).
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	var n int64
	for _, e := range entries {
		fi, err := e.Info()
		require.NoError(t, err)
		n += fi.Size()
	}
	return n
}

func (s *suite) runTrial(t *testing.T, tr trial) trialResult {
	var res trialResult
	w := s.newWorkspace(t, tr.driver, tr.provider, tr.target)
	ref := s.refs[refKey(tr.target.version, tr.provider, tr.incremental)]
	if tr.incremental {
		s.mustSync(t, w)
		mutate(t, w.docs)
	}
	before := w.texts()
	kills := 0
	done := false
	for _, frac := range tr.delays {
		// Kill somewhere in the run, from process start to just before it
		// would finish uninterrupted.
		// sqrt weights the draw towards the end: the first ~100 ms of a
		// run are process start and opening state, before any write.
		delay := time.Duration(math.Sqrt(frac)*0.95*float64(ref.duration)) + time.Millisecond
		size := dirSize(t, filepath.Join(w.dir, "cypherl", "docs"))
		out, _ := s.sync(t, w, delay)
		switch {
		case out.Killed:
			kills++
			res.killed++
			if dirSize(t, filepath.Join(w.dir, "cypherl", "docs")) > size {
				res.afterWrite++
			}
		case out.ExitCode == 0:
			res.missed++
			done = true
		default:
			res.failed++
			requireRetryable(t, out)
		}
		if done {
			break
		}
	}
	var last runJSON
	for attempt := 0; !done; attempt++ {
		require.Less(t, attempt, 5, "no run succeeded after the crash")
		out, j := s.sync(t, w, 0)
		if out.ExitCode != 0 {
			res.failed++
			requireRetryable(t, out)
			continue
		}
		done, last = true, j
	}
	_ = last

	// A converged pipeline's next run has nothing to do.
	_, noop := s.mustSync(t, w)
	require.Zero(t, noop.Records.New+noop.Records.Changed+noop.Records.Deleted, "state is behind the converged graph")
	require.Zero(t, noop.Chunks.Embedded)
	require.Zero(t, noop.Sink.Statements)

	// (a) + (c): the graph equals the uninterrupted run's, and every line
	// is a MERGE/MATCH shape (Apply rejects anything else, CREATE included)
	// that each version of the target accepts.
	g, st := w.replay(t)
	res.torn = len(st.TornTails)
	requireSameGraph(t, ref.graph, g)
	// The files concatenated, as mgconsole loads them, give the same graph.
	for _, minor := range tr.target.minors {
		sg, sst, err := crashtest.ReplayStream(filepath.Join(w.dir, "cypherl", "docs"), minor)
		require.NoError(t, err, "3.%d", minor)
		require.Empty(t, sst.TornTails)
		requireSameGraph(t, ref.graph, sg)
	}
	// (b) state matches the graph.
	requireStateMatchesGraph(t, w, g)
	// (d) the embedding bill: the cache holds exactly what an uninterrupted
	// run caches, and the provider saw at most one request more per kill.
	require.Equal(t, ref.cache, cacheCount(t, w), "embedding cache size")
	if tr.provider == "openai" {
		texts := w.texts() - before
		require.LessOrEqual(t, texts, ref.texts+kills*callSize, "texts sent to the provider after %d kills", kills)
	}
	return res
}

// requireRetryable accepts a run that failed without being killed only when
// the pipeline's lock was still held by the session of the killed process
// (Postgres frees it once it notices the disconnect).
func requireRetryable(t *testing.T, out crashtest.Outcome) {
	t.Helper()
	require.Contains(t, out.Stderr, "locked", "a run after a crash failed:\n%s%s", out.Stdout, out.Stderr)
}

func requireSameGraph(t *testing.T, want, got *crashtest.Graph) {
	t.Helper()
	wn, we := want.Canonical("_synced_at")
	gn, ge := got.Canonical("_synced_at")
	require.Equal(t, len(wn), len(gn), "node count")
	require.Equal(t, len(we), len(ge), "edge count")
	for k, p := range wn {
		require.Equal(t, p, gn[k], "node %s", k)
	}
	for k, p := range we {
		require.Equal(t, p, ge[k], "edge %s", k)
	}
}

// openStore opens the workspace's state from the test process.
func openStore(t *testing.T, w *workspace) state.Store {
	t.Helper()
	var st state.Store
	var err error
	if w.driver == "postgres" {
		st, err = postgres.Open(t.Context(), w.dsn, w.schema)
	} else {
		st, err = sqlite.Open(t.Context(), filepath.Join(w.dir, "state.db"))
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// requireStateMatchesGraph checks (b): every record in state has its
// Document node with the stored hash, every stored chunk its Chunk node,
// every element state records for a document (its "sections", "elements"
// and "terms" lists: what a later delete of the record removes) a node,
// and every node of the graph is one of these (placeholders aside).
func requireStateMatchesGraph(t *testing.T, w *workspace, g *crashtest.Graph) {
	t.Helper()
	st := openStore(t, w)
	ctx := t.Context()
	recs, err := st.RecordList(ctx, "docs", "docs")
	require.NoError(t, err)
	want := map[crashtest.NodeKey]bool{}
	parts := map[string]bool{} // ids of the records' other nodes, any label
	for key, rec := range recs {
		doc := crashtest.NodeKey{Label: "Document", ID: pipeline.NodeID("docs", key), Pipeline: "docs"}
		want[doc] = true
		node, ok := g.Nodes[doc]
		require.True(t, ok, "record %q has no node", key)
		require.Equal(t, fmt.Sprintf("%016x", rec.Hash), node["_hash"], "record %q: node hash differs from state", key)
		var props map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(rec.Props, &props))
		for _, list := range []string{"sections", "elements", "terms"} {
			var items []struct {
				ID string `json:"id"`
			}
			if raw, ok := props[list]; ok {
				require.NoError(t, json.Unmarshal(raw, &items), "record %q: %s", key, list)
			}
			for _, it := range items {
				parts[it.ID] = true
			}
		}
		chunks, err := st.ChunkGet(ctx, "docs", "docs", []string{key})
		require.NoError(t, err)
		for _, c := range chunks[key] {
			want[crashtest.NodeKey{Label: pipeline.LabelChunk, ID: c.ID, Pipeline: "docs"}] = true
		}
	}
	for k := range want {
		_, ok := g.Nodes[k]
		require.True(t, ok, "%s %q is in state but not in the graph", k.Label, k.ID)
	}
	found := map[string]bool{}
	for k, p := range g.Nodes {
		if k.Label != "Document" && k.Label != pipeline.LabelChunk && parts[k.ID] {
			found[k.ID] = true
			continue
		}
		if p[pipeline.PropPlaceholder] == true {
			continue
		}
		require.True(t, want[k], "%s %q is in the graph but its record is not in state", k.Label, k.ID)
	}
	for id := range parts {
		require.True(t, found[id], "element %q is in state but not in the graph", id)
	}
}

// cacheCount counts the embedding cache's rows.
func cacheCount(t *testing.T, w *workspace) int {
	t.Helper()
	ctx := t.Context()
	var n int
	if w.driver == "postgres" {
		conn, err := pgx.Connect(ctx, w.dsn)
		require.NoError(t, err)
		defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{w.schema, "embeddings"}.Sanitize()).Scan(&n))
		return n
	}
	db, err := sql.Open("sqlite", filepath.Join(w.dir, "state.db"))
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM embeddings").Scan(&n))
	return n
}
