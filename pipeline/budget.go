package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/pipeline/review"
)

// DefaultDocumentTimeout is the time budget of one document's parsing,
// element graph and chunking when Pipeline.DocumentTimeout is 0
// (config: chunking.document_timeout).
const DefaultDocumentTimeout = 60 * time.Second

// DefaultDocumentMemory is the memory budget of one document's parse
// when Pipeline.DocumentMemory is 0: how far the Go heap may grow (bytes)
// while the document is parsed and chunked.
const DefaultDocumentMemory = 1 << 30

// abandonGrace is how long parseDocument waits for a parse cancelled
// over its budget to stop before moving on without it.
const abandonGrace = 2 * time.Second

// heapSampleEvery is how often parseDocument reads the heap's size.
const heapSampleEvery = 50 * time.Millisecond

// heapBytes reads the bytes of heap objects, live or not yet swept
// (runtime/metrics "/memory/classes/heap/objects:bytes").
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// parsedDoc is what a document's parse yields for its record's output.
type parsedDoc struct {
	root   *chunker.Element
	review *review.Applied // the expert review applied to root (applyReview)
	title  string
	graph  docGraph
	chunks []chunker.Chunk
}

// parseDocument parses, graphs and chunks one document within the
// pipeline's time budget. The Markdown parser and the splitter stop
// within a line or a leaf of the budget's end (chunker.ParseContext,
// SplitContext); other parsers run on their own goroutine, which
// parseDocument stops waiting for at the budget's end, so a hostile file
// never holds up the rest of the run or a shutdown (the abandoned parse,
// linear in its input within chunker's limits, finishes in the background
// and its result is dropped). The memory budget is watched the same way:
// when the Go heap grows by more than Pipeline.DocumentMemory during the
// parse, the parse is cancelled (a process-wide measure: other work of the
// process at the same time counts too). Over a budget the error wraps a
// chunker.TooComplexError; when ctx is done, ctx's error. A panicking
// parser is an error of this document, not a crash of the process.
func (r *runner) parseDocument(ctx context.Context, out *recordOutput) (parsedDoc, error) {
	key := out.it.rec.Key
	budget := r.p.DocumentTimeout
	if budget <= 0 {
		budget = DefaultDocumentTimeout
	}
	memory := r.p.DocumentMemory
	if memory <= 0 {
		memory = DefaultDocumentMemory
	}
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	done := make(chan parseResult, 1)
	opts := r.p.Chunking
	go func() {
		var res parseResult
		defer func() {
			if p := recover(); p != nil {
				res = parseResult{err: fmt.Errorf("parse %s: parser panic: %v\n%s", key, p, debug.Stack())}
			}
			done <- res
		}()
		res.d, res.err = r.parseAndChunk(bctx, out, opts)
	}()
	res, overMemory := watchParse(bctx, cancel, done, memory, key)
	if res.err != nil && bctx.Err() != nil {
		// Over a budget: give the cancelled work a moment to stop, so its
		// memory and CPU are not counted against the next document.
		select {
		case <-done:
		case <-time.After(abandonGrace):
		}
	}
	if overMemory && ctx.Err() == nil {
		return parsedDoc{}, fmt.Errorf("parse %s: %w", key, &chunker.TooComplexError{
			Reason: fmt.Sprintf("the heap grew by over %d MiB while parsing and chunking it", memory>>20)})
	}
	if res.err != nil && bctx.Err() != nil {
		if err := ctx.Err(); err != nil {
			return parsedDoc{}, fmt.Errorf("parse %s: %w", key, err)
		}
		return parsedDoc{}, fmt.Errorf("parse %s: %w", key, &chunker.TooComplexError{
			Reason: fmt.Sprintf("not parsed and chunked within %v, chunking.document_timeout", budget)})
	}
	return res.d, res.err
}

// parseResult is a parse's outcome, sent by its goroutine.
type parseResult struct {
	d   parsedDoc
	err error
}

// parseAndChunk is the Chunk step's work on one document, run on
// parseDocument's goroutine: parse, expert review, element graph, chunks;
// it stops when bctx, the document's budget, is done.
func (r *runner) parseAndChunk(bctx context.Context, out *recordOutput, opts chunker.Options) (parsedDoc, error) {
	nodeID, anchor, key, doc := out.nodeID, out.it.rec.Anchor, out.it.rec.Key, out.it.rec.Document
	var d parsedDoc
	root, err := chunker.ParseContext(bctx, doc.Format, doc.Content)
	if err != nil {
		return d, fmt.Errorf("parse %s: %w", key, err)
	}
	d.root, d.title = root, documentTitle(root)
	// The review reads state and edits root; it works on a copy of
	// out, so an abandoned parse never touches the caller's output.
	reviewed := &recordOutput{it: out.it, nodeID: nodeID}
	if err := r.applyReview(bctx, reviewed, root); err != nil {
		return d, err
	}
	d.review = reviewed.review
	d.graph = buildDocGraph(nodeID, anchor, key, root)
	if err := bctx.Err(); err != nil {
		return d, fmt.Errorf("parse %s: %w", key, err)
	}
	d.chunks, err = chunker.SplitContext(bctx, nodeID, root, opts)
	if err != nil {
		return d, fmt.Errorf("chunk %s: %w", key, err)
	}
	return d, nil
}

// watchParse waits for a parse's result (done) or its budget's end
// (bctx), sampling the heap every heapSampleEvery: overMemory reports
// that it grew by more than memory bytes from when the wait began, in
// which case the parse is cancelled.
func watchParse(bctx context.Context, cancel context.CancelFunc, done <-chan parseResult, memory int64, key string) (res parseResult, overMemory bool) {
	base := heapBytes()
	tick := time.NewTicker(heapSampleEvery)
	defer tick.Stop()
	for {
		select {
		case res = <-done:
			// One last sample: a parse that finished between two ticks
			// is judged by the same measure as one still running.
			if h := heapBytes(); h > base && int64(h-base) > memory {
				overMemory = true
			}
			return res, overMemory
		case <-bctx.Done():
			res.err = fmt.Errorf("parse %s: %w", key, bctx.Err())
			return res, overMemory
		case <-tick.C:
			if h := heapBytes(); h > base && int64(h-base) > memory {
				overMemory = true
				cancel() // the Markdown parser and the splitter stop
			}
		}
	}
}
