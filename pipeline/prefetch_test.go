package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources"
)

func pages(n int, failAt int, produced *int) func(context.Context) iter.Seq2[*sources.Page, error] {
	return func(context.Context) iter.Seq2[*sources.Page, error] { return pageSeq(n, failAt, produced) }
}

func pageSeq(n int, failAt int, produced *int) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		for i := range n {
			*produced = i + 1
			if i == failAt {
				yield(nil, errors.New("page failed"))
				return
			}
			if !yield(&sources.Page{Cursor: fmt.Sprint(i)}, nil) {
				return
			}
		}
	}
}

func TestPrefetchKeepsOrderErrorsAndStops(t *testing.T) {
	var produced int
	var got []string
	for p, err := range prefetch(t.Context(), pages(10, -1, &produced), 2) {
		require.NoError(t, err)
		got = append(got, p.Cursor)
	}
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, got)

	var errs []error
	for _, err := range prefetch(t.Context(), pages(10, 3, &produced), 2) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 4)
	require.EqualError(t, errs[3], "page failed")

	// The consumer stops after one page: the producer stops soon after,
	// having read at most the pages that fit ahead.
	for range prefetch(t.Context(), pages(100, -1, &produced), 2) {
		break
	}
	require.LessOrEqual(t, produced, 5)

	// A cancelled context ends the sequence with its error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var last error
	for _, err := range prefetch(ctx, pages(100, -1, &produced), 2) {
		last = err
	}
	require.ErrorIs(t, last, context.Canceled)
}
