package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// gristConfig writes a config with one pipeline "tariff" reading srv's
// document (tables: the given list, or every table when nil) and returns
// its path.
func gristConfig(t *testing.T, srv *gristtest.Server, secret string, tables []string) string {
	t.Helper()
	dir := t.TempDir()
	tl := ""
	if tables != nil {
		tl = "\n          tables: [" + strings.Join(tables, ", ") + "]"
	}
	yaml := `state:
  driver: sqlite
  path: state.db
daemon:
  webhook_secret: "` + secret + `"
embedder:
  provider: hashing
  dimensions: 8
pipelines:
  - name: tariff
    sources:
      - name: grist
        grist:
          server: ` + srv.URL + `
          doc_id: ` + gristtest.DocID + `
          api_key: ` + gristtest.APIKey + tl + `
`
	path := filepath.Join(dir, "kgsync.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

func installLines(t *testing.T, out string) []webhookResult {
	t.Helper()
	var rs []webhookResult
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r webhookResult
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		rs = append(rs, r)
	}
	return rs
}

func TestGristWebhooksInstall(t *testing.T) {
	t.Parallel()
	srv := gristtest.New(t)
	for _, tbl := range []string{"Guides", "HSCodes", "FAQ"} {
		srv.AddTable(tbl, gristtest.Column{ID: "title"})
	}
	// Someone else's webhook on the document stays as it is.
	other := gristtest.Webhook{Fields: gristtest.WebhookFields{URL: "http://elsewhere.example/hook", TableID: "FAQ",
		EventTypes: []string{"update"}, Enabled: true, Name: "not ours"}}
	req, err := http.NewRequest("POST", srv.URL+"/api/docs/"+gristtest.DocID+"/webhooks",
		strings.NewReader(`{"webhooks":[{"fields":{"url":"http://elsewhere.example/hook","tableId":"FAQ","eventTypes":["update"],"name":"not ours"}}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+gristtest.APIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	cfg := gristConfig(t, srv, "s3cret-1", []string{"HSCodes", "Guides"})
	code, out, errOut := kgsync(t, "grist", "webhooks", "install", "tariff", "--public-url", "https://kg.example.com/", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	rs := installLines(t, out)
	require.Len(t, rs, 2)
	require.Equal(t, "created", rs[0].Action)
	require.Equal(t, "HSCodes", rs[0].Table, "configured order")
	require.Equal(t, "https://kg.example.com/hooks/grist/tariff/HSCodes", rs[0].URL)

	hooks := srv.Webhooks()
	require.Len(t, hooks, 3)
	require.Equal(t, other.Fields.Name, hooks[0].Fields.Name)
	h := hooks[1]
	require.Equal(t, rs[0].ID, h.ID)
	require.Equal(t, "https://kg.example.com/hooks/grist/tariff/HSCodes", h.Fields.URL)
	require.Equal(t, "HSCodes", h.Fields.TableID)
	require.Equal(t, []string{"add", "update"}, h.Fields.EventTypes)
	require.Equal(t, "Bearer s3cret-1", h.Fields.Authorization, "what the daemon's webhook route accepts")
	require.True(t, h.Fields.Enabled)
	require.Nil(t, h.Fields.IsReadyColumn)
	require.Equal(t, "kgsync tariff HSCodes", h.Fields.Name)
	require.Equal(t, 1+1, srv.Requests("POST", "/webhooks"), "both created in one POST")

	// Again: nothing to do, nothing sent but the two reads.
	srv.ResetCounts()
	code, out, errOut = kgsync(t, "grist", "webhooks", "install", "tariff", "--public-url", "https://kg.example.com", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "grist/HSCodes: unchanged webhook "+rs[0].ID)
	require.Zero(t, srv.Requests("POST", "")+srv.Requests("PATCH", ""))
	require.Len(t, srv.Webhooks(), 3)

	// Disabled by hand and the secret rotated: one PATCH per webhook.
	req, err = http.NewRequest("PATCH", srv.URL+"/api/docs/"+gristtest.DocID+"/webhooks/"+rs[1].ID, strings.NewReader(`{"enabled":false}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+gristtest.APIKey)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	srv.ResetCounts()
	cfg2 := gristConfig(t, srv, "s3cret-2", []string{"HSCodes", "Guides"})
	code, out, errOut = kgsync(t, "grist", "webhooks", "install", "tariff", "--public-url", "https://kg.example.com", "--config", cfg2, "--json")
	require.Equal(t, 0, code, errOut)
	rs2 := installLines(t, out)
	require.Equal(t, []string{"authorization"}, rs2[0].Changed)
	require.Equal(t, []string{"authorization", "enabled"}, rs2[1].Changed)
	require.Equal(t, 2, srv.Requests("PATCH", ""))
	for _, h := range srv.Webhooks()[1:] {
		require.Equal(t, "Bearer s3cret-2", h.Fields.Authorization)
		require.True(t, h.Fields.Enabled)
	}
	require.NotContains(t, out+errOut, "s3cret", "the secret is never printed")

	// Without tables in the config: every user table, FAQ added.
	cfg3 := gristConfig(t, srv, "s3cret-2", nil)
	code, out, errOut = kgsync(t, "grist", "webhooks", "install", "tariff", "--public-url", "https://kg.example.com", "--config", cfg3, "--json")
	require.Equal(t, 0, code, errOut)
	rs3 := installLines(t, out)
	require.Len(t, rs3, 3)
	require.Equal(t, []string{"FAQ", "created"}, []string{rs3[0].Table, rs3[0].Action})
	require.Equal(t, "unchanged", rs3[1].Action)
	require.Len(t, srv.Webhooks(), 4)

	// A table renamed in Grist: its webhook follows the table (Grist keeps
	// it by tableRef) but still posts to the old route; once the config
	// names the new table, install patches the URL instead of adding a
	// second webhook.
	srv.RenameTable("Guides", "Manuals")
	cfg4 := gristConfig(t, srv, "s3cret-2", []string{"HSCodes", "Manuals"})
	code, out, errOut = kgsync(t, "grist", "webhooks", "install", "tariff", "--public-url", "https://kg.example.com", "--config", cfg4, "--json")
	require.Equal(t, 0, code, errOut)
	rs4 := installLines(t, out)
	require.Equal(t, "updated", rs4[1].Action)
	require.Equal(t, []string{"url", "name", "memo"}, rs4[1].Changed)
	require.Equal(t, rs[1].ID, rs4[1].ID)
	require.Len(t, srv.Webhooks(), 4)
	for _, h := range srv.Webhooks() {
		require.NotContains(t, h.Fields.URL, "/Guides")
	}
}

func TestGristWebhooksInstallErrors(t *testing.T) {
	t.Parallel()
	srv := gristtest.New(t)
	srv.AddTable("Guides", gristtest.Column{ID: "title"})
	cfg := gristConfig(t, srv, "s", []string{"Guides"})
	code, _, errOut := kgsync(t, "grist", "webhooks", "install", "tariff", "--public-url", "kg.example.com", "--config", cfg)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--public-url")
	code, _, errOut = kgsync(t, "grist", "webhooks", "install", "nope", "--public-url", "https://kg", "--config", cfg)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `no pipeline "nope"`)
	code, _, errOut = kgsync(t, "grist", "webhooks", "install", "tariff", "--public-url", "https://kg", "--config", gristConfig(t, srv, "", nil))
	require.Equal(t, 3, code)
	require.Contains(t, errOut, "daemon.webhook_secret")

	// A configured table the document lacks: Grist's 404 is reported.
	code, _, errOut = kgsync(t, "grist", "webhooks", "install", "tariff", "--public-url", "https://kg", "--config", gristConfig(t, srv, "s", []string{"Gone"}))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `POST /webhooks: HTTP 404: Table not found "Gone"`)
	require.NotContains(t, errOut, gristtest.APIKey)
	require.Empty(t, srv.Webhooks())
}
