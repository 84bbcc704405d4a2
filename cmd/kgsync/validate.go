package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Load and check the config; print every problem (exit 3 when there are any)",
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load()
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s: ok, %d pipeline(s)\n", g.configPath, len(cfg.Pipelines))
			for _, p := range cfg.Pipelines {
				sched := p.Schedule
				if sched == "" {
					sched = "no schedule"
				}
				fmt.Fprintf(g.stdout, "  %s: %d source(s), sink %s, embedder %s, %s\n", p.Name, len(p.Sources), p.Sink.Type, p.Embedder.Provider, sched)
			}
			return nil
		},
	}
}
