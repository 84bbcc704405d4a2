package pipeline

import (
	"context"

	"github.com/kgsync/kgsync/sink"
)

// batchWriter writes prepared batches to the sink and state in a goroutine
// of its own while the run reads, hashes, maps and embeds the next batch:
// one batch is written while the next is prepared, so the two halves of a
// run share the machine's cores. Batches are written in the order they are
// submitted. The goroutine alone touches the runner's writing state
// (acknowledgements, intent numbers, ensured labels) while a batch is in
// flight; the run touches it, and the counts, only after wait.
type batchWriter struct {
	r        *runner
	ctx      context.Context
	inflight *prepared
	jobs     chan *prepared
	results  chan writeResult
	busy     bool
	err      error // the first failed write; later submits return it
}

type writeResult struct {
	st  sink.Stats
	err error
}

// startWriter starts a run's batch writer; stop it with stop.
func (r *runner) startWriter(ctx context.Context) *batchWriter {
	w := &batchWriter{r: r, ctx: ctx, jobs: make(chan *prepared), results: make(chan writeResult)}
	go func() {
		for p := range w.jobs {
			st, err := r.ensureSchema(ctx, p.anchors)
			if err == nil {
				var ws sink.Stats
				ws, err = r.writeBatch(ctx, p.b, p.rendered, p.commit, p.intent)
				st = sink.Stats{Statements: st.Statements + ws.Statements, Batches: st.Batches + ws.Batches, Retries: st.Retries + ws.Retries}
			}
			w.results <- writeResult{st, err}
		}
		close(w.results)
	}()
	return w
}

// submit hands a batch to the writer, after the previous one was written;
// it returns the error of a failed write (and writes nothing more then).
func (w *batchWriter) submit(p *prepared) error {
	if err := w.wait(); err != nil {
		return err
	}
	w.jobs <- p
	w.busy, w.inflight = true, p
	return nil
}

// wait waits for the batch in flight, counts it, reports progress and
// publishes its documents to the review; it returns the error of the first
// failed write.
func (w *batchWriter) wait() error {
	if w.busy {
		res := <-w.results
		w.busy = false
		w.r.addSinkStats(res.st)
		if res.err != nil && w.err == nil {
			w.err = res.err
		}
		if res.err == nil {
			w.r.progress()
			w.r.publishReview(w.ctx, w.inflight.outs)
		}
		w.inflight = nil
	}
	return w.err
}

// stop waits for the batch in flight and ends the goroutine.
func (w *batchWriter) stop() error {
	err := w.wait()
	close(w.jobs)
	for range w.results {
	}
	return err
}
