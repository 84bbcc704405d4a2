package main

import (
	"encoding/json"
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
			return g.eachPipeline(ctx, args, func(p *pipeline.Pipeline) error {
				doc, err := p.Describe(ctx)
				if err != nil {
					return err
				}
				if format == "json" {
					b, _ := json.Marshal(doc)
					fmt.Fprintln(g.stdout, string(b))
				} else {
					fmt.Fprintln(g.stdout, doc.Markdown())
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "md", "output format: md or json")
	return cmd
}
