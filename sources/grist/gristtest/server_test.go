package gristtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func call(t *testing.T, s *Server, method, path, body string, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+"/api/docs/"+DocID+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+APIKey)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

func TestShapesFollowRealCaptures(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "flag", Type: "Bool"}, Column{ID: "tags", Type: "ChoiceList"}, Column{ID: "r", Type: "Numeric", IsFormula: true})
	s.AddRows("T", map[string]any{"flag": true, "tags": []any{"L", "a"}, "r": CellError{Name: "ZeroDivisionError"}})

	// /sql: Bool 0/1, list as JSON text, error as a marshal Buffer
	// (grist-samples/real/read/get-sql-Guides-select-star.json row 2 "Ratio").
	code, body, _ := call(t, s, "GET", "/sql?q="+url.QueryEscape("select * from T"), "", nil)
	require.Equal(t, 200, code)
	require.Contains(t, body, `"flag":1`)
	require.Contains(t, body, `"tags":"[\"a\"]"`)
	require.Contains(t, body, `"r":{"data":[91,2,0,0,0,117,1,0,0,0,69,117,17,0,0,0,90,101,114,111,68,105,118,105,115,105,111,110,69,114,114,111,114],"type":"Buffer"}`)
	require.Contains(t, body, `"manualSort":1`)

	// /records: null plus errors map.
	code, body, hdr := call(t, s, "GET", "/tables/T/records", "", nil)
	require.Equal(t, 200, code)
	require.Contains(t, body, `"errors":{"r":"ZeroDivisionError"}`)
	code, _, _ = call(t, s, "GET", "/tables/T/records", "", map[string]string{"If-None-Match": hdr.Get("ETag")})
	require.Equal(t, 304, code)

	code, body, _ = call(t, s, "POST", "/sql", `{"sql":"DELETE FROM T"}`, nil)
	require.Equal(t, 400, code)
	require.JSONEq(t, `{"error":"only select statements are supported"}`, body)
	code, body, _ = call(t, s, "POST", "/sql", `{"sql":"select * from T where id > ?"}`, nil)
	require.Equal(t, 500, code)
	require.JSONEq(t, `{"error":"SQLITE_MISMATCH: datatype mismatch"}`, body)
	code, body, _ = call(t, s, "GET", "/compare?left=abc&right=HEAD", "", nil)
	require.Equal(t, 500, code)
	require.JSONEq(t, `{"error":"Cannot read hash"}`, body)
	code, body, _ = call(t, s, "GET", "/tables/Nope/records", "", nil)
	require.Equal(t, 404, code)
	require.JSONEq(t, `{"error":"Table not found \"Nope\""}`, body)
}

func TestCompareListsAddedRowsTwice(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "a"})
	s.AddRows("T", map[string]any{"a": "1"}, map[string]any{"a": "2"})
	h := s.Head()
	s.AddRows("T", map[string]any{"a": "3"})
	s.UpdateRows("T", map[int64]map[string]any{1: {"a": "1b"}})
	s.DeleteRows("T", 2)
	tmp := s.AddRows("T", map[string]any{"a": "tmp"})
	s.DeleteRows("T", tmp...) // added and removed inside the range: absent
	code, body, _ := call(t, s, "GET", "/compare?left="+h+"&right=HEAD", "", nil)
	require.Equal(t, 200, code)
	var res struct {
		Left    struct{ H string }
		Details struct {
			RightChanges struct {
				TableDeltas map[string]struct {
					AddRows, UpdateRows, RemoveRows []int64
					ColumnDeltas                    map[string]map[string][]any
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	require.Equal(t, h, res.Left.H)
	d := res.Details.RightChanges.TableDeltas["T"]
	require.Equal(t, []int64{3}, d.AddRows)
	require.Equal(t, []int64{1, 3}, d.UpdateRows)
	require.Equal(t, []int64{2}, d.RemoveRows)
	require.Equal(t, []any{[]any{"2"}, nil}, d.ColumnDeltas["a"]["2"])
	require.Equal(t, []any{[]any{"1"}, []any{"1b"}}, d.ColumnDeltas["a"]["1"])
}

func TestAuth(t *testing.T) {
	s := New(t)
	req, _ := http.NewRequest("GET", s.URL+"/api/docs/"+DocID+"/tables", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode)
	require.JSONEq(t, `{"error":"Bad request: invalid API key"}`, string(b))
}

// TestSQLKeysetPagesFollowAddsAndDeletes: "where id > ? order by id limit
// n" pages see rows added and removed between pages (the server keeps its
// sorted ids between statements).
func TestSQLKeysetPagesFollowAddsAndDeletes(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "n", Type: "Int"})
	for i := range 5 {
		s.AddRows("T", map[string]any{"n": i})
	}
	page := func(after int) []int64 {
		t.Helper()
		body := `{"sql":"select id from T where id > ? order by id limit 2","args":[` + strconv.Itoa(after) + `]}`
		code, got, _ := call(t, s, "POST", "/sql", body, nil)
		require.Equal(t, 200, code, got)
		var resp struct {
			Records []struct {
				Fields struct {
					ID int64 `json:"id"`
				} `json:"fields"`
			} `json:"records"`
		}
		require.NoError(t, json.Unmarshal([]byte(got), &resp))
		var ids []int64
		for _, r := range resp.Records {
			ids = append(ids, r.Fields.ID)
		}
		return ids
	}
	require.Equal(t, []int64{1, 2}, page(0))
	s.DeleteRows("T", 3)
	require.Equal(t, []int64{4, 5}, page(2))
	s.AddRows("T", map[string]any{"n": 9}) // id 6
	require.Equal(t, []int64{6}, page(5))
	s.DeleteRows("T", 6) // the next add reuses id 6
	s.AddRows("T", map[string]any{"n": 10})
	require.Equal(t, []int64{4, 5}, page(2))
	require.Equal(t, []int64{6}, page(5))
	require.Empty(t, page(6))
	s.DeleteRows("T", 1) // as many rows as before, one of them new
	s.AddRows("T", map[string]any{"n": 11})
	require.Equal(t, []int64{7}, page(6))
}
