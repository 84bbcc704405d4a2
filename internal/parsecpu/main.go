// Command parsecpu prints the process CPU time (user + system) of one
// chunker.Parse of each named document, in nanoseconds, so that two builds
// can be compared on a machine shared with other work: wall time counts
// the waits for a core, CPU time does not. It parses each document until
// about 0.3 s of CPU is spent and prints "<name> <ns per parse>".
//
// It uses only chunker.Parse and chunker.FormatForPath, so the same file
// builds against an older tree. Comparing with a baseline commit:
//
//	git worktree add /tmp/base <commit>
//	mkdir -p /tmp/base/internal/parsecpu && cp internal/parsecpu/main.go /tmp/base/internal/parsecpu/
//	(cd /tmp/base && go build -o /tmp/parse-base ./internal/parsecpu)
//	go build -o /tmp/parse-now ./internal/parsecpu
//	for i in 1 2 3 4 5; do
//	  GOMAXPROCS=1 /tmp/parse-base DIR DOC…; GOMAXPROCS=1 /tmp/parse-now DIR DOC…
//	done
//
// and take each document's minimum over the runs of each build.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kgsync/kgsync/chunker"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: parsecpu DIR DOC...")
		os.Exit(2)
	}
	dir := os.Args[1]
	for _, name := range os.Args[2:] {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "parsecpu:", err)
			os.Exit(1)
		}
		format, ok := chunker.FormatForPath(name)
		if !ok {
			fmt.Fprintf(os.Stderr, "parsecpu: %s: no parser for this extension\n", name)
			os.Exit(1)
		}
		if _, err := chunker.Parse(format, raw); err != nil {
			fmt.Fprintf(os.Stderr, "parsecpu: %s: %v\n", name, err)
			os.Exit(1)
		}
		for n := 1; ; n *= 2 {
			t0 := cpu()
			for i := 0; i < n; i++ {
				_, _ = chunker.Parse(format, raw)
			}
			if d := cpu() - t0; d > 300*time.Millisecond {
				fmt.Printf("%s %d\n", name, int64(d)/int64(n))
				break
			}
		}
	}
}
