package pipeline

import (
	"context"
	"iter"
	"sync"

	"github.com/kgsync/kgsync/sources"
)

// prefetch reads up to n pages ahead of the consumer in a goroutine, so that
// hashing and classifying a page overlaps reading the next one: a no-op run
// then costs about the read, not the read plus the hashing. read opens the
// source's sequence with the given context. The goroutine stops when the
// sequence ends, the consumer stops ranging, or ctx is done.
func prefetch(ctx context.Context, read func(context.Context) iter.Seq2[*sources.Page, error], n int) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		// The source reads with its own context, cancelled when the
		// consumer stops: a page being downloaded is abandoned, not awaited.
		readCtx, cancel := context.WithCancel(ctx)
		seq := read(readCtx)
		type item struct {
			page *sources.Page
			err  error
		}
		ch := make(chan item, n)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ch)
			for page, err := range seq {
				select {
				case ch <- item{page, err}:
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
			}
		}()
		defer func() {
			close(stop)
			cancel()
			for range ch { // let the producer notice and stop
			}
			wg.Wait()
		}()
		for it := range ch {
			if !yield(it.page, it.err) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
		}
	}
}
