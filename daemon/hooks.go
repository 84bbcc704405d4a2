package daemon

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sync"

	"github.com/kgsync/kgsync/state"
)

// RowSink receives the rows of Grist webhook deliveries for a pipeline's
// table, once per debounce window, before the run they trigger is queued:
// the hook for a source that applies delivered rows directly. Rows are
// Grist's raw row objects ({"id": 7, "manualSort": 7, "<colId>": value,
// ...}; numbers as json.Number), one per row id (the last copy delivered
// wins), by id. Deliveries can repeat and arrive out of order, so rows are
// hints to re-read, not the truth; Grist never reports deletions.
type RowSink interface {
	ApplyRows(ctx context.Context, pipeline, table string, rows []map[string]any) error
}

// RowBuffer is the default RowSink: it keeps the last delivered copy of
// each row by (pipeline, table, row id) until Take. Safe for concurrent
// use.
type RowBuffer struct {
	mu   sync.Mutex
	rows map[[2]string]map[int64]map[string]any
}

// NewRowBuffer returns an empty RowBuffer.
func NewRowBuffer() *RowBuffer {
	return &RowBuffer{rows: map[[2]string]map[int64]map[string]any{}}
}

// ApplyRows keeps rows, replacing earlier copies of the same row id.
func (b *RowBuffer) ApplyRows(_ context.Context, pipeline, table string, rows []map[string]any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := [2]string{pipeline, table}
	m := b.rows[k]
	if m == nil {
		m = map[int64]map[string]any{}
		b.rows[k] = m
	}
	for _, r := range rows {
		if id, ok := rowID(r); ok {
			m[id] = r
		}
	}
	return nil
}

// IDs returns the row ids kept for (pipeline, table), ascending.
func (b *RowBuffer) IDs(pipeline, table string) []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.rows[[2]string{pipeline, table}]))
}

// Take returns and forgets the rows kept for (pipeline, table), by id.
func (b *RowBuffer) Take(pipeline, table string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := [2]string{pipeline, table}
	m := b.rows[k]
	delete(b.rows, k)
	out := make([]map[string]any, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[id])
	}
	return out
}

// rowID returns a row's positive integer "id".
func rowID(r map[string]any) (int64, bool) {
	n, ok := r["id"].(json.Number)
	if !ok {
		return 0, false
	}
	id, err := n.Int64()
	return id, err == nil && id > 0
}

// collector gathers one pipeline's accepted deliveries until its debounce
// window ends.
type collector struct {
	signal chan struct{} // capacity 1
	mu     sync.Mutex
	rows   map[string]map[int64]map[string]any // table → id → row
}

func newCollector() *collector {
	return &collector{signal: make(chan struct{}, 1), rows: map[string]map[int64]map[string]any{}}
}

// add keeps rows (by id, the last wins) and reports whether a flush was
// already waiting (the delivery is coalesced into it).
func (c *collector) add(table string, rows map[int64]map[string]any) (coalesced bool) {
	c.mu.Lock()
	coalesced = len(c.rows) > 0
	m := c.rows[table]
	if m == nil {
		m = map[int64]map[string]any{}
		c.rows[table] = m
	}
	maps.Copy(m, rows)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
	return coalesced
}

// take returns and clears the gathered rows.
func (c *collector) take() map[string]map[int64]map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.rows
	c.rows = map[string]map[int64]map[string]any{}
	return out
}

// collect waits for deliveries of w's pipeline, lets the debounce window
// pass, hands the rows to the RowSink and queues one webhook trigger. When
// ctx is done it flushes what it holds at once (the trigger stays in state
// for the next replica or start) and returns.
func (d *Daemon) collect(ctx context.Context, w *worker) {
	for {
		select {
		case <-ctx.Done():
			d.flush(context.WithoutCancel(ctx), w)
			return
		case <-w.hooks.signal:
		}
		if d.cfg.Debounce > 0 {
			t := d.clock.NewTimer(d.cfg.Debounce)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C():
			}
		}
		d.flush(context.WithoutCancel(ctx), w)
	}
}

// flush applies gathered rows and queues the trigger.
func (d *Daemon) flush(ctx context.Context, w *worker) {
	tables := w.hooks.take()
	if len(tables) == 0 {
		return
	}
	for _, table := range slices.Sorted(maps.Keys(tables)) {
		m := tables[table]
		rows := make([]map[string]any, 0, len(m))
		for _, id := range slices.Sorted(maps.Keys(m)) {
			rows = append(rows, m[id])
		}
		if err := d.rowSink.ApplyRows(ctx, w.name, table, rows); err != nil {
			d.m.rowSinkErrors.WithLabelValues(w.name).Inc()
			d.log.Error("apply webhook rows", slog.String("pipeline", w.name), slog.String("table", table),
				slog.Int("rows", len(rows)), slog.String("err", err.Error()))
		}
	}
	if _, err := d.enqueue(ctx, w, ModeIncremental, state.TriggerWebhook); err != nil {
		d.log.Error("queue webhook run", slog.String("pipeline", w.name), slog.String("err", err.Error()))
	}
}

// tablePattern is a Grist table id.
var tablePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// authorized reports whether header, the request's Authorization, carries
// secret, either whole or after "Bearer ", comparing in constant time.
func authorized(header, secret string) bool {
	if secret == "" || header == "" {
		return false
	}
	whole := subtle.ConstantTimeCompare([]byte(header), []byte(secret))
	bearer := 0
	if len(header) > 7 && (header[:7] == "Bearer " || header[:7] == "bearer ") {
		bearer = subtle.ConstantTimeCompare([]byte(header[7:]), []byte(secret))
	}
	return whole|bearer == 1
}

// handleHook serves POST /hooks/grist/{pipeline}[/{table}]: a Grist
// webhook delivery, a JSON array of row objects. It answers 202 once the
// rows are gathered; the run follows asynchronously.
func (d *Daemon) handleHook(rw http.ResponseWriter, r *http.Request) {
	name, table := r.PathValue("pipeline"), r.PathValue("table")
	w, ok := d.workers[name]
	if !ok {
		d.m.deliveries.WithLabelValues("", deliveryUnknown).Inc()
		writeError(rw, http.StatusNotFound, "no pipeline %q", name)
		return
	}
	reject := func(outcome string, code int, format string, args ...any) {
		d.m.deliveries.WithLabelValues(name, outcome).Inc()
		d.log.Warn("webhook delivery rejected", slog.String("pipeline", name), slog.String("table", table),
			slog.String("outcome", outcome), slog.String("remote", r.RemoteAddr))
		writeError(rw, code, format, args...)
	}
	if d.cfg.WebhookSecret == "" {
		reject(deliveryDisabled, http.StatusForbidden, "webhooks are disabled: daemon.webhook_secret is not set")
		return
	}
	if !authorized(r.Header.Get("Authorization"), d.cfg.WebhookSecret) {
		reject(deliveryUnauthorized, http.StatusUnauthorized, "missing or wrong Authorization header")
		return
	}
	if table != "" && !tablePattern.MatchString(table) {
		reject(deliveryMalformed, http.StatusBadRequest, "table %q is not a Grist table id", table)
		return
	}
	if d.isStopping() {
		reject(deliveryStopping, http.StatusServiceUnavailable, "daemon is shutting down")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, d.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		reject(deliveryTooLarge, http.StatusRequestEntityTooLarge, "body larger than %d bytes (daemon.max_body_bytes)", d.cfg.MaxBodyBytes)
		return
	}
	if err != nil {
		reject(deliveryMalformed, http.StatusBadRequest, "read body: %v", err)
		return
	}
	rows, err := parseRows(body)
	if err != nil {
		reject(deliveryMalformed, http.StatusBadRequest, "%v", err)
		return
	}
	if w.hooks.add(table, rows) {
		d.m.coalesced.WithLabelValues(name).Inc()
	}
	d.m.deliveries.WithLabelValues(name, deliveryAccepted).Inc()
	d.m.webhookRows.WithLabelValues(name).Add(float64(len(rows)))
	writeJSON(rw, http.StatusAccepted, map[string]any{"pipeline": name, "table": table, "rows": len(rows)})
}

// parseRows decodes a delivery body: a JSON array of objects, each with a
// positive integer "id". A row id seen twice keeps its last copy. Errors
// name the offending element.
func parseRows(body []byte) (map[int64]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw []map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("body is not a JSON array of row objects: %w", err)
	}
	if dec.More() {
		return nil, errors.New("body has data after the JSON array")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("body has data after the JSON array")
	}
	out := make(map[int64]map[string]any, len(raw))
	for i, row := range raw {
		if row == nil {
			return nil, fmt.Errorf("row [%d] is not an object", i)
		}
		id, ok := rowID(row)
		if !ok {
			return nil, fmt.Errorf("row [%d] has no positive integer \"id\"", i)
		}
		out[id] = row
	}
	return out, nil
}
