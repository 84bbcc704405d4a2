package daemon

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kgsync/kgsync/state"
)

// EvalSummary is the outcome of a pipeline's golden set, as `kgsync eval`
// measures it for hybrid search (retrieval.EvalReport).
type EvalSummary struct {
	Questions int
	// RecallAt1 and RecallAtK are hybrid recall@1 and @k.
	RecallAt1, RecallAtK float64
	// Sufficiency is the share of answerable questions whose expanded
	// context holds every answer and required-context element;
	// ContextTokens its median size.
	Sufficiency, ContextTokens float64
	// Declined is the share of unanswerable questions the relevance floor
	// declined, Lost the share of answerable ones.
	Declined, Lost float64
	// Unresolved counts golden addresses that name no element.
	Unresolved int
}

// EvalFunc runs a pipeline's golden set. ErrEvalSkipped means the
// pipeline has none.
type EvalFunc func(ctx context.Context, pipeline string) (EvalSummary, error)

// ErrEvalSkipped is returned by an EvalFunc for a pipeline without a golden
// set; the daemon then exports no kgsync_eval_* metrics for it.
var ErrEvalSkipped = errors.New("eval skipped")

// evalMetrics are the kgsync_eval_* gauges, by pipeline.
type evalMetrics struct {
	recall1, recallK, sufficiency, tokens, declined, lost, unresolved, questions, last *prometheus.GaugeVec
}

func newEvalMetrics(reg prometheus.Registerer) (*evalMetrics, error) {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kgsync", Name: "eval_" + name, Help: help}, []string{"pipeline"})
	}
	m := &evalMetrics{
		recall1:     gauge("recall_at_1", "Hybrid search recall@1 on the pipeline's golden set, after its last run that changed something."),
		recallK:     gauge("recall_at_k", "Hybrid search recall@k (search.k) on the golden set."),
		sufficiency: gauge("context_sufficiency", "Share of answerable golden questions whose expanded context holds the answer and its required context."),
		tokens:      gauge("context_tokens", "Median size of the expanded contexts, tokens."),
		declined:    gauge("unanswerable_declined", "Share of unanswerable golden questions the relevance floor declined."),
		lost:        gauge("answerable_declined", "Share of answerable golden questions the relevance floor declined."),
		unresolved:  gauge("unresolved_addresses", "Golden addresses that name no element of the graph (a chunking or parsing regression)."),
		questions:   gauge("questions", "Questions in the golden set."),
		last:        gauge("last_timestamp_seconds", "Unix time the golden set was last run."),
	}
	for _, g := range []prometheus.Collector{m.recall1, m.recallK, m.sufficiency, m.tokens, m.declined, m.lost, m.unresolved, m.questions, m.last} {
		if err := reg.Register(g); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// evalAfter runs the pipeline's golden set after a successful run that
// changed the graph (or the first run since start), in the pipeline's
// job, under its lock, so it never overlaps the pipeline's next run.
func (d *Daemon) evalAfter(ctx context.Context, w *worker, run state.Run) {
	if d.eval == nil {
		return
	}
	c := run.Counts
	w.mu.Lock()
	first := !w.evaluated
	w.evaluated = true
	w.mu.Unlock()
	if !first && c.RecordsNew+c.RecordsChanged+c.RecordsDeleted == 0 {
		return
	}
	log := d.log.With(slog.String("pipeline", w.name))
	s, err := d.eval(ctx, w.name)
	switch {
	case errors.Is(err, ErrEvalSkipped):
		return
	case err != nil:
		log.Warn("golden set eval failed", slog.String("err", err.Error()))
		return
	}
	m := d.evalM
	m.recall1.WithLabelValues(w.name).Set(s.RecallAt1)
	m.recallK.WithLabelValues(w.name).Set(s.RecallAtK)
	m.sufficiency.WithLabelValues(w.name).Set(s.Sufficiency)
	m.tokens.WithLabelValues(w.name).Set(s.ContextTokens)
	m.declined.WithLabelValues(w.name).Set(s.Declined)
	m.lost.WithLabelValues(w.name).Set(s.Lost)
	m.unresolved.WithLabelValues(w.name).Set(float64(s.Unresolved))
	m.questions.WithLabelValues(w.name).Set(float64(s.Questions))
	m.last.WithLabelValues(w.name).Set(float64(d.clock.Now().UnixNano()) / 1e9)
	log.Info("golden set evaluated", slog.Int("questions", s.Questions), slog.Float64("recall_at_k", s.RecallAtK),
		slog.Float64("sufficiency", s.Sufficiency), slog.Int("unresolved", s.Unresolved))
}
