package main

// Scale and start-up: whole kgsync processes (the binary built from this
// module) over a CSV table and the Grist test server at 10k, 100k (and,
// with -scale, 1M) rows, timed and measured by their peak resident memory
// (getrusage's ru_maxrss of the child), against a process that only reads
// the same table through the source; the no-op start-up of the 4
// documents; and the texts embedded per scenario by kgsync, LangChain.js
// and LlamaIndex.TS, with each whole process's wall time (with -peers, the
// harnesses of ../shared/bench/peers with their node_modules installed).

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/internal/corpus"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// proc is one measured child process.
type proc struct {
	elapsed time.Duration
	rssKB   int64
	out     []byte
}

// runProc runs a command to its end and measures it.
func runProc(name string, args ...string) (proc, error) {
	return runProcEnv(nil, name, args...)
}

// runProcEnv is runProc with extra environment variables. The command
// runs under a small launcher (this binary with -child-run): a child's
// ru_maxrss starts from the peak of the process that forked it, so the
// bench, holding whole tables, must not fork the measured process itself.
func runProcEnv(env []string, name string, args ...string) (proc, error) {
	self, err := os.Executable()
	if err != nil {
		return proc{}, err
	}
	cmd := exec.Command(self, append([]string{"-child-run", name}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	p := proc{out: out.Bytes()}
	stderr := bytes.TrimSpace(errb.Bytes())
	if i := bytes.LastIndex(stderr, []byte(measureTag)); i >= 0 {
		var ns int64
		fmt.Sscanf(string(stderr[i+len(measureTag):]), "%d %d", &p.rssKB, &ns)
		p.elapsed = time.Duration(ns)
		stderr = bytes.TrimSpace(stderr[:i])
	}
	if err != nil {
		return p, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr)
	}
	return p, nil
}

// measureTag starts the launcher's last line on stderr.
const measureTag = "kgsync-bench-measure "

// childRun is the hidden -child-run mode: run argv, pass its output
// through, and print its peak RSS (KB) and wall time (ns) on stderr.
func childRun(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	fmt.Fprintf(os.Stderr, "%s%d %d\n", measureTag, rss, elapsed.Nanoseconds())
	return err
}

// buildKgsync builds the kgsync binary of this module into dir.
func buildKgsync(dir string) (string, error) {
	bin := filepath.Join(dir, "kgsync")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/kgsync/kgsync/cmd/kgsync")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build kgsync: %w", err)
	}
	return bin, nil
}

// runScale prints the scale tables at the row counts of list, once for
// each vector length of dims, then the start-up table and the per-scenario
// table.
func runScale(w io.Writer, corpusDir, list, sources, peers string, reps int, dims []int) error {
	use := map[string]bool{}
	for _, f := range strings.Split(sources, ",") {
		switch f = strings.TrimSpace(f); f {
		case "csv", "grist":
			use[f] = true
		default:
			return fmt.Errorf("-scale-sources: %q is not csv or grist", f)
		}
	}
	dir, err := os.MkdirTemp("", "kgsync-bench-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := buildKgsync(dir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if list != "" {
		for _, d := range dims {
			if err := scaleTables(w, bin, self, list, use, reps, d); err != nil {
				return err
			}
		}
	}
	if err := startup(w, bin, corpusDir, reps); err != nil {
		return err
	}
	if err := chunkHistogram(w, corpusDir); err != nil {
		return err
	}
	return peersReport(w, bin, corpusDir, peers, dims)
}

// scaleTables prints the scale tables of the sources in use at the row
// counts of list (comma-separated), the hashing embedder at dims
// dimensions; bin is the kgsync binary, bench this one.
func scaleTables(w io.Writer, bin, bench, list string, use map[string]bool, reps, dims int) error {
	fmt.Fprintf(w, "## Scale: whole processes (kgsync sync --json), SQLite state, CYPHERL sink, hashing embedder (%d dims)\n\n", dims)
	fmt.Fprintf(w, "The corpus HS table repeated with suffixed keys (`parent` a reference, `description` embeddable: 6,747 distinct texts); rows/s = table rows / wall time; peak RSS = the child's ru_maxrss. \"read\" is a process that only reads the table through its source. The first sync of a table of up to %d rows runs -reps times, each from an empty state, and its row is the run of the median time; every other row is one run.\n", firstRunsUpTo)
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-scale: %q is not a row count", f)
		}
		if use["csv"] {
			if _, err := scaleCSV(w, bin, bench, n, reps, dims); err != nil {
				return fmt.Errorf("scale csv %d rows, %d dims: %w", n, dims, err)
			}
		}
		if use["grist"] {
			if _, err := scaleGrist(w, bin, bench, n, reps, dims); err != nil {
				return fmt.Errorf("scale grist %d rows, %d dims: %w", n, dims, err)
			}
		}
	}
	return nil
}

// childRead is the hidden -child-read mode: read a table through its
// source to the end and exit (the floor of a sync).
func childRead(spec string) error {
	kind, arg, _ := strings.Cut(spec, ":")
	var src sources.Source
	var err error
	switch kind {
	case "csv":
		src, err = csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{hsTable(arg)}}, nil)
	case "grist":
		src, err = grist.New("grist", grist.Config{Server: arg, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
			Tables: []string{"HSCodes"}, KeyColumns: map[string]string{"HSCodes": "hscode"}}, nil)
	default:
		return fmt.Errorf("-child-read %q: csv:FILE or grist:URL", spec)
	}
	if err != nil {
		return err
	}
	n := 0
	for page, err := range src.Read(context.Background(), "") {
		if err != nil {
			return err
		}
		n += len(page.Records)
	}
	fmt.Println(n)
	return nil
}

func hsTable(path string) csvtable.Table {
	return csvtable.Table{Path: path, Table: "hs_code", Key: "hscode", Columns: map[string]string{"parent": "ref:hs_code", "level": "int"}}
}

// scaledRows is the corpus HS table repeated to n rows: copy k > 0
// suffixes hscode and parent with "~k", so keys stay unique and each
// copy's parent links stay inside it (descriptions repeat: 6,747 distinct
// texts to embed).
func scaledRows(n int) ([]string, [][]string, error) {
	shared, err := corpus.Locate()
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(filepath.Join(shared, "corpus", "tables", "harmonized-system.csv"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, err
	}
	header, data := all[0], all[1:]
	rows := make([][]string, n)
	for i := range n {
		k := i / len(data)
		rec := slices.Clone(data[i%len(data)])
		if k > 0 {
			sfx := "~" + strconv.Itoa(k)
			rec[1] += sfx // hscode
			rec[3] += sfx // parent
		}
		rows[i] = rec
	}
	return header, rows, nil
}

func writeRows(path string, header []string, rows [][]string, crlf bool) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.UseCRLF = crlf
	if err := w.Write(header); err != nil {
		return err
	}
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// editEvery100th changes the description of every 100th row (round r).
func editEvery100th(rows [][]string, round int) {
	for i := 0; i < len(rows); i += 100 {
		rows[i][2] = fmt.Sprintf("%s (edited in round %d)", rows[i][2], round)
	}
}

const tablesModel = `    model:
      anchors:
        - name: cn_code
          table: %s
          attributes: [{name: description, embeddable: true}]
          links: [{name: PARENT, column: parent, to: cn_code}]
`

// csvConfig is the configuration of the scale table's CSV pipeline: state
// and CYPHERL output under dir, the hashing embedder at dims dimensions.
func csvConfig(dir, file string, dims int) string {
	return fmt.Sprintf(`state: {driver: sqlite, path: %s}
sink: {type: cypherl, cypherl: {dir: %s}}
embedder: {provider: hashing, dimensions: %d}
pipelines:
  - name: tables
    sources:
      - name: csv
        csv:
          tables:
            - {path: %s, table: hs_code, key: hscode, columns: {parent: "ref:hs_code", level: int}}
`+tablesModel, filepath.Join(dir, "state.db"), filepath.Join(dir, "cypherl"), dims, file, "hs_code")
}

// gristConfig is csvConfig for the Grist test server at url; fullEvery
// lists every row on each run (full_every).
func gristConfig(dir, url string, fullEvery bool, dims int) string {
	fe := ""
	if fullEvery {
		fe = "\n          full_every: 1ns"
	}
	return fmt.Sprintf(`state: {driver: sqlite, path: %s}
sink: {type: cypherl, cypherl: {dir: %s}}
embedder: {provider: hashing, dimensions: %d}
pipelines:
  - name: tables
    sources:
      - name: grist
        grist:
          server: %s
          doc_id: %s
          api_key: %s
          tables: [HSCodes]
          key_columns: {HSCodes: hscode}%s
`+tablesModel, filepath.Join(dir, "state.db"), filepath.Join(dir, "cypherl"), dims, url, gristtest.DocID, gristtest.APIKey, fe, "HSCodes")
}

// syncResult is what `kgsync sync --json` prints for a run.
type syncResult struct {
	Records struct {
		Read, New, Changed, Deleted, Skipped int
	} `json:"records"`
	Chunks struct {
		Embedded int `json:"embedded"`
	} `json:"chunks"`
}

func kgsyncSync(bin, config string) (proc, syncResult, error) {
	p, err := runProc(bin, "sync", "--json", "--config", config)
	var r syncResult
	if err == nil {
		err = json.Unmarshal(bytes.TrimSpace(p.out), &r)
	}
	return p, r, err
}

// phaseRow is one line of a scale table.
type phaseRow struct {
	name string
	p    proc
	r    syncResult
	read bool // a pure read (no counts)
}

func printScale(w io.Writer, title string, rows int, phases []phaseRow) {
	fmt.Fprintf(w, "\n### %s, %d rows\n\n", title, rows)
	fmt.Fprintln(w, "| phase | time | rows/s | peak RSS | × read (time / RSS) | records read / new / changed | texts embedded |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	var read proc
	for _, ph := range phases {
		if ph.read {
			read = ph.p
		}
	}
	for _, ph := range phases {
		rps := float64(rows) / ph.p.elapsed.Seconds()
		ratio := ""
		if read.elapsed > 0 {
			ratio = fmt.Sprintf("%.2f / %.2f", ph.p.elapsed.Seconds()/read.elapsed.Seconds(), float64(ph.p.rssKB)/float64(read.rssKB))
		}
		counts := fmt.Sprintf("%d / %d / %d", ph.r.Records.Read, ph.r.Records.New, ph.r.Records.Changed)
		if ph.read {
			counts = fmt.Sprintf("%d", rows)
		}
		fmt.Fprintf(w, "| %s | %.2f s | %.0f | %.1f MB | %s | %s | %d |\n", ph.name, ph.p.elapsed.Seconds(), rps,
			float64(ph.p.rssKB)/1024, ratio, counts, ph.r.Chunks.Embedded)
	}
}

// scaleTable writes the scaled HS table of n rows as hs.csv in a new
// temporary folder (remove it when done) and returns its path and rows.
func scaleTable(n int) (dir, file string, header []string, rows [][]string, err error) {
	if dir, err = os.MkdirTemp("", "kgsync-scale-"); err != nil {
		return "", "", nil, nil, err
	}
	if header, rows, err = scaledRows(n); err == nil {
		file = filepath.Join(dir, "hs.csv")
		err = writeRows(file, header, rows, false)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", "", nil, nil, err
	}
	return dir, file, header, rows, nil
}

// phases records a scale table's rows: the source's own read, then one
// whole-process sync per phase.
type phases struct {
	bin  string
	rows []phaseRow
}

// read runs the bench's -child-read of spec as the table's first row.
func (ps *phases) read(bench, spec string) error {
	p, err := runProc(bench, "-child-read", spec)
	if err != nil {
		return err
	}
	ps.rows = append(ps.rows, phaseRow{name: "read (the source alone)", p: p, read: true})
	return nil
}

// sync runs kgsync sync on config as the phase name.
func (ps *phases) sync(name, config string) error {
	p, r, err := kgsyncSync(ps.bin, config)
	if err != nil {
		return err
	}
	ps.rows = append(ps.rows, phaseRow{name: name, p: p, r: r})
	return nil
}

// firstRunsUpTo is the largest table whose first sync is run reps times:
// a first sync of 10k rows takes half a second, within the swings of a
// shared machine, so one run says little; at 1M rows one run takes most
// of a minute and its swings are a small part of it.
const firstRunsUpTo = 100_000

// first runs the first sync on config runs times, each from an empty
// state and sink (reset removes them), and records the run of the median
// time (its peak RSS too) as the phase; the times of all runs go into the
// phase name.
func (ps *phases) first(config string, runs int, reset func() error) error {
	type run struct {
		p proc
		r syncResult
	}
	var all []run
	for i := range max(runs, 1) {
		if i > 0 {
			if err := reset(); err != nil {
				return err
			}
		}
		p, r, err := kgsyncSync(ps.bin, config)
		if err != nil {
			return err
		}
		all = append(all, run{p, r})
	}
	name := "first sync"
	if len(all) > 1 {
		times := make([]string, len(all))
		for i, a := range all {
			times[i] = fmt.Sprintf("%.2f", a.p.elapsed.Seconds())
		}
		name = fmt.Sprintf("first sync (median of %d: %s s)", len(all), strings.Join(times, ", "))
		slices.SortFunc(all, func(a, b run) int { return cmp.Compare(a.p.elapsed, b.p.elapsed) })
	}
	m := all[(len(all)-1)/2]
	ps.rows = append(ps.rows, phaseRow{name: name, p: m.p, r: m.r})
	return nil
}

// resetState removes the state database (and its WAL files) and the
// CYPHERL folder under dir: the next sync is a first sync again.
func resetState(dir string) func() error {
	return func() error {
		for _, f := range []string{"state.db", "state.db-wal", "state.db-shm"} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return os.RemoveAll(filepath.Join(dir, "cypherl"))
	}
}

// firstRuns is how many first syncs of an n-row table to run.
func firstRuns(n, reps int) int {
	if n <= firstRunsUpTo {
		return reps
	}
	return 1
}

// scaleCSV measures the CSV phases at n rows and dims dimensions; the
// first sync runs reps times up to firstRunsUpTo rows.
func scaleCSV(w io.Writer, bin, bench string, n, reps, dims int) ([]phaseRow, error) {
	dir, file, header, rows, err := scaleTable(n)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "kgsync.yaml")
	if err := os.WriteFile(cfg, []byte(csvConfig(dir, file, dims)), 0o644); err != nil {
		return nil, err
	}
	ps := &phases{bin: bin}
	if err := ps.read(bench, "csv:"+file); err != nil {
		return nil, err
	}
	step := func(name string) error { return ps.sync(name, cfg) }
	if err := ps.first(cfg, firstRuns(n, reps), resetState(dir)); err != nil {
		return nil, err
	}
	if err := step("no-op (file unchanged)"); err != nil {
		return nil, err
	}
	// The same rows written again with CRLF line ends: parsed once and
	// found to say what they said (the source's content digest), nothing
	// listed or changed.
	if err := writeRows(file, header, rows, true); err != nil {
		return nil, err
	}
	if err := step("no-op (same rows re-exported)"); err != nil {
		return nil, err
	}
	editEvery100th(rows, 1)
	if err := writeRows(file, header, rows, true); err != nil {
		return nil, err
	}
	if err := step("1 % changed"); err != nil {
		return nil, err
	}
	printScale(w, "CSV table", n, ps.rows)
	return ps.rows, nil
}

// benchTB is the testing.TB the Grist test server asks for, outside a
// test: failures end the bench.
type benchTB struct {
	testing.TB
	cleanups []func()
}

func (b *benchTB) Helper()                           {}
func (b *benchTB) Cleanup(f func())                  { b.cleanups = append(b.cleanups, f) }
func (b *benchTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (b *benchTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (b *benchTB) Logf(string, ...any)               {}
func (b *benchTB) close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

// scaleGrist measures the Grist phases at n rows, the test server running
// in this process (not counted in the children's memory); the first sync
// runs reps times up to firstRunsUpTo rows.
func scaleGrist(w io.Writer, bin, bench string, n, reps, dims int) ([]phaseRow, error) {
	dir, file, _, _, err := scaleTable(n)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tb := &benchTB{}
	defer tb.close()
	srv := gristtest.New(tb)
	srv.LoadCSV("HSCodes", file, map[string]string{"parent": "Ref:HSCodes/hscode", "level": "Int"})
	cfg, full := filepath.Join(dir, "kgsync.yaml"), filepath.Join(dir, "full.yaml")
	if err := os.WriteFile(cfg, []byte(gristConfig(dir, srv.URL, false, dims)), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(full, []byte(gristConfig(dir, srv.URL, true, dims)), 0o644); err != nil {
		return nil, err
	}
	ps := &phases{bin: bin}
	if err := ps.read(bench, "grist:"+srv.URL); err != nil {
		return nil, err
	}
	step := ps.sync
	if err := ps.first(cfg, firstRuns(n, reps), resetState(dir)); err != nil {
		return nil, err
	}
	if err := step("no-op (/states: unchanged)", cfg); err != nil {
		return nil, err
	}
	if err := step("no-op, full listing (full_every)", full); err != nil {
		return nil, err
	}
	updates := map[int64]map[string]any{}
	for id := int64(1); id <= int64(n); id += 100 {
		updates[id] = map[string]any{"description": fmt.Sprintf("edited in round 1, row %d", id)}
	}
	srv.UpdateRows("HSCodes", updates)
	if err := step("1 % changed (/compare)", cfg); err != nil {
		return nil, err
	}
	printScale(w, "Grist test server", n, ps.rows)
	return ps.rows, nil
}

// startup measures the whole-process no-op of the 4 documents.
func startup(w io.Writer, bin, corpusDir string, reps int) error {
	dir, err := os.MkdirTemp("", "kgsync-startup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	docsDir := filepath.Join(dir, "docs")
	if err := copyDocs(corpusDir, docsDir, fourDocs); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "kgsync.yaml")
	if err := os.WriteFile(cfg, []byte(docsConfig(dir, docsDir, config.DefaultHashingDimensions)), 0o644); err != nil {
		return err
	}
	if _, _, err := kgsyncSync(bin, cfg); err != nil {
		return err
	}
	var ts []time.Duration
	var rss int64
	for range max(reps, 3) {
		p, r, err := kgsyncSync(bin, cfg)
		if err != nil {
			return err
		}
		if r.Records.New+r.Records.Changed != 0 {
			return fmt.Errorf("startup: the no-op changed records")
		}
		ts = append(ts, p.elapsed)
		rss = max(rss, p.rssKB)
	}
	// The floor: read and hash the files.
	start := time.Now()
	for _, n := range fourDocs {
		b, err := os.ReadFile(filepath.Join(docsDir, n))
		if err != nil {
			return err
		}
		_ = xxhash.Sum64(b)
	}
	floor := time.Since(start)
	fmt.Fprintf(w, "\n## Start-up: no-op `kgsync sync` of the 4 documents, whole process\n\n")
	fmt.Fprintln(w, "| median of runs | peak RSS | reading and hashing the files in this process |")
	fmt.Fprintln(w, "| --- | --- | --- |")
	fmt.Fprintf(w, "| %.1f ms | %.1f MB | %.1f ms |\n", 1000*median(ts).Seconds(), float64(rss)/1024, 1000*floor.Seconds())
	return nil
}

// fourDocs are the documents the peer comparison uses.
var fourDocs = []string{"rfc7231.txt", "constitutionrf.txt", "go_spec.html", "spdx-2.3-package-information.md"}

func copyDocs(from, to string, names []string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		b, err := readCorpus(from, n)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, n), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// docsConfig is the configuration of a files pipeline over docsDir at
// 512 tokens / 64 overlap: state and CYPHERL output under dir, the
// hashing embedder at dims dimensions.
func docsConfig(dir, docsDir string, dims int) string {
	return fmt.Sprintf(`state: {driver: sqlite, path: %s}
sink: {type: cypherl, cypherl: {dir: %s}}
embedder: {provider: hashing, dimensions: %d}
chunking: {max_tokens: 512, overlap_tokens: 64}
pipelines:
  - name: docs
    sources:
      - name: docs
        files: {root: %s}
`, filepath.Join(dir, "state.db"), filepath.Join(dir, "cypherl"), dims, docsDir)
}

// peerScenarios are the steps of ../shared/bench/peers/edit.py, in order,
// after the first index ("s1") and a no-op ("s2").
var peerScenarios = []struct{ step, what string }{
	{"s1", "first index"},
	{"s2", "no-op"},
	{"s3", "one sentence inserted (rfc7231)"},
	{"s4", "one word changed (constitution)"},
	{"s5", "a paragraph near the top (spdx)"},
	{"s6", "go_spec.html renamed"},
	{"s7", "spdx removed"},
	{"s8a", "rfc7231 copied"},
	{"s8b", "the original rfc7231 removed"},
}

// peersReport runs the scenarios for kgsync (once per vector length of
// dims), LangChain (index(), incremental cleanup) and LlamaIndex
// (IngestionPipeline, upserts), each on its own copy of the 4 documents,
// and prints the texts each embedded and each whole process's wall time.
func peersReport(w io.Writer, bin, corpusDir, peers string, dims []int) error {
	dir, err := os.MkdirTemp("", "kgsync-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	type system struct {
		name string
		docs string
		run  func() (int, time.Duration, error)
	}
	var systems []*system
	add := func(name string, run func(docs string) (int, time.Duration, error)) error {
		s := &system{name: name, docs: filepath.Join(dir, strconv.Itoa(len(systems)), "docs")}
		if err := copyDocs(corpusDir, s.docs, fourDocs); err != nil {
			return err
		}
		s.run = func() (int, time.Duration, error) { return run(s.docs) }
		systems = append(systems, s)
		return nil
	}
	for _, d := range dims {
		name := "kgsync"
		if len(dims) > 1 {
			name = fmt.Sprintf("kgsync (%d dims)", d)
		}
		if err := add(name, func(docs string) (int, time.Duration, error) {
			at := filepath.Dir(docs)
			cfg := filepath.Join(at, "kgsync.yaml")
			if err := os.WriteFile(cfg, []byte(docsConfig(at, docs, d)), 0o644); err != nil {
				return 0, 0, err
			}
			p, r, err := kgsyncSync(bin, cfg)
			return r.Chunks.Embedded, p.elapsed, err
		}); err != nil {
			return err
		}
	}
	peer := func(env []string, script string, args ...string) func(docs string) (int, time.Duration, error) {
		return func(docs string) (int, time.Duration, error) {
			state := filepath.Join(filepath.Dir(docs), "state")
			p, err := runProcEnv(env, "node", append([]string{filepath.Join(peers, script), state, docs}, args...)...)
			if err != nil {
				return 0, 0, err
			}
			lines := bytes.Split(bytes.TrimSpace(p.out), []byte("\n"))
			var r struct {
				EmbedTexts int `json:"embedTexts"`
			}
			err = json.Unmarshal(lines[len(lines)-1], &r)
			return r.EmbedTexts, p.elapsed, err
		}
	}
	if peers != "" {
		// index()'s batchSize above the corpus's chunk count: with its
		// default (100) a no-op re-embeds 284 texts (the README).
		if err := add("LangChain.js", peer([]string{"LC_BATCH=1000"}, "lc.mjs", "incremental")); err != nil {
			return err
		}
		if err := add("LlamaIndex.TS", peer(nil, "li.mjs", "upserts")); err != nil {
			return err
		}
	}
	texts := make([][]string, len(systems))
	times := make([][]string, len(systems))
	for _, sc := range peerScenarios {
		for i, s := range systems {
			if sc.step != "s1" && sc.step != "s2" {
				if _, err := runProc("python3", filepath.Join(peersDir(peers), "edit.py"), s.docs, sc.step); err != nil {
					return err
				}
			}
			n, d, err := s.run()
			if err != nil {
				return fmt.Errorf("%s %s: %w", s.name, sc.step, err)
			}
			texts[i] = append(texts[i], strconv.Itoa(n))
			times[i] = append(times[i], fmt.Sprintf("%.2f s", d.Seconds()))
		}
	}
	names := make([]string, len(systems))
	for i, s := range systems {
		names[i] = s.name
	}
	fmt.Fprintf(w, "\n## Texts embedded per scenario: the 4 documents, 512 tokens / 64 overlap\n\n")
	scenarioTable(w, names, texts)
	fmt.Fprintf(w, "\n## Wall time per scenario: whole processes (kgsync sync; node and its imports for the peers)\n\n")
	scenarioTable(w, names, times)
	return nil
}

// scenarioTable prints one row per peer scenario and one column per
// system: cells[system][scenario].
func scenarioTable(w io.Writer, systems []string, cells [][]string) {
	fmt.Fprint(w, "| scenario |")
	for _, s := range systems {
		fmt.Fprintf(w, " %s |", s)
	}
	fmt.Fprint(w, "\n| --- |")
	for range systems {
		fmt.Fprint(w, " --- |")
	}
	fmt.Fprintln(w)
	for j, sc := range peerScenarios {
		fmt.Fprintf(w, "| %s: %s |", sc.step, sc.what)
		for i := range systems {
			fmt.Fprintf(w, " %s |", cells[i][j])
		}
		fmt.Fprintln(w)
	}
}

// peersDir is where edit.py is: the prepared peers folder, or the shared
// harnesses when only kgsync runs.
func peersDir(peers string) string {
	if peers != "" {
		return peers
	}
	if shared, err := corpus.Locate(); err == nil {
		if _, err := os.Stat(filepath.Join(shared, "bench", "peers", "edit.py")); err == nil {
			return filepath.Join(shared, "bench", "peers")
		}
	}
	return filepath.Join("..", "shared", "bench", "peers")
}

// chunkHistogram prints how many chunks of the 4 documents fall in each
// size range, at 512 tokens / 64 overlap (Chunk.Tokens: the whole text,
// overlap included).
func chunkHistogram(w io.Writer, corpusDir string) error {
	tok, err := chunker.NewTokenizer("cl100k_base")
	if err != nil {
		return err
	}
	bounds := []int{64, 128, 256, 384, 512}
	counts := make([]int, len(bounds)+1)
	total, sum := 0, 0
	for _, n := range fourDocs {
		b, err := readCorpus(corpusDir, n)
		if err != nil {
			return err
		}
		format, _ := chunker.FormatForPath(n)
		root, err := chunker.Parse(format, b)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		chunks, err := chunker.Split("docs:"+n, root, chunker.Options{MaxTokens: 512, OverlapTokens: 64, Tokenizer: tok})
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		for _, c := range chunks {
			i := 0
			for i < len(bounds) && c.Tokens >= bounds[i] {
				i++
			}
			counts[i]++
			total++
			sum += c.Tokens
		}
	}
	fmt.Fprintf(w, "\n## Chunk sizes: the 4 documents at 512 tokens / 64 overlap (%d chunks, mean %d tokens)\n\n", total, sum/max(total, 1))
	fmt.Fprintln(w, "| tokens | < 64 | 64–127 | 128–255 | 256–383 | 384–511 | ≥ 512 (with overlap) |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	fmt.Fprint(w, "| chunks |")
	for _, c := range counts {
		fmt.Fprintf(w, " %d |", c)
	}
	fmt.Fprintln(w)
	return nil
}
