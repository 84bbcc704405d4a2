package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// quickstart copies examples/quickstart into a temporary directory, so the
// test writes its state and CYPHERL files there.
func quickstart(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("..", "..", "examples", "quickstart")
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	_ = os.RemoveAll(filepath.Join(dst, ".kgsync"))
	return filepath.Join(dst, "kgsync.yaml")
}

func kgsync(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestQuickstartSyncTwice(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, out, errOut := kgsync(t, "sync", "docs", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var first runJSON
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &first), out)
	require.Equal(t, "docs", first.Pipeline)
	require.Equal(t, "succeeded", first.Status)
	require.Equal(t, 3, first.Records.New)
	require.Positive(t, first.Chunks.Embedded)
	// embedded counts every text sent to the embedder: the chunks, and the
	// definitions of the terms the documents define.
	require.GreaterOrEqual(t, first.Chunks.Embedded, first.Chunks.Total)
	require.Positive(t, first.Sink.Statements)

	code, out, errOut = kgsync(t, "sync", "docs", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var second runJSON
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &second))
	require.Equal(t, 3, second.Records.Unchanged)
	require.Zero(t, second.Chunks.Embedded)
	require.Zero(t, second.Sink.Statements)
	require.Equal(t, first.Chunks.Total, second.Chunks.Total)

	// One CYPHERL file for the first run, none for the no-op run, between
	// the two schema files.
	files, err := filepath.Glob(filepath.Join(filepath.Dir(cfg), ".kgsync", "cypherl", "docs", "*.cypherl"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	require.Equal(t, []string{"000000-schema.cypherl", "000001-run1.cypherl", "vector-indexes.cypherl"},
		[]string{filepath.Base(files[0]), filepath.Base(files[1]), filepath.Base(files[2])})

	// The JSON line has exactly the documented keys.
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &raw))
	for _, k := range []string{"pipeline", "run_id", "status", "records", "chunks", "sink", "duration_ms"} {
		require.Contains(t, raw, k)
	}

	code, out, _ = kgsync(t, "status", "docs", "--config", cfg)
	require.Equal(t, 0, code)
	require.Contains(t, out, "succeeded")
	require.Equal(t, 3, strings.Count(out, "\n"), "a header and two runs:\n%s", out)

	// A hit is named by the element the query matched, not by its chunk's
	// first (RFC 7239 6.3 is packed into a chunk that starts at 6.1).
	code, out, errOut = kgsync(t, "search", "--config", cfg, "-p", "docs", "-k", "1", "section 6.3 of RFC 7239")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "1. 1.000  docs:rfc7239.txt › 6 › 6.3  (address #1)\n   6.3. Obfuscated Identifier A generated identifier", out)
}

func TestPlanSaysWhatWouldChange(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, out, errOut := kgsync(t, "plan", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "docs: 3 to add, 0 to change, 0 to delete")
	require.Contains(t, out, "+ docs:rfc7239.txt (new)")

	code, _, errOut = kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	doc := filepath.Join(filepath.Dir(cfg), "docs", "rfc7239.txt")
	body, err := os.ReadFile(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(doc, bytes.Replace(body, []byte("proxies"), []byte("intermediaries"), 1), 0o644))
	code, out, _ = kgsync(t, "plan", "docs", "--config", cfg)
	require.Equal(t, 0, code)
	require.Contains(t, out, "~ docs:rfc7239.txt (content changed)")
	require.Contains(t, out, "0 to add, 1 to change")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, out, errOut := kgsync(t, "validate", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ok, 2 pipeline(s)")
	// Only the tables pipeline has a data model to match against its CSV
	// headers; the documents pipeline has none and says nothing of one.
	require.Equal(t, 1, strings.Count(out, "model matches the CSV headers"), out)
	require.Contains(t, out, "tables: 1 source(s), sink cypherl, embedder hashing, no schedule\n    sources: model matches the CSV headers")

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("pipelines:\n  - name: docs\n    chunking: {max_tokens: 64, overlap_tokens: 100}\n    sources: [{files: {root: .}}]\n"), 0o644))
	code, _, errOut = kgsync(t, "validate", "--config", bad)
	require.Equal(t, 3, code)
	require.Contains(t, errOut, "pipelines[0].chunking.max_tokens")

	require.NoError(t, os.WriteFile(bad, []byte("pipelines:\n  - name: docs\n    sources: [{files: {root: .}}]\n    schedul: \"@every 5m\"\n"), 0o644))
	code, _, errOut = kgsync(t, "validate", "--config", bad)
	require.Equal(t, 3, code)
	require.Contains(t, errOut, `"schedul"`)
	require.Contains(t, errOut, "bad.yaml:4")
}

func TestResyncNeedsOneMode(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "resync", "docs", "--config", cfg)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "exactly one of")
	code, _, _ = kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code)
	code, out, errOut := kgsync(t, "resync", "docs", "--rebuild-graph", "--json", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	var j runJSON
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &j))
	require.Zero(t, j.Chunks.Embedded, "rebuilding the graph costs no embedding call")
	require.Zero(t, j.Records.Read, "a rebuild reads no source")
	require.Equal(t, 3, j.Records.Rebuilt, "it counts what it rebuilt")
	require.Positive(t, j.Chunks.Rebuilt)
	require.Positive(t, j.Sink.Statements)
	// The rebuild's file loads fast on its own: it starts with the
	// schema file's statements (label-property and text indexes, the
	// drops of the vector indexes); the vector indexes stay in
	// vector-indexes.cypherl, replayed after the data, which creates them
	// without dropping (files for 3.8 or later: a duplicate is a
	// notification, so loading it onto a loaded graph rebuilds nothing).
	files, err := filepath.Glob(filepath.Join(filepath.Dir(cfg), ".kgsync", "cypherl", "docs", "0*-run*.cypherl"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	body, err := os.ReadFile(files[1])
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(body), "CREATE INDEX ON :`"), "%.200s", body)
	require.NotContains(t, string(body), "CREATE VECTOR INDEX")
	vec, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), ".kgsync", "cypherl", "docs", "vector-indexes.cypherl"))
	require.NoError(t, err)
	require.Contains(t, string(vec), "CREATE VECTOR INDEX `chunk_embedding`")
	require.NotContains(t, string(vec), "DROP VECTOR INDEX")
}

func TestUnknownPipeline(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "nope", "--config", cfg)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `no pipeline "nope"`)
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, out, errOut := kgsync(t, "migrate", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "migrations applied")
}

func TestQuickstartTablesSchemaAndSearch(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, out, errOut := kgsync(t, "sync", "tables", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var j runJSON
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &j))
	// MANIFEST.md: 21 sections, 6940 HS rows, 19 guides, 340 heading→guide
	// rows, 213 FAQ rows.
	require.Equal(t, 21+6940+19+340+213, j.Records.New)

	code, out, errOut = kgsync(t, "schema", "tables", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "| `cn_code` | 6940 |")
	require.Contains(t, out, "| `REQUIRES_GUIDE` | `cn_code` | `guide` | 340 |")
	// Every code has a parent row (the TOTAL root is its own parent).
	require.Contains(t, out, "| `PARENT` | `cn_code` | `cn_code` | 6940 |")
	require.Contains(t, out, "`faq_question_embedding`")

	code, out, errOut = kgsync(t, "search", "--config", cfg, "-p", "tables", "--anchor", "cn_code", "--json", "-k", "3", "Horses, asses, mules and hinnies; live")
	require.Equal(t, 0, code, errOut)
	var found struct {
		Hits []struct {
			ID    string         `json:"id"`
			Ranks map[string]int `json:"ranks"`
		} `json:"hits"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &found))
	require.Len(t, found.Hits, 3)
	require.Equal(t, "hs_code:0101", found.Hits[0].ID, "the exact description is the best hit")
	require.Equal(t, 1, found.Hits[0].Ranks["vector"], "and the nearest vector")
	require.Equal(t, 1, found.Hits[0].Ranks["lexical"], "and the best BM25 match")

	// The README's search of one attribute: a question asking a quantity
	// whose row holds the question word for word. The number it asks for
	// is the row's (its answer), not in the question's text, so the floor
	// does not decline it for a missing number.
	code, out, errOut = kgsync(t, "search", "--config", cfg, "-p", "tables", "--anchor", "faq", "--attribute", "question", "--json", "-k", "3",
		"how long does the virus survive on surfaces")
	require.Equal(t, 0, code, errOut)
	var faq struct {
		Declined bool   `json:"declined"`
		Reason   string `json:"reason"`
		Hits     []struct {
			ID string `json:"id"`
		} `json:"hits"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &faq))
	require.False(t, faq.Declined, faq.Reason)
	require.NotEmpty(t, faq.Hits)
	require.Equal(t, "faq:132", faq.Hits[0].ID, "How long does the virus survive on surfaces?")

	code, out, _ = kgsync(t, "sync", "tables", "--config", cfg, "--json")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &j))
	require.Zero(t, j.Sink.Statements)
	require.Zero(t, j.Chunks.Embedded)

	// The CSV files are unchanged, so nothing is read: the summary and the
	// plan say why there are 0 unchanged records, not 7,533.
	for _, cmd := range []string{"sync", "plan"} {
		code, out, errOut = kgsync(t, cmd, "tables", "--config", cfg)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "0 skipped (nothing listed: the sources report no change since the last run, or hold nothing)", cmd)
	}
}

// TestEvalRunsThePipelinesGoldenSet: without a file argument, eval runs
// the golden set the pipeline's config names (eval.golden); a pipeline
// without one is an error that says what to do.
func TestEvalRunsThePipelinesGoldenSet(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := kgsync(t, "eval", "--config", cfg, "-p", "docs", "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Questions int `json:"questions"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &rep))
	golden, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "golden.jsonl"))
	require.NoError(t, err)
	require.Equal(t, strings.Count(strings.TrimSpace(string(golden)), "\n")+1, rep.Questions, "every question of examples/quickstart/golden.jsonl")

	code, _, errOut = kgsync(t, "eval", "--config", cfg, "-p", "tables")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `pipeline "tables" has no golden set`)
}

// TestEvalHeldOutAndCalibrate: eval reports several golden sets, a held-out
// one marked so, and --calibrate stores the floor's calibration for the
// pipeline's embedder, measured on the sets not held out, where searches
// read it.
func TestEvalHeldOutAndCalibrate(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	dir := filepath.Dir(cfg)
	golden, err := os.ReadFile(filepath.Join(dir, "golden.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(golden)), "\n")
	held := filepath.Join(dir, "held.jsonl")
	require.NoError(t, os.WriteFile(held, []byte("# HELD OUT: never tuned on\n"+strings.Join(lines[:5], "\n")+"\n"), 0o644))
	code, out, errOut := kgsync(t, "eval", "--config", cfg, "-p", "docs", "--modes", "hybrid", "--calibrate", held, filepath.Join(dir, "golden.jsonl"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "golden "+held+" (HELD-OUT set)")
	require.Contains(t, out, "(tuning set)")
	require.Contains(t, out, "declined or low confidence")
	require.Contains(t, out, fmt.Sprintf("from %d questions of the sets not held out", len(lines)))
	b, err := os.ReadFile(filepath.Join(dir, ".kgsync", "floor-calibration.json"))
	require.NoError(t, err)
	var f struct {
		Calibrations []struct {
			Embedder    string  `json:"embedder"`
			MinEvidence float64 `json:"min_evidence"`
			Questions   int     `json:"questions"`
		} `json:"calibrations"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	require.Len(t, f.Calibrations, 1)
	require.Equal(t, "hashing/hashing-v1/384", f.Calibrations[0].Embedder)
	require.Equal(t, len(lines), f.Calibrations[0].Questions)
	require.Positive(t, f.Calibrations[0].MinEvidence)

	code, _, errOut = kgsync(t, "eval", "--config", cfg, "-p", "docs", "--modes", "hybrid", "--calibrate", held)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "every golden set is held out")
}

// TestEvalVerboseResultsPrintsTheModesRun: --verbose-results gives each
// question's outcome in every mode the run measured; with --modes
// hybrid+expand (no hybrid results) it printed "@1 0.00 @k 0.00" for every
// question, found or not.
func TestEvalVerboseResultsPrintsTheModesRun(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := kgsync(t, "eval", "--config", cfg, "-p", "docs", "--modes", "hybrid+expand", "--verbose-results")
	require.Equal(t, 0, code, errOut)
	found := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "\tdeclined ") {
			continue
		}
		require.Contains(t, line, "\thybrid+expand @1 ", line)
		require.NotContains(t, line, "\thybrid @1", "hybrid was not run: "+line)
		if strings.Contains(line, "hybrid+expand @1 1.00") {
			found++
		}
	}
	require.Positive(t, found, "questions found at rank 1 show it:\n"+out)
}
