package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kgsync/kgsync/state"
)

// metrics are the daemon's Prometheus metrics. Labels are bounded: pipeline
// is always a configured pipeline name ("" for a request naming none),
// outcome, class and reason come from fixed sets.
type metrics struct {
	runs          *prometheus.CounterVec   // pipeline, outcome: succeeded, partial, failed, cancelled
	quarantined   *prometheus.GaugeVec     // pipeline
	runDuration   *prometheus.HistogramVec // pipeline
	running       *prometheus.GaugeVec     // pipeline
	records       *prometheus.CounterVec   // pipeline, class: read, new, changed, unchanged, deleted, skipped
	chunks        *prometheus.CounterVec   // pipeline, outcome: embedded, cached, deleted
	sinkStmts     *prometheus.CounterVec   // pipeline
	sinkBatches   *prometheus.CounterVec   // pipeline
	sinkRetries   *prometheus.CounterVec   // pipeline
	embedRequests *prometheus.CounterVec   // pipeline
	embedErrors   *prometheus.CounterVec   // pipeline
	lastSuccess   *prometheus.GaugeVec     // pipeline
	triggers      *prometheus.CounterVec   // pipeline, reason
	lockBusy      *prometheus.CounterVec   // pipeline
	deliveries    *prometheus.CounterVec   // pipeline, outcome
	webhookRows   *prometheus.CounterVec   // pipeline
	coalesced     *prometheus.CounterVec   // pipeline
	rowSinkErrors *prometheus.CounterVec   // pipeline
	rowsDropped   *prometheus.CounterVec   // pipeline
	rowsBuffered  *prometheus.GaugeVec     // pipeline
	bytesBuffered *prometheus.GaugeVec     // pipeline
	jobs          *prometheus.GaugeVec     // pipeline, state: available, scheduled, retryable, running
	jobLatency    *prometheus.HistogramVec // pipeline
	coalescedJobs *prometheus.CounterVec   // pipeline
	takeovers     *prometheus.CounterVec   // pipeline
	reviewRows    *prometheus.CounterVec   // pipeline, kind: read, expert_changes, written
	reviewFlagged *prometheus.CounterVec   // pipeline
	reviewNeeds   *prometheus.GaugeVec     // pipeline
	inflight      *prometheus.GaugeVec     // pipeline
	batchesCut    *prometheus.CounterVec   // pipeline
}

// Webhook delivery outcomes (kgsync_webhook_deliveries_total{outcome}).
const (
	deliveryAccepted     = "accepted"
	deliveryUnauthorized = "unauthorized"
	deliveryDisabled     = "disabled"
	deliveryTooLarge     = "too_large"
	deliveryMalformed    = "malformed"
	deliveryUnknown      = "unknown_pipeline"
	deliveryUnknownTable = "unknown_table"
	deliveryStopping     = "stopping"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kgsync", Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kgsync", Name: name, Help: help}, labels)
	}
	m := &metrics{
		runs:        counter("runs_total", "Finished runs by outcome (succeeded, partial, failed, cancelled).", "pipeline", "outcome"),
		quarantined: gauge("quarantined_records", "Records in quarantine (a run could not read, parse or embed them; they keep their last good version and are retried every run), as of the last run or start-up.", "pipeline"),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kgsync", Name: "run_duration_seconds", Help: "Duration of runs, seconds.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 16), // 50 ms .. ~27 min
		}, []string{"pipeline"}),
		running:       gauge("run_in_progress", "1 while this replica runs the pipeline.", "pipeline"),
		records:       counter("records_total", "Records by class (read, new, changed, unchanged, deleted, skipped).", "pipeline", "class"),
		chunks:        counter("chunks_total", "Chunks by outcome: embedded (embedding requested), cached (vector reused from the cache), deleted.", "pipeline", "outcome"),
		sinkStmts:     counter("sink_statements_total", "Statements sent to the sink.", "pipeline"),
		sinkBatches:   counter("sink_batches_total", "Batches (transactions) sent to the sink.", "pipeline"),
		sinkRetries:   counter("sink_retries_total", "Sink transactions retried after a transient error (write conflict, timeout, lost connection).", "pipeline"),
		embedRequests: counter("embed_requests_total", "Requests to the embedding provider (each embeds up to its call size of texts).", "pipeline"),
		embedErrors:   counter("embed_errors_total", "Embedding steps that failed after the provider's own retries (each fails its run).", "pipeline"),
		lastSuccess:   gauge("last_success_timestamp_seconds", "Unix time of the last successful run's end.", "pipeline"),
		triggers:      counter("triggers_total", "Triggers queued, by reason (cron, webhook, manual).", "pipeline", "reason"),
		lockBusy:      counter("lock_busy_total", "Times a job on this replica found the pipeline locked by another process and snoozed.", "pipeline"),
		deliveries:    counter("webhook_deliveries_total", "Webhook deliveries by outcome (accepted, unauthorized, disabled, too_large, malformed, unknown_pipeline, unknown_table, stopping).", "pipeline", "outcome"),
		webhookRows:   counter("webhook_rows_total", "Distinct rows received in accepted webhook deliveries.", "pipeline"),
		coalesced:     counter("webhook_coalesced_total", "Accepted deliveries merged into a trigger already waiting in the debounce window.", "pipeline"),
		rowSinkErrors: counter("webhook_row_sink_errors_total", "Errors of the row sink receiving webhook rows.", "pipeline"),
		rowsDropped:   counter("webhook_rows_dropped_total", "Webhook rows not kept because the pipeline's buffer was full (daemon.webhook_buffer_rows or webhook_buffer_bytes); their run still reads every change from Grist.", "pipeline"),
		rowsBuffered:  gauge("webhook_rows_buffered", "Webhook rows kept for the pipeline until the run they trigger succeeds.", "pipeline"),
		bytesBuffered: gauge("webhook_buffered_bytes", "Estimated bytes of the webhook rows kept for the pipeline (daemon.webhook_buffer_bytes bounds them).", "pipeline"),
		jobs:          gauge("jobs", "Run jobs in River by state (available, scheduled, retryable, running): the queue depth, as of the last poll.", "pipeline", "state"),
		jobLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kgsync", Name: "job_latency_seconds", Help: "Time from a run job's insertion to its run's start (lock taken), seconds.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12), // 1 ms .. ~70 min
		}, []string{"pipeline"}),
		coalescedJobs: counter("triggers_coalesced_total", "Triggers served by a job already queued for the pipeline (River unique jobs), including ones that replaced it with a stronger mode.", "pipeline"),
		takeovers:     counter("job_takeovers_total", "Jobs left running by a replica that died, queued again by this replica.", "pipeline"),
		reviewRows:    counter("review_rows_total", "Rows of the expert review's Elements table in Grist: read back, with expert changes taken, written (added, updated, deleted).", "pipeline", "kind"),
		reviewFlagged: counter("review_conflicts_total", "Review elements newly flagged needs_review: a correction whose parsed text changed, an element with expert input gone from its document.", "pipeline"),
		reviewNeeds:   gauge("review_needs_review", "Review elements needing review at the end of the last run (conflicts, elements gone, expert flags).", "pipeline"),
		inflight:      gauge("writer_inflight_bytes", "Bytes of the prepared batches (properties and vectors) a running run's writer holds and has not written yet (pipelines[].writer_bytes bounds them); 0 between runs.", "pipeline"),
		batchesCut:    counter("batches_cut_total", "Batches ended early because their chunks reached pipelines[].batch_chunk_bytes; their other records went into the next batch.", "pipeline"),
	}
	for _, c := range []prometheus.Collector{m.runs, m.quarantined, m.runDuration, m.running, m.records, m.chunks, m.sinkStmts,
		m.sinkBatches, m.sinkRetries, m.embedRequests, m.embedErrors, m.lastSuccess, m.triggers, m.lockBusy, m.deliveries, m.webhookRows, m.coalesced, m.rowSinkErrors, m.rowsDropped, m.rowsBuffered, m.bytesBuffered,
		m.jobs, m.jobLatency, m.coalescedJobs, m.takeovers, m.reviewRows, m.reviewFlagged, m.reviewNeeds, m.inflight, m.batchesCut} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// initPipeline creates every series of a pipeline at 0, so that
// dashboards and alerts see them from start-up, before the first run
// (Prometheus practice: export a labelled series before it happens).
func (m *metrics) initPipeline(name string) {
	for _, o := range []string{"succeeded", "partial", "failed", "cancelled"} {
		m.runs.WithLabelValues(name, o)
	}
	m.runDuration.WithLabelValues(name)
	m.running.WithLabelValues(name)
	m.quarantined.WithLabelValues(name)
	for _, c := range []string{"read", "new", "changed", "unchanged", "deleted", "skipped"} {
		m.records.WithLabelValues(name, c)
	}
	for _, o := range []string{"embedded", "cached", "deleted"} {
		m.chunks.WithLabelValues(name, o)
	}
	for _, v := range []*prometheus.CounterVec{m.sinkStmts, m.sinkBatches, m.sinkRetries, m.embedRequests, m.embedErrors,
		m.lockBusy, m.webhookRows, m.coalesced, m.rowSinkErrors, m.rowsDropped, m.coalescedJobs, m.takeovers, m.batchesCut} {
		v.WithLabelValues(name)
	}
	m.lastSuccess.WithLabelValues(name)
	m.rowsBuffered.WithLabelValues(name)
	m.bytesBuffered.WithLabelValues(name)
	m.inflight.WithLabelValues(name)
	m.jobLatency.WithLabelValues(name)
	for _, r := range []string{"cron", "webhook", "manual"} {
		m.triggers.WithLabelValues(name, r)
	}
	for _, o := range []string{deliveryAccepted, deliveryUnauthorized, deliveryDisabled, deliveryTooLarge, deliveryMalformed,
		deliveryUnknownTable, deliveryStopping} {
		m.deliveries.WithLabelValues(name, o)
	}
}

// observeRun records a finished run's counts.
func (m *metrics) observeRun(name, outcome string, run state.Run, seconds float64) {
	if outcome == "succeeded" && run.Status == state.StatusPartial {
		outcome = "partial"
	}
	if run.ID != 0 && outcome != "cancelled" {
		m.quarantined.WithLabelValues(name).Set(float64(run.Counts.Quarantined))
	}
	m.runs.WithLabelValues(name, outcome).Inc()
	m.runDuration.WithLabelValues(name).Observe(seconds)
	c := run.Counts
	for class, n := range map[string]int{"read": c.RecordsRead, "new": c.RecordsNew, "changed": c.RecordsChanged,
		"unchanged": c.RecordsUnchanged, "deleted": c.RecordsDeleted, "skipped": c.RecordsSkipped} {
		m.records.WithLabelValues(name, class).Add(float64(n))
	}
	m.chunks.WithLabelValues(name, "embedded").Add(float64(c.ChunksEmbedded))
	m.chunks.WithLabelValues(name, "cached").Add(float64(c.ChunksReused))
	m.chunks.WithLabelValues(name, "deleted").Add(float64(c.ChunksDeleted))
	m.sinkStmts.WithLabelValues(name).Add(float64(c.SinkStatements))
	m.sinkBatches.WithLabelValues(name).Add(float64(c.SinkBatches))
	m.batchesCut.WithLabelValues(name).Add(float64(c.BatchesCut))
	m.sinkRetries.WithLabelValues(name).Add(float64(c.SinkRetries))
	m.embedRequests.WithLabelValues(name).Add(float64(c.EmbedRequests))
	m.embedErrors.WithLabelValues(name).Add(float64(c.EmbedErrors))
	if c.ReviewRequests > 0 || c.ReviewNeedsReview > 0 {
		m.reviewRows.WithLabelValues(name, "read").Add(float64(c.ReviewRowsRead))
		m.reviewRows.WithLabelValues(name, "expert_changes").Add(float64(c.ReviewExpertChanges))
		m.reviewRows.WithLabelValues(name, "written").Add(float64(c.ReviewRowsWritten))
		m.reviewFlagged.WithLabelValues(name).Add(float64(c.ReviewConflicts))
		m.reviewNeeds.WithLabelValues(name).Set(float64(c.ReviewNeedsReview))
	}
}

// InFlight sets kgsync_writer_inflight_bytes{pipeline=name} to bytes: what
// the writer of the pipeline's running run holds and has not written yet
// (pipeline.Pipeline.InFlightFunc). A Runner calls it during the runs the
// daemon asked of it, with the name it was given; the daemon sets the
// gauge to 0 when a run returns. Safe for concurrent use.
func (d *Daemon) InFlight(name string, bytes int) {
	d.m.inflight.WithLabelValues(name).Set(float64(bytes))
}
