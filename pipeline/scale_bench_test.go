package pipeline_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
	"github.com/kgsync/kgsync/sources/httpapi"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/statetest"
)

// Scale benchmarks: the whole pipeline (SQLite state, CYPHERL sink in a
// temporary directory, hashing embedder, default batch size 64) over a
// Grist document whose HSCodes table is scaled to 10,000 and 100,000 rows
// and over an HTTP API listing 100,000 records. Each phase runs once per
// benchmark iteration (use -benchtime=1x); docs/performance.md gives
// the command ("Other measurements").
//
// Peak memory is the largest runtime.MemStats.HeapInuse sampled every
// 10 ms during a phase, minus HeapInuse after a GC just before it: the test
// servers (the Grist document, 2 copies of every row) live in the same
// process, and the difference leaves them out.

// heapSampler samples HeapInuse every 10 ms while a phase runs.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
	base uint64
}

func startSampler() *heapSampler {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := &heapSampler{stop: make(chan struct{}), done: make(chan struct{}), base: ms.HeapInuse}
	s.peak.Store(ms.HeapInuse)
	go func() {
		defer close(s.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > s.peak.Load() {
					s.peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	return s
}

// finish stops sampling and returns the peak above the baseline, MiB.
func (s *heapSampler) finish() float64 {
	close(s.stop)
	<-s.done
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	peak := max(s.peak.Load(), ms.HeapInuse)
	return float64(peak-s.base) / (1 << 20)
}

// phase is one measured step.
type phase struct {
	name    string
	seconds float64
	peakMiB float64
	counts  state.Counts
}

// measure runs f under the sampler.
func measure(name string, f func() state.Counts) phase {
	s := startSampler()
	start := time.Now()
	c := f()
	return phase{name: name, seconds: time.Since(start).Seconds(), peakMiB: s.finish(), counts: c}
}

// report logs the phases as a table and reports each as metrics.
func report(b *testing.B, rows int, phases []phase) {
	b.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n| phase (%d rows) | time | peak heap above baseline | records read | changed+new | embed requests | chunks embedded | sink statements |\n", rows)
	for _, p := range phases {
		c := p.counts
		fmt.Fprintf(&sb, "| %s | %.2fs | %.1f MiB | %d | %d | %d | %d | %d |\n", p.name, p.seconds, p.peakMiB,
			c.RecordsRead, c.RecordsChanged+c.RecordsNew, c.EmbedRequests, c.ChunksEmbedded, c.SinkStatements)
		b.ReportMetric(p.seconds, p.name+"-s")
		b.ReportMetric(p.peakMiB, p.name+"-MiB")
	}
	b.Log(sb.String())
}

// scalePipeline wires a pipeline over srcs into store and sk.
func scalePipeline(b *testing.B, store state.Store, sk sink.Sink, model *config.Model, srcs ...sources.Source) *pipeline.Pipeline {
	b.Helper()
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(b, err)
	return &pipeline.Pipeline{
		Name: "scale", Sources: srcs, Embedder: hashing.New("hashing-v1", 32), Sink: sk, Store: store,
		Chunking:  chunker.Options{MaxTokens: 256, OverlapTokens: 32, Tokenizer: tok},
		BatchSize: benchBatch(), MaxDeleteRatio: 0.3, Fingerprint: 1, Model: pipeline.NewModel(model),
	}
}

// scaleState opens SQLite state in a temporary directory
// (statetest.SQLite).
func scaleState(b *testing.B) state.Store { return statetest.SQLite(b) }

// scaleStore is scaleState and a CYPHERL sink in a temporary directory.
func scaleStore(b *testing.B) (state.Store, sink.Sink) {
	b.Helper()
	store := scaleState(b)
	sk, err := cypherl.New(b.TempDir(), "scale", sink.Memgraph)
	require.NoError(b, err)
	b.Cleanup(func() { _ = sk.Close(context.Background()) })
	return store, sk
}

func runScale(b *testing.B, p *pipeline.Pipeline) state.Counts {
	b.Helper()
	res, err := p.Run(b.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(b, err)
	return res.Run.Counts
}

// drain reads src to the end from cursor "" and returns the records read.
func drain(b *testing.B, src sources.Source) state.Counts {
	b.Helper()
	n := 0
	for page, err := range src.Read(b.Context(), "") {
		require.NoError(b, err)
		n += len(page.Records)
	}
	return state.Counts{RecordsRead: n}
}

// scaledHSCodes writes the corpus HS table repeated until it has n rows:
// copy k > 0 suffixes hscode and parent with "~k", so keys stay unique
// and each copy's parent links stay inside the copy.
func scaledHSCodes(b *testing.B, n int) string {
	b.Helper()
	f, err := os.Open(filepath.Join(tablesDir(b), "harmonized-system.csv"))
	require.NoError(b, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(b, err)
	header, data := rows[0], rows[1:]
	code, parent := -1, -1
	for i, h := range header {
		switch strings.TrimPrefix(h, "\ufeff") {
		case "hscode":
			code = i
		case "parent":
			parent = i
		}
	}
	require.True(b, code >= 0 && parent >= 0)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	require.NoError(b, w.Write(header))
	for i := 0; i < n; i++ {
		k := i / len(data)
		rec := append([]string(nil), data[i%len(data)]...)
		if k > 0 {
			sfx := "~" + strconv.Itoa(k)
			rec[code] += sfx
			rec[parent] += sfx
		}
		require.NoError(b, w.Write(rec))
	}
	w.Flush()
	path := filepath.Join(b.TempDir(), "hscodes.csv")
	require.NoError(b, os.WriteFile(path, buf.Bytes(), 0o600))
	return path
}

var hsModel = &config.Model{Anchors: []config.Anchor{{
	Name: "cn_code", Table: "HSCodes", Attributes: []config.Attribute{{Name: "description", Embeddable: true}},
	Links: []config.Link{{Name: "PARENT", Column: "parent", To: "cn_code"}},
}}}

// BenchmarkScaleGrist syncs a Grist document whose HSCodes table has 10,000
// or 100,000 rows: a bare full read (the floor), the first sync, a no-op
// re-sync (Grist's /states reports no change), a no-op re-sync that lists
// every row (full_every elapsed), 1 % of rows edited read through /compare,
// and another 1 % edited with a full listing.
func BenchmarkScaleGrist(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("rows="+strconv.Itoa(n), func(b *testing.B) {
			srv := gristtest.New(b)
			srv.LoadCSV("HSCodes", scaledHSCodes(b, n), map[string]string{"parent": "Ref:HSCodes/hscode", "level": "Int"})
			newSource := func(fullEvery time.Duration) sources.Source {
				src, err := grist.New("grist", grist.Config{Server: srv.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
					Tables: []string{"HSCodes"}, KeyColumns: map[string]string{"HSCodes": "hscode"}, FullEvery: fullEvery,
					RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}, nil)
				require.NoError(b, err)
				return src
			}
			edit := func(round int) {
				updates := map[int64]map[string]any{}
				for id := int64(1); id <= int64(n); id += 100 {
					updates[id] = map[string]any{"description": fmt.Sprintf("edited in round %d, row %d", round, id)}
				}
				srv.UpdateRows("HSCodes", updates)
			}
			round := 0
			for b.Loop() {
				round += 2
				store, sk := scaleStore(b)
				inc := scalePipeline(b, store, sk, hsModel, newSource(0))
				full := scalePipeline(b, store, sk, hsModel, newSource(time.Nanosecond))
				var phases []phase
				phases = append(phases, measure("read", func() state.Counts { return drain(b, newSource(0)) }))
				phases = append(phases, measure("first", func() state.Counts { return runScale(b, inc) }))
				phases = append(phases, measure("noop", func() state.Counts { return runScale(b, inc) }))
				phases = append(phases, measure("noop-full", func() state.Counts { return runScale(b, full) }))
				edit(round - 1)
				phases = append(phases, measure("1pct", func() state.Counts { return runScale(b, inc) }))
				edit(round)
				phases = append(phases, measure("1pct-full", func() state.Counts { return runScale(b, full) }))
				require.Equal(b, n, phases[1].counts.RecordsNew)
				require.Zero(b, phases[2].counts.SinkStatements)
				require.Zero(b, phases[3].counts.EmbedRequests)
				require.Equal(b, n, phases[3].counts.RecordsUnchanged)
				require.Equal(b, (n+99)/100, phases[4].counts.RecordsChanged)
				require.Equal(b, (n+99)/100, phases[5].counts.RecordsChanged)
				report(b, n, phases)
			}
		})
	}
}

// ticketServer serves n tickets as a cursor-paginated JSON API, 1,000 per
// page, encoding each page on request (the records are not kept, so the
// server adds nothing to the heap between requests). After bump, every
// 100th ticket has a new revision.
type ticketServer struct {
	*httptest.Server
	n   int
	rev atomic.Int64
}

func newTicketServer(b *testing.B, n int) *ticketServer {
	ts := &ticketServer{n: n}
	var pool sync.Pool
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const per = 1000
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		buf, _ := pool.Get().(*bytes.Buffer)
		if buf == nil {
			buf = new(bytes.Buffer)
		}
		buf.Reset()
		rev := ts.rev.Load()
		buf.WriteString(`{"data":[`)
		for i := from; i < min(from+per, n); i++ {
			if i > from {
				buf.WriteByte(',')
			}
			r := int64(0)
			if i%100 == 0 {
				r = rev
			}
			fmt.Fprintf(buf, `{"id":%d,"subject":"Ticket %d: printer on floor %d","status":"open","requester_id":%d,"rev":%d,`+
				`"body":"# Ticket %d\n\nThe printer on floor %d jams when printing double-sided pages. Revision %d.\n\n`+
				`## Steps\n\n1. Open the tray.\n2. Print a test page.\n3. Observe the jam near roller %d."}`,
				i, i, i%40, i%997, r, i, i%40, r, i%7)
		}
		buf.WriteString(`],"meta":{"next_cursor":`)
		if from+per < n {
			buf.WriteString(strconv.Itoa(from + per))
		} else {
			buf.WriteString("null")
		}
		buf.WriteString("}}")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(buf.Bytes())
		pool.Put(buf)
	}))
	b.Cleanup(ts.Close)
	return ts
}

// BenchmarkScaleHTTP syncs 10,000 or 100,000 records of an HTTP API (each
// a short Markdown document of two sections): a bare read, the first sync,
// a no-op re-sync (every page read and every record hashed), and one with
// 1 % of records changed.
func BenchmarkScaleHTTP(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("records="+strconv.Itoa(n), func(b *testing.B) { benchScaleHTTP(b, n) })
	}
}

func benchScaleHTTP(b *testing.B, n int) {
	ts := newTicketServer(b, n)
	newSource := func() sources.Source {
		src, err := httpapi.New("tickets", httpapi.Config{
			URL: ts.URL + "/api/tickets", Records: ".data[]", Key: ".id | tostring", Anchor: "ticket",
			Pagination: httpapi.Pagination{Style: httpapi.StyleCursor, Param: "cursor", Next: ".meta.next_cursor"},
			Attributes: map[string]string{"subject": ".subject", "status": ".status", "rev": ".rev"},
			Links:      map[string]httpapi.LinkConfig{"REQUESTED_BY": {Anchor: "user", Expr: ".requester_id | tostring"}},
			Document:   &httpapi.DocumentConfig{Format: "md", Content: ".body"},
		}, nil)
		require.NoError(b, err)
		return src
	}
	for b.Loop() {
		ts.rev.Store(0)
		store, sk := scaleStore(b)
		p := scalePipeline(b, store, sk, nil, newSource())
		var phases []phase
		phases = append(phases, measure("read", func() state.Counts { return drain(b, newSource()) }))
		phases = append(phases, measure("first", func() state.Counts { return runScale(b, p) }))
		phases = append(phases, measure("noop", func() state.Counts { return runScale(b, p) }))
		ts.rev.Store(1)
		phases = append(phases, measure("1pct", func() state.Counts { return runScale(b, p) }))
		require.Equal(b, n, phases[1].counts.RecordsNew)
		require.Equal(b, n, phases[2].counts.RecordsUnchanged)
		require.Zero(b, phases[2].counts.EmbedRequests)
		require.Equal(b, n/100, phases[3].counts.RecordsChanged)
		report(b, n, phases)
	}
}
