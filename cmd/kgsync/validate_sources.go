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
func checkSources(ctx context.Context, w io.Writer, cfg *config.Config, p *config.Pipeline, i int, online bool, timeout time.Duration) error {
	if online {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	path := fmt.Sprintf("pipelines[%d]", i)
	have, err := pipeline.DescribeSources(ctx, p, path, online)
	if err != nil {
		fmt.Fprintf(w, "    sources: FAILED: %v\n", err)
		return err
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
