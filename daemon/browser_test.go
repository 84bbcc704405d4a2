package daemon

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
)

// TestBrowsersCannotDriveTheLoopbackAPI: a web page open on this machine
// could POST a re-embed with mass-delete confirmation to the loopback API
// (202), and a DNS-rebinding page could read it. Cross-origin and
// cross-site requests, form content types and foreign Host names are
// refused, and state-changing calls need the token unless the operator
// set daemon.anonymous_writes.
func TestBrowsersCannotDriveTheLoopbackAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{strict: true, daemon: config.Daemon{AnonymousWrites: true}})
	sync := "/api/pipelines/p/sync?mode=reembed&allow_mass_delete=true"
	for _, tc := range []struct {
		name   string
		method string
		path   string
		header map[string]string
		body   string
		want   int
	}{
		{"cross-origin POST", "POST", sync, map[string]string{"Origin": "http://evil.example"}, "", http.StatusForbidden},
		{"cross-site fetch metadata", "POST", sync, map[string]string{"Sec-Fetch-Site": "cross-site"}, "", http.StatusForbidden},
		{"HTML form", "POST", sync, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "a=b", http.StatusUnsupportedMediaType},
		{"text/plain simple request", "POST", sync, map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, "x", http.StatusUnsupportedMediaType},
		{"rebinding read", "GET", "/api/pipelines", map[string]string{"Host": "evil.example:8080"}, "", http.StatusForbidden},
		{"rebinding POST", "POST", sync, map[string]string{"Host": "rebind.evil.example"}, "", http.StatusForbidden},
		{"rebinding metrics", "GET", "/metrics", map[string]string{"Host": "evil.example"}, "", http.StatusForbidden},
	} {
		code, body := b.request(t, tc.method, tc.path, tc.header, strings.NewReader(tc.body))
		require.Equal(t, tc.want, code, "%s: %s", tc.name, body)
	}
	b.noCall(t, 200*time.Millisecond)

	// The daemon's own clients pass: same origin, loopback names.
	code, body := b.request(t, "GET", "/api/pipelines", map[string]string{"Host": "localhost:8080"}, nil)
	require.Equal(t, http.StatusOK, code, body)
	code, body = b.request(t, "POST", "/api/pipelines/p/sync", map[string]string{"Origin": b.srv.URL}, nil)
	require.Equal(t, http.StatusAccepted, code, body)
}

// TestWritesNeedTheTokenByDefault: without daemon.api_token and without
// daemon.anonymous_writes a state-changing call is refused; reads are not.
func TestWritesNeedTheTokenByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{strict: true})
	code, body := b.request(t, "POST", "/api/pipelines/p/sync", nil, nil)
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, "daemon.anonymous_writes")
	b.noCall(t, 200*time.Millisecond)
	code, body = b.request(t, "GET", "/api/pipelines", nil, nil)
	require.Equal(t, http.StatusOK, code, body)
}

// TestHookDoesNotTellPipelineNames: without the secret, a webhook to a
// known pipeline and to an unknown name get the same answer (it was 401
// against 404).
func TestHookDoesNotTellPipelineNames(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{daemon: config.Daemon{WebhookSecret: "s3cret"}})
	codeKnown, bodyKnown := b.request(t, "POST", "/hooks/grist/p/T", nil, strings.NewReader(`[{"id":1}]`))
	codeUnknown, bodyUnknown := b.request(t, "POST", "/hooks/grist/nope/T", nil, strings.NewReader(`[{"id":1}]`))
	require.Equal(t, http.StatusUnauthorized, codeKnown, bodyKnown)
	require.Equal(t, codeKnown, codeUnknown)
	require.Equal(t, bodyKnown, bodyUnknown)
	code, _ := b.request(t, "POST", "/hooks/grist/nope/T", map[string]string{"Authorization": "Bearer s3cret"}, strings.NewReader(`[{"id":1}]`))
	require.Equal(t, http.StatusNotFound, code, "the secret's holder is told")
}
