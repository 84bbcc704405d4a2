package pipeline

import (
	"context"

	"github.com/kgsync/kgsync/sink"
)

// writerDepth is how many prepared batches the writer holds at most: the
// one it writes and the next one, handed over before the writer is done,
// so that a batch that takes longer to prepare than the one before it took
// to write does not leave the writer idle (and the other way round).
const writerDepth = 2

// batchWriter writes prepared batches (their new vectors to the embedding
// cache, then the sink and state) in a goroutine of its own while the run
// reads, hashes, maps and embeds the next ones:
// up to writerDepth batches are handed over and not yet written, so the two
// halves of a run share the machine's cores. Batches are written in the
// order they are submitted. The goroutine alone touches the runner's
// writing state (acknowledgements, intent numbers, ensured labels) while a
// batch is in flight; the run touches it, and the counts, only after wait.
type batchWriter struct {
	r        *runner
	ctx      context.Context
	inflight []*prepared // handed over, oldest first
	jobs     chan *prepared
	results  chan writeResult
	err      error // the first failed write; later submits return it
}

type writeResult struct {
	st  sink.Stats
	err error
}

// startWriter starts a run's batch writer; stop it with stop.
func (r *runner) startWriter(ctx context.Context) *batchWriter {
	w := &batchWriter{r: r, ctx: ctx, jobs: make(chan *prepared, writerDepth), results: make(chan writeResult, writerDepth)}
	go func() {
		var failed error // after a failed write, later batches are not written
		for p := range w.jobs {
			// A batch's held vectors are stored first, even after a failed
			// write: the next run reuses them instead of computing them
			// again.
			perr := r.storeHeld(ctx, p.puts)
			if failed != nil {
				w.results <- writeResult{err: failed}
				continue
			}
			if perr != nil {
				failed = perr
				w.results <- writeResult{err: perr}
				continue
			}
			st, err := r.ensureSchema(ctx, p.anchors)
			if err == nil {
				// Rendered before anything is committed: a batch the sink
				// cannot render fails as it would have on the run's side.
				err = r.render(p)
			}
			if err == nil {
				var ws sink.Stats
				ws, err = r.writeBatch(ctx, p.b, p.rendered, p.commit, p.intent)
				st = sink.Stats{Statements: st.Statements + ws.Statements, Batches: st.Batches + ws.Batches, Retries: st.Retries + ws.Retries}
			}
			failed = err
			w.results <- writeResult{st, err}
		}
		close(w.results)
	}()
	return w
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
	for len(w.inflight) >= writerDepth {
		w.waitOne()
	}
	if w.err != nil {
		return w.err
	}
	w.jobs <- p
	w.inflight = append(w.inflight, p)
	return nil
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
