package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/state"
)

func newEvalCmd(g *globals) *cobra.Command {
	var (
		pipe, modes             string
		k, budget, flatTokens   int
		asJSON, verbose         bool
		calibrate               bool
		minRecall, minSufficent float64
		structured              string
		minRows                 float64
	)
	cmd := &cobra.Command{
		Use:   "eval [GOLDEN.jsonl ...]",
		Short: "Score search against a golden set: recall@1 and @k, context sufficiency, unanswerable declined",
		Long: `Run every question of a golden set (JSON Lines: question, kind, lang, the
addresses of the answer elements and of the required context, e.g.
{"question": "…", "kind": "paraphrase", "lang": "en", "answers": ["RFC 7231 6.5.1"],
 "context": ["RFC 7231 6.5"]}; see docs/retrieval.md) against the pipeline's
graph, side by side in one run: vector only, lexical (BM25) only, hybrid,
hybrid with --expand, and flat fixed-size chunks of the same documents by
BM25 and by the same embedder. It prints recall@1 and @k, context
sufficiency with the context's size in tokens, split by kind and language,
and how the relevance floor did on the unanswerable questions, with the
min_evidence calibrated for this embedder. Without GOLDEN.jsonl it runs the
pipeline's own golden set (eval.golden in its config).

Several golden sets are reported one after another (a held-out set beside
the tuning set it was kept from: a file with a line "# HELD OUT" is one).
The floor's report gives the share of answerable questions declined and
answered with low confidence, and of unanswerable ones declined or marked
low; --calibrate measures the floor's thresholds and similarity cosines for
the pipeline's embedder on the sets not held out and stores them, keyed by
the embedder's fingerprint, where searches read them
(search.floor.calibration).

Exit 4 when hybrid recall@k is below --min-recall or hybrid+expand
sufficiency below --min-sufficiency, so a cron job or CI guards a change of
chunking, data model or embedder.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, err := g.openRead(ctx)
			if err != nil {
				return err
			}
			defer e.Close()
			var pc *config.Pipeline
			if pipe == "" {
				if len(e.cfg.Pipelines) != 1 {
					return &exitError{code: 2, err: fmt.Errorf("the config has %d pipelines: name one with --pipeline", len(e.cfg.Pipelines))}
				}
				pc = &e.cfg.Pipelines[0]
			} else {
				pcs, err := e.selectPipelines([]string{pipe})
				if err != nil {
					return err
				}
				pc = pcs[0]
			}
			if structured != "" {
				return evalStructured(ctx, g, e, pc, structured, asJSON, verbose, minRows)
			}
			goldens := args
			if len(goldens) == 0 {
				if pc.Eval == nil || pc.Eval.Golden == "" {
					return &exitError{code: 2, err: fmt.Errorf("pipeline %q has no golden set: name GOLDEN.jsonl or set eval.golden in its config", pc.Name)}
				}
				goldens = []string{pc.Eval.Golden}
			}
			type set struct {
				name    string
				qs      []retrieval.GoldenQuestion
				heldOut bool
			}
			var sets []set
			for _, golden := range goldens {
				data, err := os.ReadFile(golden)
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				qs, err := retrieval.ReadGolden(bytes.NewReader(data), golden)
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				sets = append(sets, set{golden, qs, retrieval.HeldOut(data)})
			}
			p, err := pipeline.Build(ctx, e.cfg, pc, e.store, e.log)
			if err != nil {
				return err
			}
			defer func() { _ = p.Sink.Close(ctx) }()
			opts := retrieval.EvalOptions{K: k, Budget: budget, FlatTokens: flatTokens}
			if modes != "" {
				for _, m := range strings.Split(modes, ",") {
					opts.Modes = append(opts.Modes, strings.TrimSpace(m))
				}
			}
			var reps []*retrieval.EvalReport
			var tuning []retrieval.QuestionResult
			for i, st := range sets {
				rep, err := p.Searcher().Eval(ctx, st.qs, opts)
				if err != nil {
					return err
				}
				rep.Golden, rep.HeldOut = st.name, st.heldOut
				reps = append(reps, rep)
				if !st.heldOut {
					tuning = append(tuning, rep.Results...)
				}
				if asJSON {
					results := rep.Results
					if !verbose {
						rep.Results = nil
					}
					b, err := json.Marshal(rep)
					rep.Results = results
					if err != nil {
						return err
					}
					fmt.Fprintln(g.stdout, string(b))
					continue
				}
				if i > 0 {
					fmt.Fprintln(g.stdout)
				}
				if err := rep.WriteText(g.stdout); err != nil {
					return err
				}
				if verbose {
					writeResults(g.stdout, rep)
				}
			}
			if calibrate {
				if len(tuning) == 0 {
					return &exitError{code: 2, err: fmt.Errorf("--calibrate: every golden set is held out; calibrate on a set that is not")}
				}
				cal := retrieval.Calibrate(p.Search.Floor, p.Embedder.Model(), tuning)
				path := pipeline.CalibrationPath(e.cfg, pc)
				if err := retrieval.WriteCalibration(path, cal); err != nil {
					return err
				}
				if !asJSON {
					fmt.Fprintf(g.stdout, "\nfloor calibration for %s written to %s (from %d questions of the sets not held out): decline below %.2f, low below %.2f, decline_cosine %.2f, high_cosine %.2f\n",
						cal.Embedder, path, cal.Questions, cal.DeclineEvidence, cal.MinEvidence, cal.DeclineCosine, cal.HighCosine)
				}
			}
			for _, rep := range reps {
				if rep.HeldOut {
					continue
				}
				if h := rep.Mode(retrieval.ModeHybrid); h != nil && h.All.Recall5 < minRecall {
					return &exitError{code: 4, err: fmt.Errorf("%s: hybrid recall@%d %.3f is below --min-recall %.3f", rep.Golden, rep.K, h.All.Recall5, minRecall)}
				}
				if x := rep.Mode(retrieval.ModeExpand); x != nil && x.All.Sufficiency < minSufficent {
					return &exitError{code: 4, err: fmt.Errorf("%s: hybrid+expand sufficiency %.3f is below --min-sufficiency %.3f", rep.Golden, x.All.Sufficiency, minSufficent)}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&structured, "structured", "", "score the assistant tools on a structured golden set (JSON Lines of list, count and vts questions with their expected row ids): rows' complete lists and counts against search-only answers (docs/assistant-tools.md)")
	cmd.Flags().Float64Var(&minRows, "min-rows", 0, "with --structured: exit 4 when rows' exact-list or count accuracy is below this (0-1)")
	cmd.Flags().StringVarP(&pipe, "pipeline", "p", "", "pipeline to evaluate (required when the config has several)")
	cmd.Flags().IntVarP(&k, "k", "k", 0, "hits per question (default: the config's search.k, 5)")
	cmd.Flags().IntVar(&budget, "budget", 0, "token budget of the expanded context (default: the config's search.budget, 2500)")
	cmd.Flags().IntVar(&flatTokens, "flat-tokens", 400, "size of the flat baseline's chunks in tokens")
	cmd.Flags().StringVar(&modes, "modes", "", "modes to run, comma-separated: "+strings.Join(retrieval.AllModes, ",")+" (default all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().BoolVar(&verbose, "verbose-results", false, "also print every question's outcome")
	cmd.Flags().BoolVar(&calibrate, "calibrate", false, "write the relevance floor's calibration for this embedder (measured on the golden sets not marked held out) to search.floor.calibration")
	cmd.Flags().Float64Var(&minRecall, "min-recall", 0, "exit 4 when hybrid recall@k is below this")
	cmd.Flags().Float64Var(&minSufficent, "min-sufficiency", 0, "exit 4 when hybrid+expand sufficiency is below this")
	return cmd
}

// daemonEval is the daemon's EvalFunc: a pipeline's golden set
// (pipelines[].eval.golden) in hybrid and hybrid+expand modes.
func daemonEval(cfg *config.Config, store state.Store, log *slog.Logger) daemon.EvalFunc {
	return func(ctx context.Context, name string) (daemon.EvalSummary, error) {
		pc, ok := cfg.Pipeline(name)
		if !ok {
			return daemon.EvalSummary{}, fmt.Errorf("no pipeline %q", name)
		}
		if pc.Eval == nil || pc.Eval.Golden == "" {
			return daemon.EvalSummary{}, daemon.ErrEvalSkipped
		}
		f, err := os.Open(pc.Eval.Golden)
		if err != nil {
			return daemon.EvalSummary{}, err
		}
		qs, err := retrieval.ReadGolden(f, pc.Eval.Golden)
		_ = f.Close()
		if err != nil {
			return daemon.EvalSummary{}, err
		}
		p, err := buildPipeline(ctx, cfg, pc, store, log)
		if err != nil {
			return daemon.EvalSummary{}, fmt.Errorf("pipeline %q: %w", name, err)
		}
		defer func() { _ = p.Sink.Close(context.WithoutCancel(ctx)) }()
		rep, err := p.Searcher().Eval(ctx, qs, retrieval.EvalOptions{Modes: []string{retrieval.ModeHybrid, retrieval.ModeExpand}})
		if err != nil {
			return daemon.EvalSummary{}, err
		}
		s := daemon.EvalSummary{Questions: rep.Questions, Declined: rep.Floor.Declined, Lost: rep.Floor.Lost, Unresolved: len(rep.Unresolved)}
		if h := rep.Mode(retrieval.ModeHybrid); h != nil {
			s.RecallAt1, s.RecallAtK = h.All.Recall1, h.All.Recall5
		}
		if x := rep.Mode(retrieval.ModeExpand); x != nil {
			s.Sufficiency, s.ContextTokens = x.All.Sufficiency, x.All.MedianTokens
		}
		return s, nil
	}
}

// evalStructured scores the assistant tools of pipeline pc on the
// structured golden set in file.
func evalStructured(ctx context.Context, g *globals, e *env, pc *config.Pipeline, file string, asJSON, verbose bool, minRows float64) error {
	f, err := os.Open(file)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	qs, err := assistant.ReadQuestions(f, file)
	_ = f.Close()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	srv, closeAll, err := buildAssistant(ctx, e.cfg, e.store, e.log, []string{pc.Name})
	if err != nil {
		return err
	}
	defer closeAll()
	rep, err := srv.Eval(ctx, pc.Name, qs)
	if err != nil {
		return err
	}
	if asJSON {
		if !verbose {
			rep.Results = nil
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Fprintln(g.stdout, string(b))
	} else {
		if err := rep.WriteText(g.stdout); err != nil {
			return err
		}
		if verbose {
			for _, r := range rep.Results {
				fmt.Fprintf(g.stdout, "%s\t%s", r.ID, r.Kind)
				for _, tool := range []string{assistant.ToolRows, assistant.ToolSearch, assistant.ToolSearchRestricted} {
					if x, ok := r.Tools[tool]; ok {
						fmt.Fprintf(g.stdout, "\t%s exact=%v count=%d recall=%.2f", tool, x.Exact, x.Count, x.Recall)
					}
				}
				fmt.Fprintln(g.stdout)
			}
		}
	}
	for _, t := range rep.Tools {
		if t.Tool == assistant.ToolRows && (t.ExactList < minRows || t.Count < minRows) {
			return &exitError{code: 4, err: fmt.Errorf("rows: exact list %.3f, count %.3f: below --min-rows %.3f", t.ExactList, t.Count, minRows)}
		}
	}
	return nil
}

// writeResults prints each question's outcome, one line a question: its id,
// kind and language, then for every mode the report measured (not only
// hybrid: `--modes hybrid+expand` has no hybrid results) the share of its
// answers found at 1 and at k and whether the context was sufficient, then
// the relevance floor's verdict.
func writeResults(w io.Writer, rep *retrieval.EvalReport) {
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%s\t%s\t%s", r.ID, r.Kind, r.Lang)
		for _, mr := range rep.Modes {
			m := r.Modes[mr.Mode]
			fmt.Fprintf(w, "\t%s @1 %.2f @k %.2f sufficient %v", mr.Mode, m.At1, m.AtK, m.Sufficient)
		}
		fmt.Fprintf(w, "\tdeclined %v\tlow %v\tcoverage %.2f\n", r.Declined, r.Low, r.Evidence.Coverage)
	}
}
