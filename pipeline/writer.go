package pipeline

import (
	"cmp"
	"context"
	"sync"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/state"
)

// writerDepth is how many prepared batches the writer holds at most: one
// in each of its two stages and the next one, handed over before the
// writer is done, so that a batch that takes longer to prepare than the
// one before it took to write does not leave the writer idle (and the
// other way round).
const writerDepth = 3

// writerBytes bounds the batches the writer holds in bytes
// (prepared.size) as well: Pipeline.WriterBytes, its default when 0. A
// batch is handed over while those in flight hold less, and one batch
// always can be. A first sync's batches stay within the default
// writerDepth at a time; a chunking change, whose batches are cut by the
// chunks they write (Pipeline.BatchChunkBytes) and come more often, has
// fewer in flight instead of holding more.
func (p *Pipeline) writerBytes() int {
	return cmp.Or(p.WriterBytes, config.DefaultPipelineWriterBytes)
}

// batchWriter writes prepared batches in two goroutines of its own while
// the run reads, hashes, maps and embeds the next ones. The state stage
// stores a batch's new vectors in the embedding cache and commits its new
// state with its intent (commitIntent); the sink stage then writes it to
// the sink (writeIntended), while the state stage commits the next batch.
// A commit acknowledges only batches the sink stage has written, so state
// never holds a write the sink has not acknowledged without its intent. A
// batch without an intent (nothing to write, or one written before its
// commit) waits for the sink stage to finish the batches before it, and
// the state stage writes and commits it itself (writeBatch).
//
// Up to writerDepth batches are handed over and not yet written, so the
// halves of a run share the machine's cores. Batches are written, and
// their results reported, in the order they are submitted. After a
// failure nothing more is committed or written: a batch committed before
// an earlier batch's write failed, and not written, has its records
// marked as interrupted, as a failed write does; a failure of the state
// stage lets the batches committed before it be written. The stages alone
// touch the runner's writing state while a batch is in flight (intent
// numbers and ensured labels on one stage at a time; acknowledgements
// under ackMu); the run touches it, and the counts, only after wait.
type batchWriter struct {
	r        *runner
	ctx      context.Context
	inflight []*prepared // handed over, oldest first
	bytes    int         // prepared.size of the batches in flight
	jobs     chan *prepared
	results  chan writeResult
	err      error // the first failed write; later submits return it

	mu     sync.Mutex
	failed error // the first failure of either stage
}

type writeResult struct {
	st  sink.Stats
	err error
}

// sinkJob is a batch the state stage hands to the sink stage.
type sinkJob struct {
	p       *prepared
	write   bool // committed with its intent: the sink stage writes it
	in      state.Intent
	cursors map[string]string
	// res is the batch's result when it is not the sink stage's to write
	// (done by the state stage, or failed there).
	res  writeResult
	done chan struct{} // closed when the sink stage is through with it
}

// fail records the first failure of a stage and returns the one recorded.
func (w *batchWriter) fail(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = err
	}
	return w.failed
}

// failure is the first failure of either stage, nil while none.
func (w *batchWriter) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// startWriter starts a run's batch writer; stop it with stop.
func (r *runner) startWriter(ctx context.Context) *batchWriter {
	w := &batchWriter{r: r, ctx: ctx, jobs: make(chan *prepared, writerDepth), results: make(chan writeResult, writerDepth)}
	toSink := make(chan *sinkJob, 1)
	go w.stateStage(toSink)
	go w.sinkStage(toSink)
	return w
}

// stateStage is the state stage's goroutine (see batchWriter). A failure
// here (storing vectors, rendering, the sink's schema, the commit) stops
// the batches after it at once, but reaches the writer's failure only
// when the sink stage comes to it: the batches committed before it are
// still written.
func (w *batchWriter) stateStage(toSink chan<- *sinkJob) {
	r, ctx := w.r, w.ctx
	defer close(toSink)
	var last *sinkJob // the job handed to the sink stage last
	hand := func(j *sinkJob) {
		j.done = make(chan struct{})
		toSink <- j
		last = j
	}
	// drain waits until the sink stage is through with every batch handed
	// to it.
	drain := func() {
		if last != nil {
			<-last.done
		}
	}
	var own error // this stage's first failure
	// stop hands p over failed with err, which stops the batches after it.
	stop := func(p *prepared, st sink.Stats, err error) {
		own = err
		hand(&sinkJob{p: p, res: writeResult{st, err}})
	}
	for p := range w.jobs {
		// A batch's held vectors are stored first, even after a failed
		// write: the next run reuses them instead of computing them
		// again.
		perr := r.storeHeld(ctx, p.puts)
		if failed := cmp.Or(w.failure(), own); failed != nil {
			hand(&sinkJob{p: p, res: writeResult{err: failed}})
			continue
		}
		if perr != nil {
			stop(p, sink.Stats{}, perr)
			continue
		}
		// Rendered before anything is committed: a batch the sink cannot
		// render fails as it would have on the run's side.
		if err := r.render(p); err != nil {
			stop(p, sink.Stats{}, err)
			continue
		}
		// direct: a batch without an intent, written before its commit.
		direct := p.intent == nil || p.b.Len() == 0
		var st sink.Stats
		if direct || r.needsSchema(p.anchors) {
			// The sink's schema is ensured before the batch's commit, and
			// a batch without an intent is written before its commit:
			// either after the batches before it.
			drain()
			if failed := w.failure(); failed != nil {
				hand(&sinkJob{p: p, res: writeResult{err: failed}})
				continue
			}
			var err error
			if st, err = r.ensureSchema(ctx, p.anchors); err != nil {
				stop(p, st, err)
				continue
			}
		}
		if direct {
			ws, err := r.writeBatch(ctx, p.b, p.rendered, p.commit, p.intent)
			if err != nil {
				stop(p, st.Add(ws), err)
			} else {
				hand(&sinkJob{p: p, res: writeResult{st: st.Add(ws)}})
			}
			continue
		}
		in, cursors, err := r.commitIntent(ctx, p.commit, p.intent)
		if err != nil {
			stop(p, st, err)
			continue
		}
		hand(&sinkJob{p: p, write: true, in: in, cursors: cursors, res: writeResult{st: st}})
	}
}

// sinkStage is the sink stage's goroutine (see batchWriter). It records
// every failure, its own and the state stage's, in batch order.
func (w *batchWriter) sinkStage(jobs <-chan *sinkJob) {
	r, ctx := w.r, w.ctx
	defer close(w.results)
	for j := range jobs {
		res := j.res
		switch {
		case !j.write:
			if res.err != nil {
				w.fail(res.err)
			}
		case w.failure() != nil:
			// Committed before an earlier batch's write failed, and not
			// written.
			r.interrupted(ctx, j.in)
			res.err = w.failure()
		default:
			ws, err := r.writeIntended(ctx, j.p.b, j.p.rendered, j.in, j.cursors)
			res.st, res.err = res.st.Add(ws), err
			if err != nil {
				w.fail(err)
			}
		}
		w.results <- res
		close(j.done)
	}
}

// submit hands a batch to the writer once fewer than writerDepth are
// handed over and not written; it returns the error of a failed write
// (and writes nothing more then).
//
// A sink that renders batches apart from writing them (renderer) has the
// batch rendered by whichever side would otherwise wait: the run renders
// it here when the writer still holds writerDepth batches (it would wait
// for the writer anyway), and hands it over unrendered when the writer
// has room, which then renders it before writing. So rendering, a fifth
// of a table batch's CPU, goes to the idle side: when preparing is the
// slower half, it moves to the writer; when writing is, it stays here.
func (w *batchWriter) submit(p *prepared) error {
	w.collect()
	if len(w.inflight) >= writerDepth && w.err == nil {
		if err := w.r.render(p); err != nil {
			return err
		}
	}
	for bound := w.r.p.writerBytes(); len(w.inflight) >= writerDepth || (len(w.inflight) > 0 && w.bytes+p.size > bound); {
		w.waitOne()
	}
	if w.err != nil {
		return w.err
	}
	w.jobs <- p
	w.inflight = append(w.inflight, p)
	w.addBytes(p.size)
	return nil
}

// addBytes adds n to the bytes in flight and reports them
// (Pipeline.InFlightFunc).
func (w *batchWriter) addBytes(n int) {
	w.bytes += n
	if f := w.r.p.InFlightFunc; f != nil && n != 0 {
		f(w.bytes)
	}
}

// render renders p's batch when the sink renders batches apart from
// writing them (renderer) and p is not rendered yet.
func (r *runner) render(p *prepared) error {
	rs, ok := r.p.Sink.(renderer)
	if !ok || p.rendered != nil || p.b.Len() == 0 {
		return nil
	}
	var err error
	p.rendered, err = rs.Render(p.b)
	return err
}

// collect takes in the batches the writer has finished, without waiting:
// a batch handed over is in flight until it is taken in, written or not.
func (w *batchWriter) collect() {
	for len(w.inflight) > 0 {
		select {
		case res := <-w.results:
			w.done(res)
		default:
			return
		}
	}
}

// waitOne waits for the oldest batch in flight and takes it in (done).
func (w *batchWriter) waitOne() { w.done(<-w.results) }

// done takes in the oldest batch in flight, written with res: counts it,
// reports progress and publishes its documents to the review.
func (w *batchWriter) done(res writeResult) {
	p := w.inflight[0]
	w.inflight[0] = nil
	w.inflight = w.inflight[1:]
	w.addBytes(-p.size)
	w.r.addSinkStats(res.st)
	if res.err != nil && w.err == nil {
		w.err = res.err
	}
	if res.err == nil {
		w.r.progress()
		w.r.publishReview(w.ctx, p.outs)
	}
}

// wait waits for every batch in flight; it returns the error of the first
// failed write.
func (w *batchWriter) wait() error {
	for len(w.inflight) > 0 {
		w.waitOne()
	}
	return w.err
}

// stop waits for the batches in flight and ends the goroutine.
func (w *batchWriter) stop() error {
	err := w.wait()
	close(w.jobs)
	for range w.results {
	}
	return err
}
