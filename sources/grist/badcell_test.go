package grist_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// TestUndecodableCellSkipsItsRowOnly: a /sql cell whose marshal Buffer
// cannot be decoded skips its row's record, kept as it was and named with
// why, and the other rows of the table are read (it used to fail the
// whole listing).
func TestUndecodableCellSkipsItsRowOnly(t *testing.T) {
	s := gristtest.New(t)
	s.AddTable("T", gristtest.Column{ID: "name"}, gristtest.Column{ID: "v", Type: "Any", IsFormula: true})
	ids := s.AddRows("T", map[string]any{"name": "a", "v": "plain"},
		map[string]any{"name": "b", "v": []any{"L", "x"}}, map[string]any{"name": "c", "v": 1.5})
	target, err := url.Parse(s.URL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodPost || !strings.HasSuffix(resp.Request.URL.Path, "/sql") {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		// Every Buffer starts with type code '?', which marshal has not.
		body = regexp.MustCompile(`"data":\[\d+`).ReplaceAll(body, []byte(`"data":[63`))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	proxy := httptest.NewServer(rp)
	t.Cleanup(proxy.Close)
	src := newSource(t, s, func(c *grist.Config) { c.Server = proxy.URL })
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Contains(t, l.records, "T:"+strconv.FormatInt(ids[0], 10))
	require.Contains(t, l.records, "T:"+strconv.FormatInt(ids[2], 10))
	require.NotContains(t, l.records, "T:"+strconv.FormatInt(ids[1], 10))
	var skipped []string
	for _, pg := range l.pages {
		for _, sk := range pg.Skipped {
			skipped = append(skipped, sk.Key)
			require.ErrorContains(t, sk.Err, "column v")
		}
	}
	require.Equal(t, []string{"T:" + strconv.FormatInt(ids[1], 10)}, skipped)
}
