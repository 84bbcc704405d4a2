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
	"strings"
	"sync"

	"github.com/kgsync/kgsync/config"
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
// each row by (pipeline, table, row id), within its limits per pipeline,
// rows and their RowBytes (a row beyond them is dropped and counted: the
// run reads every change from Grist anyway), until Release says the run that consumed them
// succeeded. Safe for concurrent use.
type RowBuffer struct {
	mu     sync.Mutex
	limits rowLimits // of each pipeline's rows
	pipes  map[string]*bufferedRows
}

// rowLimits bound the webhook rows kept (a RowBuffer's per pipeline, a
// collector's in its debounce window): rows, how many, and bytes, their
// RowBytes.
type rowLimits struct {
	rows  int
	bytes int64
}

// newRowLimits returns rowLimits of rows and bytes, each <= 0 replaced by
// its default (daemon.webhook_buffer_rows, daemon.webhook_buffer_bytes).
func newRowLimits(rows int, bytes int64) rowLimits {
	if rows <= 0 {
		rows = config.DefaultDaemonWebhookBufferRows
	}
	if bytes <= 0 {
		bytes = config.DefaultDaemonWebhookBufferBytes
	}
	return rowLimits{rows: rows, bytes: bytes}
}

// rowCount is how many rows are kept and their RowBytes.
type rowCount struct {
	n     int
	bytes int64
}

// admit counts a row of size RowBytes, replacing a kept one of old
// RowBytes when had, and reports true; it counts nothing and reports false
// when the row does not fit l: a new id beyond l.rows, or bytes beyond
// l.bytes.
func (c *rowCount) admit(l rowLimits, had bool, old, size int64) bool {
	if !had && c.n >= l.rows || c.bytes-old+size > l.bytes {
		return false
	}
	if !had {
		c.n++
	}
	c.bytes += size - old
	return true
}

// bufferedRows are one pipeline's rows, each with the generation it was
// kept in (Mark starts a new one).
type bufferedRows struct {
	tables  map[string]map[int64]bufferedRow
	count   rowCount
	gen     uint64
	dropped int64
}

type bufferedRow struct {
	row   map[string]any
	gen   uint64
	bytes int64
}

// NewRowBuffer returns an empty RowBuffer keeping at most
// config.DefaultDaemonWebhookBufferRows rows per pipeline.
func NewRowBuffer() *RowBuffer { return NewBoundedRowBuffer(config.DefaultDaemonWebhookBufferRows) }

// NewBoundedRowBuffer returns an empty RowBuffer keeping at most max rows
// per pipeline (max <= 0: the default).
func NewBoundedRowBuffer(max int) *RowBuffer {
	return &RowBuffer{limits: newRowLimits(max, 0), pipes: map[string]*bufferedRows{}}
}

// WithByteLimit sets the bound of a pipeline's rows in RowBytes (n <= 0:
// the default, config.DefaultDaemonWebhookBufferBytes) and returns b.
func (b *RowBuffer) WithByteLimit(n int64) *RowBuffer {
	b.limits = newRowLimits(b.limits.rows, n)
	return b
}

// RowBytes estimates the memory a delivered row holds: its field names
// and values (strings and numbers by their length, nested values
// recursively) plus a fixed overhead per field and per row. It is what the
// webhook buffers' byte bounds count.
func RowBytes(r map[string]any) int64 {
	n := int64(64)
	for k, v := range r {
		n += 32 + int64(len(k)) + valueBytes(v)
	}
	return n
}

func valueBytes(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v))
	case json.Number:
		return int64(len(v))
	case []any:
		n := int64(24)
		for _, e := range v {
			n += 16 + valueBytes(e)
		}
		return n
	case map[string]any:
		return RowBytes(v)
	}
	return 8
}

func (b *RowBuffer) pipe(pipeline string) *bufferedRows {
	p := b.pipes[pipeline]
	if p == nil {
		p = &bufferedRows{tables: map[string]map[int64]bufferedRow{}}
		b.pipes[pipeline] = p
	}
	return p
}

// ApplyRows keeps rows, replacing earlier copies of the same row id; a row
// of a new id is dropped when the pipeline's buffer is full.
func (b *RowBuffer) ApplyRows(_ context.Context, pipeline, table string, rows []map[string]any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pipe(pipeline)
	m := p.tables[table]
	if m == nil {
		m = map[int64]bufferedRow{}
		p.tables[table] = m
	}
	for _, r := range rows {
		id, ok := rowID(r)
		if !ok {
			continue
		}
		size := RowBytes(r)
		old, had := m[id]
		if !p.count.admit(b.limits, had, old.bytes, size) {
			p.dropped++
			continue
		}
		m[id] = bufferedRow{row: r, gen: p.gen, bytes: size}
	}
	return nil
}

// Mark starts a new generation of pipeline's rows and returns the one
// before: the rows a run starting now consumes.
func (b *RowBuffer) Mark(pipeline string) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pipe(pipeline)
	p.gen++
	return p.gen - 1
}

// Release forgets pipeline's rows kept up to generation gen (Mark's),
// those the run that succeeded consumed; later ones stay.
func (b *RowBuffer) Release(pipeline string, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pipe(pipeline)
	for t, m := range p.tables {
		for id, r := range m {
			if r.gen <= gen {
				delete(m, id)
				p.count.n--
				p.count.bytes -= r.bytes
			}
		}
		if len(m) == 0 {
			delete(p.tables, t)
		}
	}
}

// Len returns how many rows are kept for pipeline; Dropped how many were
// not kept because the buffer was full.
func (b *RowBuffer) Len(pipeline string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pipe(pipeline).count.n
}

// Bytes returns the RowBytes of the rows kept for pipeline.
func (b *RowBuffer) Bytes(pipeline string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pipe(pipeline).count.bytes
}

// Dropped returns how many rows of pipeline were not kept (buffer full).
func (b *RowBuffer) Dropped(pipeline string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pipe(pipeline).dropped
}

// IDs returns the row ids kept for (pipeline, table), ascending.
func (b *RowBuffer) IDs(pipeline, table string) []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.pipe(pipeline).tables[table]))
}

// Take returns and forgets the rows kept for (pipeline, table), by id.
func (b *RowBuffer) Take(pipeline, table string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pipe(pipeline)
	m := p.tables[table]
	delete(p.tables, table)
	p.count.n -= len(m)
	out := make([]map[string]any, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[id].row)
		p.count.bytes -= m[id].bytes
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
// window ends, within limits (rows of new ids beyond them are dropped).
type collector struct {
	signal chan struct{} // capacity 1
	mu     sync.Mutex
	limits rowLimits
	count  rowCount
	rows   map[string]map[int64]map[string]any // table → id → row
	sizes  map[string]map[int64]int64          // table → id → RowBytes of the row
}

func newCollector(max int, maxBytes int64) *collector {
	return &collector{signal: make(chan struct{}, 1), limits: newRowLimits(max, maxBytes), rows: map[string]map[int64]map[string]any{},
		sizes: map[string]map[int64]int64{}}
}

// add keeps rows (by id, the last wins), reports whether a flush was
// already waiting (the delivery is coalesced into it) and how many rows it
// dropped for want of room.
func (c *collector) add(table string, rows map[int64]map[string]any) (coalesced bool, dropped int) {
	c.mu.Lock()
	coalesced = len(c.rows) > 0
	m := c.rows[table]
	if m == nil {
		m = map[int64]map[string]any{}
		c.rows[table] = m
		c.sizes[table] = map[int64]int64{}
	}
	sz := c.sizes[table]
	for id, r := range rows {
		size := RowBytes(r)
		_, had := m[id]
		if !c.count.admit(c.limits, had, sz[id], size) {
			dropped++
			continue
		}
		sz[id] = size
		m[id] = r
	}
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
	return coalesced, dropped
}

// take returns and clears the gathered rows.
func (c *collector) take() map[string]map[int64]map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.rows
	c.rows = map[string]map[int64]map[string]any{}
	c.sizes = map[string]map[int64]int64{}
	c.count = rowCount{}
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
	d.observeBuffer(w.name)
	if _, err := d.enqueue(ctx, w, ModeIncremental, state.TriggerWebhook); err != nil {
		d.log.Error("queue webhook run", slog.String("pipeline", w.name), slog.String("err", err.Error()))
	}
}

// observeBuffer updates the buffered and dropped row metrics of the
// default RowBuffer.
func (d *Daemon) observeBuffer(pipeline string) {
	if d.rows == nil {
		return
	}
	d.m.rowsBuffered.WithLabelValues(pipeline).Set(float64(d.rows.Len(pipeline)))
	d.m.bytesBuffered.WithLabelValues(pipeline).Set(float64(d.rows.Bytes(pipeline)))
	dropped := d.rows.Dropped(pipeline)
	d.mu.Lock()
	delta := dropped - d.dropped[pipeline]
	d.dropped[pipeline] = dropped
	d.mu.Unlock()
	if delta > 0 {
		d.m.rowsDropped.WithLabelValues(pipeline).Add(float64(delta))
	}
}

// hookTables are the Grist tables whose deliveries a pipeline accepts: the
// tables its Grist sources read (any table id when a source reads every
// table). A pipeline without a Grist source accepts none.
type hookTables struct {
	grist bool
	any   bool
	names map[string]bool
}

func newHookTables(pc *config.Pipeline) hookTables {
	h := hookTables{names: map[string]bool{}}
	for _, sc := range pc.Sources {
		if sc.Grist == nil {
			continue
		}
		h.grist = true
		if len(sc.Grist.Tables) == 0 {
			h.any = true
		}
		for _, t := range sc.Grist.Tables {
			h.names[t] = true
		}
	}
	if r := pc.Review; r != nil && r.Grist != nil {
		// The experts' edits in the review's Elements table.
		h.grist = true
		h.names[r.Grist.ElementsTable] = true
	}
	return h
}

// accepts reports whether a delivery for table (""= none named) is the
// pipeline's.
func (h hookTables) accepts(table string) bool {
	return h.grist && (h.any || table == "" || h.names[table])
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
	// Without the secret a known pipeline and an unknown name get the same
	// answer: the route does not tell which pipelines exist.
	label := name
	if !ok {
		label = ""
	}
	reject := func(outcome string, code int, format string, args ...any) {
		d.m.deliveries.WithLabelValues(label, outcome).Inc()
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
	if !ok {
		d.m.deliveries.WithLabelValues("", deliveryUnknown).Inc()
		writeError(rw, http.StatusNotFound, "no pipeline %q", name)
		return
	}
	if table != "" && !tablePattern.MatchString(table) {
		reject(deliveryMalformed, http.StatusBadRequest, "table %q is not a Grist table id", table)
		return
	}
	if !w.tables.accepts(table) {
		if table == "" || !w.tables.grist {
			reject(deliveryUnknownTable, http.StatusNotFound, "pipeline %q has no Grist source", name)
		} else {
			reject(deliveryUnknownTable, http.StatusNotFound, "pipeline %q syncs no Grist table %q (its sources' tables: %s); after renaming a table in the config, run `kgsync grist webhooks install` again",
				name, table, strings.Join(slices.Sorted(maps.Keys(w.tables.names)), ", "))
		}
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
	coalesced, dropped := w.hooks.add(table, rows)
	if coalesced {
		d.m.coalesced.WithLabelValues(name).Inc()
	}
	if dropped > 0 {
		d.m.rowsDropped.WithLabelValues(name).Add(float64(dropped))
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
