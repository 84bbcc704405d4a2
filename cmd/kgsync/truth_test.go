package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// TestPlanNamesTheChangedSettingAndTheSkippedFiles: plan used to say only
// "config changed" and "2 skipped".
func TestPlanNamesTheChangedSettingAndTheSkippedFiles(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	body, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.Contains(t, string(body), "max_tokens: 512")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(body), "max_tokens: 512", "max_tokens: 400", 1)), 0o644))
	docs := filepath.Join(filepath.Dir(cfg), "docs")
	require.NoError(t, os.WriteFile(filepath.Join(docs, "deep.md"), []byte(strings.Repeat("- ", 3000)+"x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "bin.txt"), []byte("abc\x00def"), 0o644))

	code, out, errOut := kgsync(t, "plan", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "config changed: chunking.max_tokens: 512 → 400")
	require.Contains(t, out, "2 skipped")
	require.Contains(t, out, "! docs:deep.md skipped: parse deep.md: parse md: too complex (list or quote nesting")
	require.Contains(t, out, "! docs:bin.txt skipped: read bin.txt: binary content: NUL byte at offset 3")
}

// TestReadOnlyCommandsCreateNoState: status, plan, schema and search on a
// fresh checkout used to create .kgsync/state.db (and the CYPHERL folder).
func TestReadOnlyCommandsCreateNoState(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	dir := filepath.Join(filepath.Dir(cfg), ".kgsync")
	for _, args := range [][]string{{"status"}, {"plan"}, {"schema"}, {"search", "--pipeline", "docs", "request"}, {"status", "--json"}} {
		code, out, errOut := kgsync(t, append(args, "--config", cfg)...)
		require.Equal(t, 0, code, "%v: %s%s", args, out, errOut)
		_, err := os.Stat(dir)
		require.ErrorIs(t, err, os.ErrNotExist, "%v created %s", args, dir)
	}
	code, out, _ := kgsync(t, "status", "--config", cfg)
	require.Equal(t, 0, code)
	require.Contains(t, out, "never run")
	code, _, errOut := kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	_, err := os.Stat(filepath.Join(dir, "state.db"))
	require.NoError(t, err, "sync creates the state")
}

// TestValidateCatchesWhatLoadCannot: a missing files.root, a model anchor
// on a missing table or column, a link to an unknown anchor, a ref: to an
// unknown table, and a chunk size no embedder takes, each with the file
// and line, and the failure summed up once.
func TestValidateCatchesWhatLoadCannot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.csv"), []byte("id,name,parent\n1,a,2\n2,b,\n"), 0o644))
	cfg := filepath.Join(dir, "kgsync.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`pipelines:
  - name: docs
    sources:
      - files:
          root: nowhere
  - name: tables
    sources:
      - csv:
          tables:
            - {path: t.csv, table: things, key: id, columns: {parent: "ref:nosuchtable"}}
    model:
      anchors:
        - name: ghost
          table: nosuch
        - name: thing
          table: things
          attributes:
            - {name: label, column: nosuchcolumn}
          links:
            - {name: PARENT, column: parent, to: nobody}
`), 0o644))
	code, out, errOut := kgsync(t, "validate", "--config", cfg)
	require.Equal(t, 3, code, out+errOut)
	for _, want := range []string{
		"kgsync.yaml:5: pipelines[0].sources[0].files.root: ",
		"no such file or directory",
		"kgsync.yaml:13: pipelines[1].model.anchors[0]: no source of the pipeline has a table \"nosuch\"",
		"kgsync.yaml:18: pipelines[1].model.anchors[1].attributes[0]: table \"things\" has no column \"nosuchcolumn\"",
		"kgsync.yaml:10: pipelines[1].sources[0].csv.tables[0].columns[\"parent\"]: ref:nosuchtable names no table of the pipeline",
		"pipelines[1].model.anchors[1].links[0].to: \"nobody\" is no anchor of the model and no table of the pipeline",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, ": ok")
	require.Equal(t, "kgsync: the config has the problems listed above\n", errOut, "summed up once, not repeated")

	huge := filepath.Join(dir, "huge.yaml")
	require.NoError(t, os.WriteFile(huge, []byte("chunking:\n  max_tokens: 1073741824\npipelines:\n  - name: docs\n    sources:\n      - files: {root: .}\n"), 0o644))
	code, _, errOut = kgsync(t, "validate", "--config", huge)
	require.Equal(t, 3, code)
	require.Contains(t, errOut, "huge.yaml:2: chunking.max_tokens: must be at most 65536, got 1073741824")
	require.Equal(t, 1, strings.Count(errOut, "max_tokens"), errOut)
}

// TestStatusTellsDeadRunsFromLiveOnes: a run left "running" by a killed
// process shows as abandoned, at once (it used to show running until the
// next run); a run whose process holds the lock shows running; neither
// has a made-up finished_at.
func TestStatusTellsDeadRunsFromLiveOnes(t *testing.T) {
	t.Parallel()
	cfgPath := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "docs", "--config", cfgPath)
	require.Equal(t, 0, code, errOut)
	cfg, err := config.Load(cfgPath)
	require.NoError(t, err)
	store, err := pipeline.OpenStore(t.Context(), cfg.State)
	require.NoError(t, err)
	defer store.Close()
	dead, err := store.RunOpen(t.Context(), "docs", state.TriggerCron)
	require.NoError(t, err)

	code, out, errOut := kgsync(t, "status", "docs", "--config", cfgPath, "--json")
	require.Equal(t, 0, code, errOut)
	line := jsonLineOf(t, out, dead.ID)
	require.Equal(t, "abandoned", line["status"])
	require.NotContains(t, line, "finished_at")

	unlock, err := store.Lock(t.Context(), "docs") // a live process runs it
	require.NoError(t, err)
	code, out, errOut = kgsync(t, "status", "docs", "--config", cfgPath, "--json")
	require.NoError(t, unlock())
	require.Equal(t, 0, code, errOut)
	line = jsonLineOf(t, out, dead.ID)
	require.Equal(t, "running", line["status"])
	require.NotContains(t, line, "finished_at")
}

// jsonLineOf returns the JSON line of run id in status --json output.
func jsonLineOf(t *testing.T, out string, id int64) map[string]any {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["run_id"] == float64(id) {
			return m
		}
	}
	t.Fatalf("no run %d in %s", id, out)
	return nil
}
