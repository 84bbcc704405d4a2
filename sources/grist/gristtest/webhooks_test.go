package gristtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/corpus"
)

// realSample reads a capture under docs/grist-samples/real (internal/corpus).
func realSample(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(corpus.GristSample(t, filepath.Join("real", rel)))
	require.NoError(t, err, "the real Grist captures must be present")
	return string(b)
}

// requestBody returns the request body of a capture's .txt file: the text
// between the blank line after the request headers and "--- response ---".
func requestBody(t *testing.T, capture string) string {
	t.Helper()
	req, _, ok := strings.Cut(capture, "--- response ---")
	require.True(t, ok)
	_, body, ok := strings.Cut(req, "\n\n")
	require.True(t, ok)
	return strings.TrimSpace(body)
}

// TestWebhooksFollowRealCaptures replays the captured webhook calls: the
// POST creating five webhooks, GET /webhooks, a PATCH disabling one, the
// refused "delete" event type; answers must equal the captures except for
// the random ids and unsubscribe keys.
func TestWebhooksFollowRealCaptures(t *testing.T) {
	s := New(t)
	for _, tbl := range []string{"Guides", "HeadingGuides", "HSCodes"} {
		s.AddTable(tbl, Column{ID: "title"})
	}
	code, body, _ := call(t, s, "POST", "/webhooks", requestBody(t, realSample(t, "webhooks/post-webhooks.txt")), nil)
	require.Equal(t, 200, code, body)
	var created struct{ Webhooks []struct{ ID string } }
	require.NoError(t, json.Unmarshal([]byte(body), &created))
	require.Len(t, created.Webhooks, 5)

	// The captured GET with this server's ids and keys put in.
	var want struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	require.NoError(t, json.Unmarshal([]byte(realSample(t, "webhooks/get-webhooks-initial.json")), &want))
	code, body, _ = call(t, s, "GET", "/webhooks", "", nil)
	require.Equal(t, 200, code)
	var got struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Webhooks, len(want.Webhooks))
	for i, w := range want.Webhooks {
		g := got.Webhooks[i]
		require.Equal(t, created.Webhooks[i].ID, g["id"])
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, g["fields"].(map[string]any)["unsubscribeKey"])
		w["id"] = g["id"]
		w["fields"].(map[string]any)["unsubscribeKey"] = g["fields"].(map[string]any)["unsubscribeKey"]
		require.Equal(t, w, g, "webhook %d", i)
	}
	// Field order as the real server writes it.
	require.Contains(t, body, `"fields":{"url":"http://127.0.0.1:8486/hook/guides","authorization":"Bearer guides-hook-secret-1","unsubscribeKey":`)

	code, body, _ = call(t, s, "PATCH", "/webhooks/"+created.Webhooks[0].ID, `{"enabled": false}`, nil)
	require.Equal(t, 200, code)
	require.JSONEq(t, realSample(t, "webhooks/patch-webhook-disable.json"), body)
	require.False(t, s.Webhooks()[0].Fields.Enabled)
	require.True(t, s.Webhooks()[1].Fields.Enabled)

	code, body, _ = call(t, s, "POST", "/webhooks", requestBody(t, realSample(t, "errors/webhook-delete-event.txt")), nil)
	require.Equal(t, 400, code)
	require.JSONEq(t, realSample(t, "errors/webhook-delete-event.json"), body)
	require.Len(t, s.Webhooks(), 5, "a refused POST creates nothing")

	code, body, _ = call(t, s, "PATCH", "/webhooks/nope", `{"enabled": true}`, nil)
	require.Equal(t, 404, code)
	require.JSONEq(t, `{"error":"Webhook not found \"nope\""}`, body)
	code, body, _ = call(t, s, "DELETE", "/webhooks/"+created.Webhooks[4].ID, "", nil)
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"success":true}`, body)
	require.Len(t, s.Webhooks(), 4)
}
