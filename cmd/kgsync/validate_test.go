package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestValidateOnline: validate --online asks each Memgraph sink's server
// for its version and probes edge properties; a bare Memgraph binary
// (edge properties off) fails a pipeline of documents with the flag named.
func TestValidateOnline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, bare := bolttest.Start(t), bolttest.Start(t)
	good.EmulateMemgraph(bolttest.Memgraph{Version: "3.8.1"})
	bare.EmulateMemgraph(bolttest.Memgraph{NoEdgeProperties: true})
	cfg := func(uri string) string {
		return writeFile(t, filepath.Join(dir, "kgsync-"+filepath.Base(uri)+".yaml"), `
state: {driver: sqlite, path: state.db}
sink: {type: memgraph, memgraph: {uri: "`+uri+`"}}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: .}}]
`)
	}
	code, out, errOut := kgsync(t, "validate", "--online", "--config", cfg(good.URI()))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "server: Memgraph 3.8.1, edge properties on, text search on the server")

	code, out, errOut = kgsync(t, "validate", "--online", "--config", cfg(bare.URI()))
	require.Equal(t, 3, code, out)
	// Each problem is printed once, on stdout; stderr sums up.
	require.Contains(t, out, "--storage-properties-on-edges=true")
	require.Contains(t, out, "CROSS_REF (_key, text)")
	require.Equal(t, "kgsync: the config has the problems listed above\n", errOut)
}

// TestValidateOnlineVersions: validate --online says, for each row of the
// version table, where a documents pipeline's lexical search comes from,
// and passes on every supported version (the first sync on 3.1–3.5 failed
// creating the first text index although validate said OK); a CYPHERL
// sink names the version its files are for.
func TestValidateOnlineVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, v := range []string{"3.1.0", "3.5.0", "3.6.0", "3.12.0"} {
		srv := bolttest.Start(t)
		srv.EmulateMemgraph(bolttest.Memgraph{Version: v})
		cfg := writeFile(t, filepath.Join(dir, "kgsync-"+v+".yaml"), `
state: {driver: sqlite, path: state.db}
sink: {type: memgraph, memgraph: {uri: "`+srv.URI()+`"}}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: .}}]
`)
		code, out, errOut := kgsync(t, "validate", "--online", "--config", cfg)
		require.Equal(t, 0, code, "%s: %s", v, errOut)
		row, err := sink.MemgraphFeatures(v)
		require.NoError(t, err)
		if row.TextIndexes {
			require.Contains(t, out, "server: Memgraph "+v+", edge properties on, text search on the server", v)
		} else {
			require.Contains(t, out, "server: Memgraph "+v+", edge properties on, no text search on the server (before 3.6): lexical search from kgsync's state", v)
		}
	}
	for _, c := range []struct{ version, want string }{
		{"", "CYPHERL files for Memgraph 3.8 (3.8–3.10), loaded into a server started with --storage-properties-on-edges=true"},
		{"3.4", "CYPHERL files for Memgraph 3.4 (3.1–3.5), loaded into a server started with"},
		{"3.4", "no text search on the server (before 3.6): lexical search from kgsync's state"},
	} {
		cfg := writeFile(t, filepath.Join(dir, "kgsync-cypherl.yaml"), `
state: {driver: sqlite, path: state.db}
sink: {type: cypherl, cypherl: {dir: out, memgraph_version: "`+c.version+`"}}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: .}}]
`)
		code, out, errOut := kgsync(t, "validate", "--online", "--config", cfg)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, c.want)
	}
	cfg := writeFile(t, filepath.Join(dir, "kgsync-old.yaml"), `
sink: {type: cypherl, cypherl: {dir: out, memgraph_version: "3.0"}}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: .}}]
`)
	code, _, errOut := kgsync(t, "validate", "--config", cfg)
	require.Equal(t, 3, code)
	require.Contains(t, errOut, "memgraph_version")
}

// TestValidateSharedIndex: two pipelines writing to one graph with
// different embedding dimensions would share chunk_embedding; validate
// refuses the config.
func TestValidateSharedIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "kgsync.yaml"), `
state: {driver: sqlite, path: state.db}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: .}}]
  - name: more
    embedder: {provider: hashing, dimensions: 32}
    sources: [{name: more, files: {root: .}}]
`)
	code, _, errOut := kgsync(t, "validate", "--config", path)
	require.Equal(t, 3, code)
	require.Contains(t, errOut, `pipelines "docs" and "more" share vector index name chunk_embedding`)
}

// TestValidateModelAgainstSources: validate checks the data model against
// the CSV headers offline, and with --online against the live Grist
// document: missing columns, an embeddable number, a link column that is no
// Ref or refers to another anchor's table, and a key column that holds
// lists are each reported with their config path (exit 3).
func TestValidateModelAgainstSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "faq.csv"), "id,question,answer\n1,Q?,A.\n")
	csvCfg := writeFile(t, filepath.Join(dir, "csv.yaml"), `
state: {driver: sqlite, path: state.db}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: faq
    sources: [{csv: {tables: [{path: faq.csv, table: faq, key: id}]}}]
    model:
      anchors:
        - name: faq
          attributes:
            - {name: question, embeddable: true}
            - {name: answer_text, embeddable: true}
`)
	code, out, errOut := kgsync(t, "validate", "--config", csvCfg)
	require.Equal(t, 3, code, out)
	require.Contains(t, out, `pipelines[0].model.anchors[0].attributes[1]: table "faq" has no column "answer_text" (columns: answer, id, question)`)
	require.NotContains(t, errOut, "answer_text", "printed once, on stdout")

	srv := gristtest.New(t)
	srv.AddTable("HSCodes", gristtest.Column{ID: "hscode"}, gristtest.Column{ID: "description"},
		gristtest.Column{ID: "parent", Type: "Ref:HSCodes"}, gristtest.Column{ID: "level", Type: "Int"}, gristtest.Column{ID: "tags", Type: "ChoiceList"})
	srv.AddTable("Guides", gristtest.Column{ID: "guide_id", Type: "Int"}, gristtest.Column{ID: "title"})
	grist := func(model string) string {
		return writeFile(t, filepath.Join(dir, "grist.yaml"), `
state: {driver: sqlite, path: state.db}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: tariff
    sources:
      - grist: {server: "`+srv.URL+`", doc_id: `+gristtest.DocID+`, api_key: `+gristtest.APIKey+`, tables: [HSCodes, Guides], key_columns: {HSCodes: tags}}
    model:
`+model)
	}
	bad := grist(`      anchors:
        - name: cn_code
          table: HSCodes
          attributes:
            - {name: description, embeddable: true}
            - {name: level, embeddable: true}
            - {name: desc_text}
          links:
            - {name: PARENT, column: hscode, to: cn_code}
            - {name: UP, column: parent, to: guide}
        - name: guide
          table: Guides
`)
	code, out, _ = kgsync(t, "validate", "--config", bad)
	require.Equal(t, 0, code, "offline, a Grist document's columns are not known: %s", out)
	code, out, _ = kgsync(t, "validate", "--online", "--config", bad)
	require.Equal(t, 3, code, out)
	for _, want := range []string{
		`pipelines[0].model.anchors[0].attributes[1]: embeddable, but column "level" of table "HSCodes" is number: only text is embedded`,
		`pipelines[0].model.anchors[0].attributes[2]: table "HSCodes" has no column "desc_text"`,
		`pipelines[0].model.anchors[0].links[0]: column "hscode" of table "HSCodes" is text, not a Ref or RefList: no edge is made`,
		`pipelines[0].model.anchors[0].links[1]: links to anchor "guide" (table "Guides"), but column "parent" refers to table "HSCodes"`,
		`pipelines[0].sources[0].grist.key_columns.HSCodes: key column "tags" of table "HSCodes" is list: a key must be a single value`,
	} {
		require.Contains(t, out, want)
	}
	good := grist(`      anchors:
        - name: cn_code
          table: HSCodes
          attributes: [{name: description, embeddable: true}]
          links: [{name: PARENT, column: parent, to: cn_code}]
`)
	code, out, _ = kgsync(t, "validate", "--online", "--config", good)
	require.Equal(t, 3, code, "the key column is still a list: %s", out)
	require.NotContains(t, out, "anchors[0]")
}

// TestValidateOnlineAfterRename: a column and a table renamed in Grist
// after a sync are followed by sync (the state remembers them by colRef
// and tableRef); validate --online reads the same memory, so it reports
// the renames as warnings with their remedy and exits 0.
func TestValidateOnlineAfterRename(t *testing.T) {
	t.Parallel()
	srv := gristtest.New(t)
	srv.AddTable("HSCodes", gristtest.Column{ID: "hscode"}, gristtest.Column{ID: "description"})
	srv.AddRows("HSCodes", map[string]any{"hscode": "01", "description": "Live animals"},
		map[string]any{"hscode": "02", "description": "Meat"})
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "kgsync.yaml"), `
state: {driver: sqlite, path: state.db}
sink: {cypherl: {dir: out}}
embedder: {provider: hashing, dimensions: 16}
pipelines:
  - name: tariff
    sources:
      - name: grist
        grist:
          server: `+srv.URL+`
          doc_id: `+gristtest.DocID+`
          api_key: `+gristtest.APIKey+`
          key_columns: {HSCodes: hscode}
    model:
      anchors:
        - name: cn_code
          table: HSCodes
          attributes:
            - {name: code, column: hscode}
            - {name: description, embeddable: true}
`)
	code, _, errOut := kgsync(t, "sync", "--config", path)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := kgsync(t, "validate", "--online", "--config", path)
	require.Equal(t, 0, code, out+errOut)

	srv.RenameColumn("HSCodes", "description", "desc_text")
	code, out, errOut = kgsync(t, "sync", "--config", path)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = kgsync(t, "validate", "--online", "--config", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `add column: "desc_text" to pipelines[0].model.anchors[0].attributes[1]`)

	srv.RenameTable("HSCodes", "Codes")
	code, out, errOut = kgsync(t, "sync", "--config", path)
	require.Equal(t, 0, code, out+errOut)
	code, out, errOut = kgsync(t, "validate", "--online", "--config", path)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, `change pipelines[0].model.anchors[0].table, pipelines[0].sources[0].grist.key_columns.HSCodes to "Codes"`)
}
