package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/testlog"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/state/sqlite"
)

// Hostile and malformed input through the CLI: identifiers from data
// cannot inject Cypher, and secrets never reach logs, errors or output.

// splitStatements splits CYPHERL text into statements the way mgconsole
// does (sink.ValidName's doc, docs/memgraph.md §7): at ';' outside '…' and
// "…" strings (backslash escapes inside them), not treating backticks as
// quotes. It returns the statements and whether a string was left open.
func splitStatements(text string) (stmts []string, open bool) {
	var cur strings.Builder
	var quote rune
	escaped := false
	for _, r := range text {
		cur.WriteRune(r)
		switch {
		case quote != 0 && escaped:
			escaped = false
		case quote != 0 && r == '\\':
			escaped = true
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '\'' || r == '"'):
			quote = r
		case quote == 0 && r == ';':
			stmts = append(stmts, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		stmts = append(stmts, strings.TrimSpace(cur.String()))
	}
	return stmts, quote != 0
}

func TestSplitStatements(t *testing.T) {
	t.Parallel()
	got, open := splitStatements("MATCH (n:`a;b`) RETURN 'x;y';\nRETURN \"q\\\";\";\n")
	require.False(t, open)
	// The ';' inside the backtick name cuts the first statement: that is why
	// ValidName refuses ';' in names.
	require.Equal(t, []string{"MATCH (n:`a;", "b`) RETURN 'x;y';", "RETURN \"q\\\";\";"}, got)
}

// hostileNames are identifiers a CSV header or table name can carry.
var hostileNames = []string{
	"na`me",                 // backtick: quoted by doubling
	"x` RETURN 1 //",        // an attempt to close the quote
	"a;b",                   // ends a CYPHERL statement
	"it's",                  // opens a string in mgconsole
	`say "hi"`,              // likewise
	"line\nbreak",           // breaks the one-statement-per-line file
	"para\u2028graph",       // Unicode line separator
	"\uff40fullwidth\uff40", // U+FF40 looks like a backtick but is a letter to Cypher
	"tab\there",
	"  spaced  ",
}

// hostileConfig writes a CSV table source whose table name and one header
// are the given names, with a CYPHERL sink, and returns the config path.
func hostileConfig(t *testing.T, table, header string) string {
	t.Helper()
	dir := t.TempDir()
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	require.NoError(t, w.Write([]string{"id", header}))
	require.NoError(t, w.Write([]string{"1", "first value"}))
	require.NoError(t, w.Write([]string{"2", "second; value with 'quotes' and `backticks`"}))
	w.Flush()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.csv"), buf.Bytes(), 0o644))
	tq, err := json.Marshal(table) // a JSON string is a YAML double-quoted scalar
	require.NoError(t, err)
	cfg := fmt.Sprintf(`state: {driver: sqlite, path: state.db}
sink: {type: cypherl, cypherl: {dir: out}}
embedder: {provider: hashing, dimensions: 8}
pipelines:
  - name: t
    sources:
      - name: csv
        csv:
          tables:
            - path: t.csv
              table: %s
              key: id
`, tq)
	path := filepath.Join(dir, "kgsync.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// cypherlText returns every CYPHERL file the run wrote, concatenated.
func cypherlText(t *testing.T, cfg string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(filepath.Dir(cfg), "out", "t", "*.cypherl"))
	require.NoError(t, err)
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all.Write(b)
	}
	return all.String()
}

// checkHostile runs sync on a config whose table name and header are
// table and header (the header hostile, name) and checks the two allowed
// outcomes: the name is refused — its column is left out of every row and
// quarantined naming it, the run is partial and the name appears nowhere
// in the file — or it is accepted and every line of the file is exactly
// one statement in which the name appears only backtick-quoted.
func checkHostile(t *testing.T, name, table, header string) {
	t.Helper()
	cfg := hostileConfig(t, table, header)
	code, _, errOut := kgsync(t, "sync", "--config", cfg, "--log-level", "debug")
	text := cypherlText(t, cfg)
	if sink.ValidName(name) != nil {
		// ValidName's rules (';', quotes, control and line-break characters)
		// decide, independently of the run, that the name must be refused.
		require.Equal(t, exitPartial, code, "name %q: %s", name, errOut)
		require.NotContains(t, text, name, "the column is left out")
		require.Contains(t, text, "MERGE", "the rows are written without it")
		store, err := sqlite.Open(context.Background(), filepath.Join(filepath.Dir(cfg), "state.db"))
		require.NoError(t, err)
		defer store.Close()
		qs, err := store.QuarantineList(context.Background(), "t")
		require.NoError(t, err)
		require.Len(t, qs, 1)
		require.Contains(t, qs[0].Error, fmt.Sprintf("%q", name), "the quarantine names the identifier")
		return
	}
	require.Equal(t, 0, code, "name %q: %s", name, errOut)
	require.Contains(t, text, sink.QuoteName(name))
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	require.NotEmpty(t, lines)
	for _, line := range lines {
		stmts, open := splitStatements(line)
		require.False(t, open, "line opens a string: %s", line)
		require.Len(t, stmts, 1, "line is not one statement: %s", line)
		require.True(t, strings.HasSuffix(line, ";"), line)
	}
	// Outside its quoted form the name never appears in the Cypher text
	// (values are literals, so the record's own text may contain it only
	// inside strings; our values do not).
	require.NotContains(t, strings.ReplaceAll(text, sink.QuoteName(name), ""), name)
}

func TestHostileHeaderCannotInjectCypher(t *testing.T) {
	t.Parallel()
	for _, name := range hostileNames {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			t.Parallel()
			checkHostile(t, name, "items", name)
		})
	}
}

// A configured table name is an identifier the config itself restricts
// (^[A-Za-z_][A-Za-z0-9_]*$): every hostile one is refused when the config
// is loaded (exit 3), naming it, before anything is read or written.
func TestHostileTableNameIsRefusedByConfig(t *testing.T) {
	t.Parallel()
	for _, name := range hostileNames {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			t.Parallel()
			cfg := hostileConfig(t, name, "title")
			code, _, errOut := kgsync(t, "sync", "--config", cfg)
			require.Equal(t, 3, code, errOut)
			require.Contains(t, errOut, "csv.tables[0].table")
			require.Contains(t, errOut, fmt.Sprintf("%q", name))
			_, err := os.Stat(filepath.Join(filepath.Dir(cfg), "out"))
			require.ErrorIs(t, err, os.ErrNotExist, "nothing written")
		})
	}
}

// Secrets used below; each must appear in no output.
const (
	secretOpenAI   = "sk-test-9f8e7d6c5b4a3210"
	secretPG       = "pgSecretPw-4c1d"
	secretHook     = "hook-secret-e5a1b7"
	secretAPIToken = "api-token-77aa19"
)

func TestSecretsNeverInOutput(t *testing.T) {
	t.Parallel()
	// An OpenAI-compatible server that refuses the key and echoes it back,
	// as a hostile or careless provider might.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer srv.Close()

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "a.md"), []byte("# A\n\nSome text to embed.\n"), 0o644))
	base := func(state string) string {
		return fmt.Sprintf(`%s
sink: {type: cypherl, cypherl: {dir: out}}
embedder: {provider: openai, model: text-embedding-3-small, dimensions: 8, base_url: %q, api_key: %q, max_retries: 0}
daemon: {webhook_secret: %q, api_token: %q}
log: {level: debug}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: docs}}]
`, state, srv.URL, secretOpenAI, secretHook, secretAPIToken)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	sqliteCfg := write("sqlite.yaml", base("state: {driver: sqlite, path: state.db}"))
	// Postgres on a port nothing listens on: the connection fails with the
	// DSN's password in the DSN.
	port := freePort(t)
	pgDown := write("pgdown.yaml", base(fmt.Sprintf("state: {driver: postgres, dsn: \"postgres://postgres:%s@127.0.0.1:%d/test?connect_timeout=2\"}", secretPG, port)))
	// A DSN whose database does not exist: the server answers with an error.
	pgBadDB := write("pgbaddb.yaml", base(fmt.Sprintf("state: {driver: postgres, dsn: \"postgres://postgres:%s@127.0.0.1:5432/no_such_db_%d?connect_timeout=2\"}", secretPG, port)))

	var outputs []string
	capture := func(wantFail bool, args ...string) {
		code, out, errOut := kgsync(t, args...)
		if wantFail {
			require.NotEqual(t, 0, code, "%v: %s", args, out+errOut)
		} else {
			require.Equal(t, 0, code, "%v: %s", args, out+errOut)
		}
		// Only what kgsync printed: the arguments hold the token.
		outputs = append(outputs, args[0]+"\n"+out+errOut)
	}
	capture(true, "sync", "--config", sqliteCfg, "--log-level", "debug")
	capture(true, "sync", "--config", sqliteCfg, "--log-level", "debug", "--json")
	capture(false, "status", "--config", sqliteCfg, "--log-level", "debug")
	capture(false, "validate", "--config", sqliteCfg, "--log-level", "debug")
	capture(false, "plan", "--config", sqliteCfg, "--log-level", "debug")
	capture(true, "sync", "--config", pgDown, "--log-level", "debug")
	capture(true, "status", "--config", pgDown, "--log-level", "debug")
	capture(true, "sync", "--config", pgBadDB, "--log-level", "debug")
	capture(true, "sync", "--remote", srv.URL, "--token", secretAPIToken, "--config", sqliteCfg, "--log-level", "debug")

	all := strings.Join(outputs, "\n")
	// The failures are explained: the provider's refusal, the unreachable
	// and the missing database.
	require.Contains(t, all, "401")
	require.Contains(t, all, fmt.Sprint(port))
	require.Contains(t, all, "no_such_db_")
	for _, secret := range []string{secretOpenAI, secretPG, secretHook, secretAPIToken} {
		require.NotContains(t, all, secret, "secret leaked:\n%s", all)
	}

	// The daemon: logs at debug, /metrics, the API and health answers.
	daemonOut := runDaemonBriefly(t, sqliteCfg)
	for _, secret := range []string{secretOpenAI, secretPG, secretHook, secretAPIToken} {
		require.NotContains(t, daemonOut, secret, "secret leaked by the daemon:\n%s", daemonOut)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// runDaemonBriefly starts `kgsync daemon` on a free port, sends a webhook
// with a wrong secret, a triggering API call, reads /metrics, /healthz and
// the API, then stops it; it returns everything the daemon printed and
// served.
func runDaemonBriefly(t *testing.T, cfg string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testlog.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"daemon", "--config", cfg, "--listen", addr, "--log-level", "debug"}, &out, &errb)
	}()
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	var served strings.Builder
	do := func(method, path, auth, body string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		fmt.Fprintf(&served, "%s %s -> %d\n%s\n", method, path, resp.StatusCode, b.String())
	}
	do("POST", "/hooks/grist/docs/T", "Bearer wrong-"+secretHook[:4], `[{"id":1}]`)
	do("POST", "/api/pipelines/docs/sync", "Bearer "+secretAPIToken, "")
	do("GET", "/api/pipelines", "Bearer "+secretAPIToken, "")
	do("GET", "/api/runs/1", "Bearer "+secretAPIToken, "")
	// The daemon's own run (queued above) ends before its metrics show.
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return strings.Contains(b.String(), "kgsync_runs_total")
	}, 10*time.Second, 20*time.Millisecond, "the daemon's run finishes")
	do("GET", "/metrics", "", "")
	do("GET", "/readyz", "", "")
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop")
	}
	s := served.String()
	require.Contains(t, s, "kgsync_runs_total", "metrics were served")
	return s + out.String() + errb.String()
}
