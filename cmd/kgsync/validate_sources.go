package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
)

// checkSources checks pipeline p (cfg.Pipelines[i]) against what its
// sources provide (pipeline.CheckModel): offline the CSV headers, with
// online also the live Grist documents (tables, columns, column types
// against each attribute's use, Ref targets). It prints one line per
// problem and returns them joined.
//
// cursor, when not nil, returns a source's stored cursor: a Grist source
// is then described as a sync from it reads it, renames followed, and its
// rename warnings are printed (they are not problems).
func checkSources(ctx context.Context, w io.Writer, cfg *config.Config, p *config.Pipeline, i int, online bool, timeout time.Duration,
	cursor func(pipeline, source string) string) error {
	if online {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	path := fmt.Sprintf("pipelines[%d]", i)
	var at func(string) string
	if cursor != nil {
		at = func(source string) string { return cursor(p.Name, source) }
	}
	have, err := pipeline.DescribeSourcesAt(ctx, p, path, online, at)
	if err != nil {
		fmt.Fprintf(w, "    sources: FAILED: %v\n", err)
		return err
	}
	for _, st := range have {
		for _, wr := range st.Warnings {
			fmt.Fprintf(w, "    sources: warning: %s\n", wr)
		}
	}
	problems := append(pipeline.CheckModel(p, path, have), pipeline.CheckRefs(p, path, have)...)
	for k, pr := range problems {
		// "pipelines[1].model…: message" → "kgsync.yaml:12: pipelines[1].model…: message"
		if at, _, ok := strings.Cut(pr, ": "); ok {
			problems[k] = cfg.Position(at) + pr
		}
	}
	if len(problems) == 0 {
		if p.Model == nil {
			return nil // no data model: nothing was matched (a documents pipeline)
		}
		what := "model matches the CSV headers"
		if online {
			what = "model matches the sources' tables and columns"
		}
		fmt.Fprintf(w, "    sources: %s\n", what)
		return nil
	}
	var errs []error
	for _, pr := range problems {
		fmt.Fprintf(w, "    sources: %s\n", pr)
		errs = append(errs, errors.New(pr))
	}
	return errors.Join(errs...)
}
