// Command kgsync keeps a Memgraph knowledge graph in step with document
// folders, Grist documents and HTTP APIs. See README.md for the quick start
// and docs/config.md for the configuration.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code) // the only os.Exit in the codebase
}
