// Command bench measures kgsync on the real corpus documents and prints a
// Markdown report (quoted in docs/performance.md):
//
//   - first sync vs no-op re-sync time of the whole pipeline (SQLite state,
//     CYPHERL sink, hashing embedder);
//
//   - chunks re-embedded after a one-word and a one-sentence edit in the
//     middle of a document,
//     for the structural chunker (measured through the pipeline) and for two
//     baselines (fixed-size sliding window; greedy recursive splitter), each
//     behind the same text-keyed embedding cache;
//
//   - parse + chunk throughput per document in MB/s.
//
//   - with -golden FILE[,FILE…]: `kgsync eval` of each golden set over every
//     document of the corpus (all modes side by side, flat baselines
//     included), at -golden-max-tokens / -golden-overlap, so a change of
//     chunking is measured against retrieval in the same run.
//
// The pipeline and scale tables run once per vector length of -dims (the
// hashing embedder's dimensions: 384 is `embedder: {provider: hashing}`'s
// default, 1536 the size of OpenAI's text-embedding-3-small vectors).
//
// Usage: go run ./cmd/bench [-corpus DIR] [-reps 5] [-dims 384,1536]
// [-golden FILE [-golden-only]] (default: the corpus's docs,
// ../shared/corpus/docs or the copy in testdata/shared). Example: go run
// ./cmd/bench -golden testdata/golden/corpus.jsonl -golden-only.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/chunker/baseline"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/corpus"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

var docs = []string{"rfc7231.txt", "rfc7239.txt", "constitutionrf.txt", "spdx-2.3-package-information.md", "openchain-security-specification-1.1.md", "go_spec.html",
	"eu-mdr-2017-745-oj.html", "mdcg-2019-9-rev1-sscp.md"}

// headingless is a text without headings made from the constitution (its
// heading lines taken out, one paragraph a line), for edit locality where
// structure cannot anchor chunks.
const headingless = "headingless.txt"

// allFormats adds the DOCX and PDF renditions to the documents,
// and the documents measured for parsing and structure only.
var allFormats = append(append([]string{}, docs...), "openchain-security-specification-1.1.docx", "openchain-security-specification-1.1.pdf", "OpenChainSpec-2.0-Translation-ru.docx",
	"crd-2011-83-consolidated-excerpt.html")

const (
	maxTokens = 256
	overlap   = 32
)

func main() {
	corpusDir := flag.String("corpus", "", "directory of the corpus documents (default: ../shared/corpus/docs, else testdata/shared/corpus/docs)")
	reps := flag.Int("reps", 5, "repetitions of each timed step (the median is reported)")
	golden := flag.String("golden", "", "golden sets (JSON Lines, comma-separated) to evaluate retrieval on over every corpus document, synced once")
	goldenOnly := flag.Bool("golden-only", false, "only the golden set evaluation")
	goldenMax := flag.Int("golden-max-tokens", config.DefaultMaxTokens, "chunking.max_tokens of the golden set's pipeline")
	goldenOverlap := flag.Int("golden-overlap", config.DefaultOverlapTokens, "chunking.overlap_tokens of the golden set's pipeline")
	goldenJSON := flag.String("golden-json", "", "also write each golden set's report with every question (kgsync eval --json --verbose-results) to DIR/<set>.json")
	scaleSources := flag.String("scale-sources", "csv,grist", "sources of the scale tables, comma-separated: csv, grist (the Grist test server, in this process)")
	scale := flag.String("scale", "10000,100000", "row counts of the scale tables (CSV and Grist test server), comma-separated; add 1000000 for the million-row run; \"\" skips them")
	scaleOnly := flag.Bool("scale-only", false, "only the scale, start-up and per-scenario tables")
	dimsList := flag.String("dims", strconv.Itoa(config.DefaultHashingDimensions), "vector lengths of the hashing embedder, comma-separated (1..65535, e.g. 384,1536): the pipeline and scale tables run at each")
	peers := flag.String("peers", "", "a copy of ../shared/bench/peers with its node_modules installed (npm install): adds LangChain.js and LlamaIndex.TS to the per-scenario table")
	childRunFlag := flag.Bool("child-run", false, "internal: run the command given as arguments and report its peak RSS and time on stderr")
	childReadSpec := flag.String("child-read", "", "internal: read csv:FILE or grist:URL through its source and exit")
	flag.Parse()
	if *childRunFlag {
		if err := childRun(flag.Args()); err != nil {
			os.Exit(1)
		}
		return
	}
	if *childReadSpec != "" {
		if err := childRead(*childReadSpec); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *corpusDir == "" {
		shared, err := corpus.Locate()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		*corpusDir = filepath.Join(shared, "corpus", "docs")
	}
	dims, err := parseDims(*dimsList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	corpus := corpusDir
	if !*goldenOnly {
		if err := runScale(os.Stdout, *corpus, *scale, *scaleSources, *peers, *reps, dims); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if !*goldenOnly && !*scaleOnly {
		if err := run(context.Background(), os.Stdout, *corpus, *reps, dims); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if *golden != "" {
		if err := evalGolden(context.Background(), os.Stdout, *corpus, *golden, *goldenMax, *goldenOverlap, *goldenJSON); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// parseDims parses -dims: vector lengths, comma-separated, each in
// 1..65535 (the range config accepts), in the order given, repeats dropped.
func parseDims(list string) ([]int, error) {
	var dims []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("-dims: %q is not a vector length in 1..65535", f)
		}
		if !slices.Contains(dims, n) {
			dims = append(dims, n)
		}
	}
	return dims, nil
}

// evalGolden syncs every document of the corpus directory into a fresh
// pipeline with the given chunking and prints `kgsync eval` of each golden
// set (comma-separated files) over it, in one run; with jsonDir, each
// report with every question's result goes to jsonDir/<set>.json too.
func evalGolden(ctx context.Context, w io.Writer, corpus, goldens string, maxTok, overlapTok int, jsonDir string) error {
	sets := map[string][]retrieval.GoldenQuestion{}
	files := strings.Split(goldens, ",")
	for _, golden := range files {
		f, err := os.Open(golden)
		if err != nil {
			return err
		}
		qs, err := retrieval.ReadGolden(f, golden)
		_ = f.Close()
		if err != nil {
			return err
		}
		sets[golden] = qs
	}
	entries, err := os.ReadDir(corpus)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if _, ok := chunker.FormatForPath(e.Name()); ok && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	e, err := newEnv(ctx, corpus, names, config.DefaultHashingDimensions)
	if err != nil {
		return err
	}
	defer e.close()
	e.p.Chunking.MaxTokens, e.p.Chunking.OverlapTokens = maxTok, overlapTok
	if _, _, err := e.sync(ctx); err != nil {
		return err
	}
	for _, golden := range files {
		rep, err := e.p.Searcher().Eval(ctx, sets[golden], retrieval.EvalOptions{})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n## Retrieval: %s over %d documents (max_tokens %d, overlap %d, chunker version %d)\n\n```\n",
			filepath.Base(golden), len(names), maxTok, overlapTok, chunker.Version)
		if err := rep.WriteText(w); err != nil {
			return err
		}
		fmt.Fprintln(w, "```")
		if jsonDir != "" {
			b, err := json.MarshalIndent(rep, "", " ")
			if err != nil {
				return err
			}
			name := strings.TrimSuffix(filepath.Base(golden), filepath.Ext(golden)) + ".json"
			if err := os.WriteFile(filepath.Join(jsonDir, name), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

type env struct {
	dir   string
	store state.Store
	p     *pipeline.Pipeline
}

// newEnv copies the named corpus documents into a new temporary folder
// and returns a pipeline over them: SQLite state, CYPHERL sink, the
// hashing embedder at dims dimensions.
func newEnv(ctx context.Context, corpus string, names []string, dims int) (*env, error) {
	dir, err := os.MkdirTemp("", "kgsync-bench-")
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "docs")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	for _, n := range names {
		b, err := readCorpus(corpus, n)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(root, n), b, 0o644); err != nil {
			return nil, err
		}
	}
	store, err := sqlite.Open(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		return nil, err
	}
	tok, err := chunker.NewTokenizer("cl100k_base")
	if err != nil {
		return nil, err
	}
	src, err := files.New("docs", config.FilesSource{Root: root, Anchor: "Document", MaxFileBytes: 64 << 20}, chunker.Formats(), nil)
	if err != nil {
		return nil, err
	}
	sk, err := cypherl.New(filepath.Join(dir, "cypherl"), "docs", sink.Memgraph)
	if err != nil {
		return nil, err
	}
	return &env{dir: dir, store: store, p: &pipeline.Pipeline{
		Name: "docs", Sources: []sources.Source{src}, Embedder: hashing.New("hashing-v1", dims),
		Sink: sk, Store: store, BatchSize: 64, MaxDeleteRatio: 1, Fingerprint: 1,
		Chunking: chunker.Options{MaxTokens: maxTokens, OverlapTokens: overlap, Tokenizer: tok},
	}}, nil
}

// readCorpus reads a corpus document, or makes the heading-less text.
func readCorpus(dir, name string) ([]byte, error) {
	if name != headingless {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			// A document new to the corpus waits in testdata/corpus-new.
			if p, ok := corpus.RepoCopy(name); ok {
				return os.ReadFile(p)
			}
		}
		return b, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "constitutionrf.txt"))
	if err != nil {
		return nil, err
	}
	heading := regexp.MustCompile(`^(Статья|ГЛАВА|РАЗДЕЛ|Глава)`)
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" || heading.MatchString(l) || strings.ToUpper(l) == l {
			continue
		}
		kept = append(kept, l)
	}
	return []byte(strings.Join(kept, "\n\n")), nil
}

func (e *env) close() {
	_ = e.p.Sink.Close(context.Background())
	_ = e.store.Close()
	_ = os.RemoveAll(e.dir)
}

func (e *env) sync(ctx context.Context) (state.Counts, time.Duration, error) {
	start := time.Now()
	res, err := e.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	return res.Run.Counts, time.Since(start), err
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// run prints the pipeline table at each of dims, then the edit, throughput,
// document graph and structure tables.
func run(ctx context.Context, w io.Writer, corpus string, reps int, dims []int) error {
	if err := pipelineTable(ctx, w, corpus, reps, dims); err != nil {
		return err
	}
	return documentTables(ctx, w, corpus, reps)
}

// pipelineRuns is one vector length's first syncs and no-op re-syncs in
// the pipeline table, with the counts of the last pair.
type pipelineRuns struct {
	firsts, noops []time.Duration
	firstC, noopC state.Counts
}

// pipelineTable prints the median first sync and no-op re-sync of the
// documents at each of dims, each pair from an empty state, reps times;
// a repetition runs every vector length in turn, so a change of the
// machine's load falls on all of them.
func pipelineTable(ctx context.Context, w io.Writer, corpus string, reps int, dims []int) error {
	var total int64
	for _, n := range docs {
		fi, err := os.Stat(filepath.Join(corpus, n))
		if err != nil {
			return fmt.Errorf("corpus: %w", err)
		}
		total += fi.Size()
	}
	runs := make([]pipelineRuns, len(dims))
	for range reps {
		for i, dim := range dims {
			r := &runs[i]
			e, err := newEnv(ctx, corpus, docs, dim)
			if err != nil {
				return err
			}
			c, d, err := e.sync(ctx)
			if err != nil {
				e.close()
				return err
			}
			r.firsts, r.firstC = append(r.firsts, d), c
			c, d, err = e.sync(ctx)
			e.close()
			if err != nil {
				return err
			}
			r.noops, r.noopC = append(r.noops, d), c
		}
	}
	fmt.Fprintf(w, "## Pipeline: %d documents, %.2f MB (max_tokens %d, overlap %d, hashing embedder, SQLite, CYPHERL)\n\n", len(docs), float64(total)/1e6, maxTokens, overlap)
	fmt.Fprintln(w, "Each repetition runs every vector length in turn.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| dims | step | median time (runs) | records changed | chunks embedded | sink statements |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for i, dim := range dims {
		r := runs[i]
		fmt.Fprintf(w, "| %d | first sync | %s | %d | %d | %d |\n", dim, medianOf(r.firsts), r.firstC.RecordsNew, r.firstC.ChunksEmbedded, r.firstC.SinkStatements)
		fmt.Fprintf(w, "| %d | no-op re-sync | %s | %d | %d | %d |\n", dim, medianOf(r.noops), r.noopC.RecordsChanged, r.noopC.ChunksEmbedded, r.noopC.SinkStatements)
	}
	fmt.Fprintln(w)
	return nil
}

// medianOf is the median of ds followed by every run in the order run,
// rounded to the millisecond: "1.2s (1.3s, 1.2s, 1.1s)".
func medianOf(ds []time.Duration) string {
	all := make([]string, len(ds))
	for i, d := range ds {
		all[i] = d.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s (%s)", median(slices.Clone(ds)).Round(time.Millisecond), strings.Join(all, ", "))
}

// documentTables prints the tables that do not depend on the vector
// length: chunks re-embedded per edit against the baselines, parse and
// chunk throughput, the document graph and structure.
func documentTables(ctx context.Context, w io.Writer, corpus string, reps int) error {
	tok, err := chunker.NewTokenizer("cl100k_base")
	if err != nil {
		return err
	}
	for _, ed := range edits {
		fmt.Fprintf(w, "## Chunks re-embedded after an edit: %s\n\n", ed.name)
		fmt.Fprintf(w, "Same token budget for all three (%d tokens; overlap %d for structural and fixed window); a text-keyed embedding cache in front of each.\n\n", maxTokens, overlap)
		fmt.Fprintln(w, "| document | structural (kgsync) | chunk ids gone | fixed window | recursive splitter | chunks before (structural / fixed / recursive) |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
		for _, n := range []string{"rfc7231.txt", "constitutionrf.txt", "rfc7239.txt", "spdx-2.3-package-information.md", "go_spec.html",
			"eu-mdr-2017-745-oj.html", "mdcg-2019-9-rev1-sscp.md", headingless} {
			if err := locality(ctx, w, corpus, n, tok, ed); err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Parse + chunk throughput")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| document | MB | chunks | median time | MB/s |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	parsed := make([]parsedDoc, 0, len(allFormats))
	for _, n := range allFormats {
		b, err := readCorpus(corpus, n)
		if err != nil {
			return err
		}
		format, _ := chunker.FormatForPath(n)
		var ds []time.Duration
		doc := parsedDoc{name: n}
		for range reps {
			start := time.Now()
			root, err := chunker.Parse(format, b)
			if err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
			cs, err := chunker.Split(n, root, chunker.Options{MaxTokens: maxTokens, OverlapTokens: overlap, Tokenizer: tok})
			if err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
			ds = append(ds, time.Since(start))
			doc.root, doc.chunks = root, cs
		}
		m := median(ds)
		fmt.Fprintf(w, "| %s | %.2f | %d | %s | %.2f |\n", n, float64(len(b))/1e6, len(doc.chunks), m.Round(time.Millisecond), float64(len(b))/1e6/m.Seconds())
		parsed = append(parsed, doc)
	}
	graphReport(w, parsed)
	structureReport(w, corpus, parsed)
	return nil
}

// parsedDoc is one corpus document as the throughput table parsed and
// split it.
type parsedDoc struct {
	name   string
	root   *chunker.Element
	chunks []chunker.Chunk
}

// graphReport prints, per document, the element tree by kind, the chunk
// size distribution, terms, and cross-references resolved.
func graphReport(w io.Writer, docs []parsedDoc) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Document graph")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| document | sections | paragraphs | lists | tables | clauses | other | chunk tokens min / median / max | terms | refs in document resolved | unresolved | to other documents |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, d := range docs {
		n, root, cs := d.name, d.root, d.chunks
		kinds := map[chunker.Kind]int{}
		var walk func(e *chunker.Element)
		walk = func(e *chunker.Element) {
			for _, c := range e.Children {
				kinds[c.Kind]++
				walk(c)
			}
		}
		walk(root)
		other := 0
		for k, v := range kinds {
			switch k {
			case chunker.KindSection, chunker.KindParagraph, chunker.KindList, chunker.KindTable, chunker.KindClause:
			default:
				other += v
			}
		}
		sizes := make([]int, len(cs))
		for i, c := range cs {
			sizes[i] = c.Tokens
		}
		slices.Sort(sizes)
		dist := "-"
		if len(sizes) > 0 {
			dist = fmt.Sprintf("%d / %d / %d", sizes[0], sizes[len(sizes)/2], sizes[len(sizes)-1])
		}
		refs := chunker.CrossRefs(root)
		resolved, unresolved := chunker.Resolve(root, refs)
		external := 0
		for _, r := range refs {
			if r.Doc != "" {
				external++
			}
		}
		rate := "-"
		if in := len(resolved) + len(unresolved); in > 0 {
			rate = fmt.Sprintf("%d of %d (%.0f%%)", len(resolved), in, 100*float64(len(resolved))/float64(in))
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %s | %d | %s | %d | %d |\n", n,
			kinds[chunker.KindSection], kinds[chunker.KindParagraph], kinds[chunker.KindList], kinds[chunker.KindTable], kinds[chunker.KindClause],
			other, dist, len(chunker.Terms(root)), rate, len(unresolved), external)
	}
}

// edit is a one-sentence edit in the middle of a text.
type edit struct {
	name  string
	apply func(string) string
}

var edits = []edit{
	{"one word inserted into the middle sentence", func(s string) string {
		return insertAt(s, "edited ")
	}},
	{"one sentence (~25 tokens) inserted in the middle", func(s string) string {
		return insertAt(s, "This sentence was added by an editor to check how many chunks change when a paragraph grows in the middle of a long document. ")
	}},
	{"one paragraph inserted in the middle", insertParagraph},
}

// insertParagraph inserts a paragraph at the first paragraph boundary after
// the middle of s (after a </p> in HTML, at a blank line elsewhere that
// does not end a converted page).
func insertParagraph(s string) string {
	const para = "This paragraph was added by an editor to check how many chunks change when a document grows by a paragraph in the middle."
	mid := len(s) / 2
	if i := strings.Index(s[mid:], "</p>"); i >= 0 {
		at := mid + i + len("</p>")
		return s[:at] + "\n<p>" + para + "</p>" + s[at:]
	}
	// A blank line in the body, not the one before a page marker (where a
	// converted page ends in its footnotes).
	for at := mid; at < len(s); {
		i := strings.Index(s[at:], "\n\n")
		if i < 0 {
			break
		}
		at += i
		if !strings.HasPrefix(strings.TrimLeft(s[at:], "\n"), "<!--") {
			return s[:at] + "\n\n" + para + s[at:]
		}
		at += 2
	}
	return s + "\n\n" + para
}

// insertAt inserts text at the first word start after the middle of s.
func insertAt(s, text string) string {
	mid := len(s) / 2
	i := strings.IndexByte(s[mid:], ' ')
	if i < 0 {
		return s + " " + text
	}
	at := mid + i + 1
	return s[:at] + text + s[at:]
}

func newTexts(before, after []string) int {
	seen := map[string]bool{}
	for _, t := range before {
		seen[t] = true
	}
	n := 0
	counted := map[string]bool{}
	for _, t := range after {
		if !seen[t] && !counted[t] {
			counted[t] = true
			n++
		}
	}
	return n
}

func locality(ctx context.Context, w io.Writer, corpus, name string, tok *chunker.Tokenizer, ed edit) error {
	e, err := newEnv(ctx, corpus, []string{name}, config.DefaultHashingDimensions)
	if err != nil {
		return err
	}
	defer e.close()
	c, _, err := e.sync(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(e.dir, "docs", name)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	before := string(b)
	after := ed.apply(before)
	if err := os.WriteFile(path, []byte(after), 0o644); err != nil {
		return err
	}
	c2, _, err := e.sync(ctx)
	if err != nil {
		return err
	}
	fb, fa := baseline.FixedWindow(before, maxTokens, overlap, tok), baseline.FixedWindow(after, maxTokens, overlap, tok)
	rb, ra := baseline.Recursive(before, maxTokens, tok), baseline.Recursive(after, maxTokens, tok)
	fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d / %d / %d |\n", name, c2.ChunksEmbedded, c2.ChunksDeleted, newTexts(fb, fa), newTexts(rb, ra), c.ChunksTotal, len(fb), len(rb))
	return nil
}
