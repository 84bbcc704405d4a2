package pipeline

import (
	"context"
	"iter"
	"sync"

	"github.com/kgsync/kgsync/sources"
)

// prefetch reads up to n pages ahead of the consumer in a goroutine, so that
// hashing and classifying a page overlaps reading the next one: a no-op run
// then costs about the read, not the read plus the hashing. The goroutine
// stops when the sequence ends, the consumer stops ranging, or ctx is done.
func prefetch(ctx context.Context, seq iter.Seq2[*sources.Page, error], n int) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
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
			for range ch { // let the producer finish its current page
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
