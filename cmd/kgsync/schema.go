package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/pipeline"
)

func newSchemaCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "schema [PIPELINE...]",
		Short: "Print the data model (anchors, attributes, links, vector indexes) with counts from state",
		Long: `Print each pipeline's data model as the tables an assistant's prompt can
include: anchors (node labels) with description and query example,
attributes with embeddable and the vector index to use, links
(relationship types), and the current node and edge counts from state.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "md" && format != "json" {
				return &exitError{code: 2, err: fmt.Errorf("--format must be md or json, got %q", format)}
			}
			ctx := cmd.Context()
			e, err := g.open(ctx)
			if err != nil {
				return err
			}
			defer e.Close()
			pcs, err := e.selectPipelines(args)
			if err != nil {
				return err
			}
			var failed []error
			for _, pc := range pcs {
				p, err := pipeline.Build(ctx, e.cfg, pc, e.store, e.log)
				if err != nil {
					failed = append(failed, err)
					continue
				}
				doc, err := p.Describe(ctx)
				_ = p.Sink.Close(ctx)
				if err != nil {
					failed = append(failed, fmt.Errorf("pipeline %q: %w", pc.Name, err))
					continue
				}
				if format == "json" {
					b, _ := json.Marshal(doc)
					fmt.Fprintln(g.stdout, string(b))
				} else {
					fmt.Fprintln(g.stdout, doc.Markdown())
				}
			}
			if len(failed) > 0 {
				return &exitError{code: 1, err: errors.Join(failed...)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "md", "output format: md or json")
	return cmd
}
