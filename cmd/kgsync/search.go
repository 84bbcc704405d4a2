package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
)

func newSearchCmd(g *globals) *cobra.Command {
	var (
		pipe, anchor, attribute, address string
		k                                int
		asJSON, expand                   bool
	)
	cmd := &cobra.Command{
		Use:   "search [flags] TEXT | --address ADDRESS",
		Short: "Embed TEXT and print the nearest chunks and nodes",
		Long: `Embed TEXT with the pipeline's embedder and print the nearest chunks and
nodes with their scores, ids and text. With a Memgraph sink the search runs
on Memgraph's vector indexes; with the embedded default it is a brute-force
cosine scan over the vectors in state. --anchor and --attribute restrict it
to one embeddable attribute's vectors.

--expand adds the minimal sufficient context to each hit: the elements its
chunk covers, their MANDATORY neighbours, the targets of their
cross-references one hop away, and the definitions of terms that occur in
the hit, each saying why it was added. --address "RFC 7231 6.5.1" looks an
element up by its document identifier and address instead.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, err := g.open(ctx)
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
				if asJSON {
					b, _ := json.Marshal(res)
					fmt.Fprintln(g.stdout, string(b))
				} else {
					fmt.Fprintf(g.stdout, "%s (%s)\n%s\n", res.ID, res.Label, res.Text)
				}
				return nil
			}
			if len(args) == 0 {
				return &exitError{code: 2, err: fmt.Errorf("search needs TEXT or --address")}
			}
			hits, err := srch.Search(ctx, strings.Join(args, " "), retrieval.Options{K: k, Anchor: anchor, Attribute: attribute})
			if err != nil {
				return err
			}
			if expand {
				if hits, err = srch.Expand(ctx, hits); err != nil {
					return err
				}
			}
			for i, h := range hits {
				if asJSON {
					b, _ := json.Marshal(h)
					fmt.Fprintln(g.stdout, string(b))
					continue
				}
				where := h.Address
				if where == "" {
					where = h.Label + "." + strings.TrimSuffix(h.Property, "_embedding")
				}
				fmt.Fprintf(g.stdout, "%d. %.4f  %s  (%s %s)\n   %s\n", i+1, h.Score, where, h.Label, h.ID, oneLine(h.Text, 160))
				for _, x := range h.Expansions {
					fmt.Fprintf(g.stdout, "   + %s: %s (%s)\n     %s\n", x.Reason, x.ID, x.Label, oneLine(x.Text, 140))
				}
			}
			if len(hits) == 0 && !asJSON {
				fmt.Fprintln(g.stdout, "no vectors to search: run sync first, or check --anchor/--attribute")
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&pipe, "pipeline", "p", "", "pipeline to search (required when the config has several)")
	cmd.Flags().StringVar(&anchor, "anchor", "", "search only this anchor's vectors")
	cmd.Flags().StringVar(&attribute, "attribute", "", "search only this embeddable attribute's vectors")
	cmd.Flags().IntVarP(&k, "k", "k", 10, "number of hits")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON line per hit, best first")
	cmd.Flags().BoolVar(&expand, "expand", false, "add the minimal sufficient context to each hit, each item saying why")
	cmd.Flags().StringVar(&address, "address", "", `look an element up by address, e.g. "RFC 7231 6.5.1"`)
	return cmd
}
