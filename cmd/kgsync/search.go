package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
)

// searchResult is what `search --json` prints: the result and, with
// --expand, the context's size and budget.
type searchResult struct {
	Query string `json:"query"`
	*retrieval.Result
	ContextTokens int `json:"context_tokens,omitempty"`
	Budget        int `json:"budget,omitempty"`
	// Omitted is what --expand left out for lack of budget.
	Omitted []retrieval.Omission `json:"omitted,omitempty"`
}

func newSearchCmd(g *globals) *cobra.Command {
	var (
		pipe, anchor, attribute, address, signals string
		k, budget                                 int
		asJSON, expand, noFloor                   bool
	)
	cmd := &cobra.Command{
		Use:   "search [flags] TEXT | --address ADDRESS",
		Short: "Find the chunks and rows that answer TEXT (hybrid: vector, BM25, terms, addresses)",
		Long: `Search the pipeline for TEXT and print the best chunks and table rows with
their fused score and what found them. Six signals are fused by weighted
reciprocal rank fusion (weights in the config's search section): the
vector nearest neighbours, BM25 over chunks and rows, BM25 over elements,
defined terms the text names, the best candidates of those re-ranked by
how much of the text one 24-word window holds (proximity), and addresses
it names ("section 6.5.1", "Article 7(3)(a)", "Статья 81 часть 3",
"Table 1", looked up in every document, or in the one the text names:
"RFC 7231 4.2.2"). With a Memgraph
sink the vector and text indexes are Memgraph's; otherwise state's.

When the best hits hold too little of the query (the relevance floor,
docs/retrieval.md), search says so and returns no hit; --no-floor shows
them anyway. --expand adds to the hits what an answer needs within
--budget tokens: the rest of the hit's clause, MANDATORY neighbours,
cross-reference targets and definitions of the terms used, each saying
why. --address looks nodes up by address instead of searching.`,
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
			p, err := pipeline.Build(ctx, e.cfg, pc, e.store, e.log)
			if err != nil {
				return err
			}
			defer func() { _ = p.Sink.Close(ctx) }()
			srch := p.Searcher()
			if address != "" {
				res, err := srch.Lookup(ctx, address)
				if err != nil {
					return err
				}
				for _, r := range res {
					if asJSON {
						b, _ := json.Marshal(r)
						fmt.Fprintln(g.stdout, string(b))
					} else {
						fmt.Fprintf(g.stdout, "%s (%s)\n%s\n", r.ID, r.Label, r.Text)
					}
				}
				return nil
			}
			if len(args) == 0 {
				return &exitError{code: 2, err: fmt.Errorf("search needs TEXT or --address")}
			}
			opts := retrieval.Options{K: k, Anchor: anchor, Attribute: attribute, NoFloor: noFloor}
			if signals != "" {
				for _, s := range strings.Split(signals, ",") {
					s = strings.TrimSpace(s)
					if !contains(retrieval.AllSignals, s) {
						return &exitError{code: 2, err: fmt.Errorf("--signals: unknown signal %q (want %s)", s, strings.Join(retrieval.AllSignals, ", "))}
					}
					opts.Signals = append(opts.Signals, s)
				}
			}
			query := strings.Join(args, " ")
			var res *retrieval.Result
			var c *retrieval.Context
			if expand {
				if budget <= 0 {
					budget = p.Search.Budget
				}
				res, c, err = srch.SearchExpand(ctx, query, opts, budget)
			} else {
				res, err = srch.Search(ctx, query, opts)
			}
			if err != nil {
				return err
			}
			out := searchResult{Query: query, Result: res}
			if c != nil {
				res.Hits, out.ContextTokens, out.Budget, out.Omitted = c.Hits, c.Tokens, c.Budget, c.Omitted
			}
			if asJSON {
				b, err := json.Marshal(out)
				if err != nil {
					return err
				}
				fmt.Fprintln(g.stdout, string(b))
				return nil
			}
			printSearch(g, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&pipe, "pipeline", "p", "", "pipeline to search (required when the config has several)")
	cmd.Flags().StringVar(&anchor, "anchor", "", "search only this anchor's units")
	cmd.Flags().StringVar(&attribute, "attribute", "", "search only this embeddable attribute's units")
	cmd.Flags().IntVarP(&k, "k", "k", 0, "number of hits (default: the config's search.k, 5)")
	cmd.Flags().StringVar(&signals, "signals", "", "signals to fuse, comma-separated: "+strings.Join(retrieval.AllSignals, ",")+" (default all)")
	cmd.Flags().BoolVar(&noFloor, "no-floor", false, "return the best hits even when the relevance floor declines")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object: hits, declined, reason, evidence")
	cmd.Flags().BoolVar(&expand, "expand", false, "add the minimal sufficient context to the hits, each item saying why")
	cmd.Flags().IntVar(&budget, "budget", 0, "token budget of the expanded context, hits included (default: the config's search.budget, 2500)")
	cmd.Flags().StringVar(&address, "address", "", `look nodes up by address, e.g. "RFC 7231 6.5.1" or "Article 7(3)"`)
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func printSearch(g *globals, out searchResult) {
	res := out.Result
	for _, a := range res.Addresses {
		fmt.Fprintf(g.stdout, "address %q: %d match(es)\n", a.Text, len(a.Nodes))
	}
	if len(res.Terms) > 0 {
		fmt.Fprintf(g.stdout, "terms: %s\n", strings.Join(res.Terms, ", "))
	}
	if res.Declined {
		fmt.Fprintf(g.stdout, "nothing relevant: %s\n", res.Reason)
		return
	}
	if res.Confidence == retrieval.ConfidenceLow {
		fmt.Fprintf(g.stdout, "confidence: low (%s)\n", res.Reason)
	}
	for i, h := range res.Hits {
		// A chunk covers several elements: the line names the one the
		// query matched and shows its text.
		where, text := h.Address, h.Text
		if h.Match != nil {
			where = h.Match.ID
			if h.Match.Offset > 0 && h.Match.Offset < len(h.Text) {
				text = h.Text[h.Match.Offset:]
			}
		}
		if where == "" {
			where = h.ID + " " + h.Label + "." + strings.TrimSuffix(h.Property, "_embedding")
		}
		var ranks []string
		for _, s := range retrieval.AllSignals {
			if r, ok := h.Ranks[s]; ok {
				ranks = append(ranks, fmt.Sprintf("%s #%d", s, r))
			}
		}
		fmt.Fprintf(g.stdout, "%d. %.3f  %s  (%s)\n   %s\n", i+1, h.Score, where, strings.Join(ranks, ", "), oneLine(text, 160))
		for _, r := range h.Renditions {
			fmt.Fprintf(g.stdout, "   = the same text in %s\n", cmp.Or(r.Address, r.ID))
		}
		for _, x := range h.Expansions {
			fmt.Fprintf(g.stdout, "   + %s: %s\n     %s\n", x.Reason, x.ID, oneLine(x.Text, 140))
		}
	}
	if out.Budget > 0 {
		fmt.Fprintf(g.stdout, "context: %d tokens of %d\n", out.ContextTokens, out.Budget)
		for _, o := range out.Omitted {
			fmt.Fprintf(g.stdout, "  left out for the budget: %s: %s (%d tokens)\n", o.Reason, o.ID, o.Tokens)
		}
	}
	if len(res.Hits) == 0 {
		fmt.Fprintln(g.stdout, "no hits: run sync first, or check --anchor/--attribute")
	}
}
