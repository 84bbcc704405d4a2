package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newMigrateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the state store's tables (embedded, versioned migrations)",
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer e.Close()
			if err := e.store.Migrate(cmd.Context()); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			fmt.Fprintf(g.stdout, "state (%s): migrations applied\n", e.cfg.State.Driver)
			return nil
		},
	}
}
