package gristtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWritesFollowRealCaptures creates a table and columns, adds, updates
// and deletes rows over HTTP, with the answers of
// grist-samples/real/setup/04, 14, 09, 10 and errors/*.
func TestWritesFollowRealCaptures(t *testing.T) {
	s := New(t)
	code, body, _ := call(t, s, "POST", "/tables", `{"tables":[{"id":"Docs","columns":[{"id":"path","fields":{"type":"Text","label":"Path"}}]},
		{"id":"Els","columns":[{"id":"doc","fields":{"type":"Ref:Docs"}},{"id":"text","fields":{"type":"Text"}},{"id":"with","fields":{"type":"RefList:Els"}}]}]}`, nil)
	require.Equal(t, 200, code, body)
	require.JSONEq(t, `{"tables":[{"id":"Docs"},{"id":"Els"}]}`, body)
	// A taken id gets a number, as AddTable does.
	code, body, _ = call(t, s, "POST", "/tables", `{"tables":[{"id":"docs","columns":[]}]}`, nil)
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"tables":[{"id":"docs2"}]}`, body)
	code, body, _ = call(t, s, "POST", "/tables/Els/columns", `{"columns":[{"id":"note","fields":{"type":"Text"}},{"id":"text","fields":{"type":"Text"}}]}`, nil)
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"columns":[{"id":"note"},{"id":"text2"}]}`, body)

	code, body, _ = call(t, s, "POST", "/tables/Docs/records", `{"records":[{"fields":{"path":"a.md"}}]}`, nil)
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"records":[{"id":1}]}`, body)
	code, body, _ = call(t, s, "POST", "/tables/Els/records", `{"records":[{"fields":{"doc":1,"text":"x"}},{"fields":{"doc":1,"text":"y","with":["L",1]}}]}`, nil)
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"records":[{"id":1},{"id":2}]}`, body)
	require.Equal(t, []any{"L", int64(1)}, s.Table("Els")[2]["with"])

	code, body, _ = call(t, s, "POST", "/tables/Els/records", `{"records":[{"fields":{"nope":1}}]}`, nil)
	require.Equal(t, 400, code)
	require.JSONEq(t, `{"error":"Invalid column \"nope\""}`, body)
	code, body, _ = call(t, s, "PATCH", "/tables/Els/records", `{"records":[{"id":1,"fields":{"text":"a"}},{"id":2,"fields":{"note":"b"}}]}`, nil)
	require.Equal(t, 400, code)
	require.JSONEq(t, `{"error":"PATCH requires all records to have same fields"}`, body)
	code, body, _ = call(t, s, "PATCH", "/tables/Els/records", `{"records":[{"id":9999,"fields":{"text":"x"}}]}`, nil)
	require.Equal(t, 400, code)
	require.JSONEq(t, `{"error":"Invalid row id 9999"}`, body)
	code, body, _ = call(t, s, "PATCH", "/tables/Els/records", `{"records":[{"id":1,"fields":{"text":"a"}},{"id":2,"fields":{"text":"b"}}]}`, nil)
	require.Equal(t, 200, code)
	require.Equal(t, "null", body)
	require.Equal(t, "b", s.Table("Els")[2]["text"])

	// /compare lists the rows written over HTTP like any change.
	before := s.Head()
	code, body, _ = call(t, s, "POST", "/tables/Els/records/delete", `[1]`, nil)
	require.Equal(t, 200, code)
	require.Equal(t, "null", body)
	_, body, _ = call(t, s, "GET", "/compare?left="+before+"&right=HEAD", "", nil)
	require.Contains(t, body, `"removeRows":[1]`)

	// The body cap is exactly 1 MiB.
	pad := func(n int) string {
		head := `{"records":[{"id":2,"fields":{"text":"`
		tail := `"}}]}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	code, _, _ = call(t, s, "PATCH", "/tables/Els/records", pad(MaxBodyBytes), nil)
	require.Equal(t, 200, code)
	code, body, _ = call(t, s, "PATCH", "/tables/Els/records", pad(MaxBodyBytes+1), nil)
	require.Equal(t, 413, code)
	require.JSONEq(t, `{"error":"request entity too large"}`, body)
}

// TestTriggerFormulas adds authorship columns through /apply AddColumn
// (recalcWhen 0, recalcDeps = the watched column): new records compute
// them, an edit of the watched column recomputes them as the editing
// user, an edit elsewhere does not.
func TestTriggerFormulas(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "text", Type: "Text"}, Column{ID: "other", Type: "Text"})
	clock := time.Unix(1800000000, 0)
	s.SetNow(func() time.Time { return clock })
	s.AddAPIKey("expert-key", User{Email: "ann@example.com", Name: "Ann"})
	textRef := 0
	for _, c := range s.Columns("T") {
		if c.ID == "text" {
			textRef = c.colRef
		}
	}
	// recalcDeps given to a column being added is refused, and the
	// document refuses every write until it reloads (grist-core 1.7.17).
	refused := fmt.Sprintf(`["AddVisibleColumn","T","by",{"type":"Text","isFormula":false,"formula":"user.Email","recalcWhen":0,"recalcDeps":["L",%d]}]`, textRef)
	code, body, _ := call(t, s, "POST", "/apply", "["+refused+"]", nil)
	require.Equal(t, 500, code, body)
	require.Contains(t, body, "'AltText' object is not iterable")
	code, body, _ = call(t, s, "POST", "/tables/T/records", `{"records":[{"fields":{"text":"x"}}]}`, nil)
	require.Equal(t, 500, code, body)
	s.Reload()
	code, body, _ = call(t, s, "POST", "/tables/T/columns",
		fmt.Sprintf(`{"columns":[{"id":"by","fields":{"type":"Text","isFormula":false,"formula":"x","recalcDeps":["L",%d]}}]}`, textRef), nil)
	require.Equal(t, 500, code, body)
	s.Reload()
	require.Len(t, s.Columns("T"), 3, "nothing added: manualSort, text, other")

	// The Grist UI's way: add the columns, then set recalcWhen and
	// recalcDeps on their _grist_Tables_column records.
	by := `["AddVisibleColumn","T","by",{"type":"Text","isFormula":false,"formula":"user.Email if $text else \"\""}]`
	at := `["AddColumn","T","at",{"type":"DateTime:UTC","isFormula":false,"formula":"NOW()"}]`
	code, body, _ = call(t, s, "POST", "/apply", "["+by+","+at+"]", nil)
	require.Equal(t, 200, code, body)
	var res struct {
		RetValues []map[string]any `json:"retValues"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	require.Equal(t, "by", res.RetValues[0]["colId"])
	set := fmt.Sprintf(`[["UpdateRecord","_grist_Tables_column",%v,{"recalcWhen":0,"recalcDeps":["L",%d]}],`+
		`["BulkUpdateRecord","_grist_Tables_column",[%v],{"recalcWhen":[0],"recalcDeps":[["L",%d]]}]]`,
		res.RetValues[0]["colRef"], textRef, res.RetValues[1]["colRef"], textRef)
	code, body, _ = call(t, s, "POST", "/apply", set, nil)
	require.Equal(t, 200, code, body)
	code, body, _ = call(t, s, "POST", "/apply", `[["UpdateRecord","_grist_Tables_column",999,{"recalcWhen":0}]]`, nil)
	require.Equal(t, 400, code, body)
	_, body, _ = call(t, s, "GET", "/tables/T/columns", "", nil)
	require.Contains(t, body, fmt.Sprintf(`"recalcDeps":["L",%d]`, textRef))

	id := s.AddRows("T", map[string]any{"other": "o"})[0]
	require.Equal(t, "", s.Table("T")[id]["by"])
	require.Equal(t, float64(1800000000), s.Table("T")[id]["at"])

	clock = clock.Add(time.Hour)
	s.UpdateRowsAs(User{Email: "bob@example.com"}, "T", map[int64]map[string]any{id: {"other": "p"}})
	require.Equal(t, "", s.Table("T")[id]["by"], "an edit of another column does not recompute")
	require.Equal(t, float64(1800000000), s.Table("T")[id]["at"])

	req := fmt.Sprintf(`{"records":[{"id":%d,"fields":{"text":"corrected"}}]}`, id)
	code, body = callAs(t, s, "expert-key", "PATCH", "/tables/T/records", req)
	require.Equal(t, 200, code, body)
	require.Equal(t, "ann@example.com", s.Table("T")[id]["by"])
	require.Equal(t, float64(1800003600), s.Table("T")[id]["at"])

	code, _ = callAs(t, s, "unknown-key", "GET", "/tables/T/records", "")
	require.Equal(t, 401, code)
}

func callAs(t *testing.T, s *Server, key, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+"/api/docs/"+DocID+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestRecalcDepsAddedUnused adds columns with recalcDeps that grist-core's
// engine does not iterate (engine.py _maybe_update_trigger_dependencies
// skips formula columns, data columns without a formula, and recalcWhen
// other than DEFAULT): they are added, and later writes succeed.
func TestRecalcDepsAddedUnused(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "text", Type: "Text"})
	for _, info := range []string{
		`{"isFormula":true,"formula":"$text","recalcDeps":["L",2]}`,
		`{"formula":"$text","recalcDeps":["L",2]}`,
		`{"isFormula":false,"recalcDeps":["L",2]}`,
		`{"isFormula":false,"formula":"$text","recalcWhen":2,"recalcDeps":["L",2]}`,
	} {
		code, body, _ := call(t, s, "POST", "/apply", `[["AddColumn","T","c",`+info+`]]`, nil)
		require.Equal(t, 200, code, "%s: %s", info, body)
	}
	code, body, _ := call(t, s, "POST", "/tables/T/records", `{"records":[{"fields":{"text":"x"}}]}`, nil)
	require.Equal(t, 200, code, body)
}

// TestAddTableDropsTriggerSettings: POST /tables keeps only a column's
// type, isFormula, formula, label and widgetOptions, as grist-core's
// doAddTable does; recalcWhen and recalcDeps given there are dropped.
func TestAddTableDropsTriggerSettings(t *testing.T) {
	s := New(t)
	code, body, _ := call(t, s, "POST", "/tables", `{"tables":[{"id":"T","columns":[`+
		`{"id":"text","fields":{"type":"Text"}},`+
		`{"id":"by","fields":{"type":"Text","isFormula":false,"formula":"user.Email","recalcWhen":2,"recalcDeps":["L",1]}}]}]}`, nil)
	require.Equal(t, 200, code, body)
	for _, c := range s.Columns("T") {
		require.Zero(t, c.RecalcWhen, c.ID)
		require.Empty(t, c.RecalcDeps, c.ID)
	}
	_, body, _ = call(t, s, "GET", "/tables/T/columns", "", nil)
	require.Contains(t, body, `"formula":"user.Email"`)
	require.NotContains(t, body, `"recalcDeps":["L"`)
}

// TestTriggerGivenValues: which given values of a trigger column (recalcWhen
// 0, recalcDeps = text) grist-core keeps, as its engine (f98cda9) does with
// the same columns: a new record recomputes it even when given (every
// column of a new record is invalidated, and BulkAddRecord prevents no
// recalculation); an update keeps a given value only when it changes the
// cell, since an unchanged cell is trimmed from the update.
func TestTriggerGivenValues(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "text", Type: "Text"}, Column{ID: "other", Type: "Text"})
	textRef := 0
	for _, c := range s.Columns("T") {
		if c.ID == "text" {
			textRef = c.colRef
		}
	}
	code, body, _ := call(t, s, "POST", "/tables/T/columns",
		`{"columns":[{"id":"by","fields":{"type":"Text","isFormula":false,"formula":"user.Email if $text else \"\""}}]}`, nil)
	require.Equal(t, 200, code, body)
	byRef := 0
	for _, c := range s.Columns("T") {
		if c.ID == "by" {
			byRef = c.colRef
		}
	}
	code, body, _ = call(t, s, "POST", "/apply",
		fmt.Sprintf(`[["UpdateRecord","_grist_Tables_column",%d,{"recalcWhen":0,"recalcDeps":["L",%d]}]]`, byRef, textRef), nil)
	require.Equal(t, 200, code, body)
	s.AddAPIKey("kg-key", User{Email: "kgsync@example.com"})
	write := func(method, path, body string) {
		t.Helper()
		code, got := callAs(t, s, "kg-key", method, path, body)
		require.Equal(t, 200, code, got)
	}

	write("POST", "/tables/T/records", `{"records":[{"fields":{"text":"x","by":"ann@example.com"}},{"fields":{"by":"ann@example.com"}}]}`)
	rows := s.Table("T")
	require.Equal(t, "kgsync@example.com", rows[1]["by"], "a new record recomputes a trigger column with recalcDeps")
	require.Equal(t, "", rows[2]["by"], "even when no dependency is given")

	write("PATCH", "/tables/T/records", `{"records":[{"id":1,"fields":{"by":"ann@example.com"}}]}`)
	require.Equal(t, "ann@example.com", s.Table("T")[1]["by"], "a value that changes the cell is kept")
	write("PATCH", "/tables/T/records", `{"records":[{"id":1,"fields":{"text":"y","by":"ann@example.com"}}]}`)
	require.Equal(t, "kgsync@example.com", s.Table("T")[1]["by"], "a value equal to the cell is trimmed: the dependency's change recomputes it")
	write("PATCH", "/tables/T/records", `{"records":[{"id":1,"fields":{"text":"z","by":"ann@example.com"}}]}`)
	require.Equal(t, "ann@example.com", s.Table("T")[1]["by"], "a changed value and a dependency's change: the value given")
}

// TestEmptyColumns: a column POST /columns or AddColumn creates without
// isFormula is an empty formula column (type Any unless given), one POST
// /tables creates is data unless it has a formula; the first value written
// makes an empty column a data column (an Any one of the type guessed),
// all-blank values leave an Any one empty, and a value for a column with a
// formula is refused — as grist-core's useractions.py
// _make_clean_col_info, doAddTable and _ensure_column_accepts_data do.
func TestEmptyColumns(t *testing.T) {
	s := New(t)
	code, body, _ := call(t, s, "POST", "/tables", `{"tables":[{"id":"T","columns":[{"id":"a","fields":{}},{"id":"f","fields":{"formula":"$a"}}]}]}`, nil)
	require.Equal(t, 200, code, body)
	code, body, _ = call(t, s, "POST", "/tables/T/columns", `{"columns":[{"id":"any","fields":{}},{"id":"txt","fields":{"type":"Text"}},`+
		`{"id":"data","fields":{"type":"Text","isFormula":false}},{"id":"num","fields":{}}]}`, nil)
	require.Equal(t, 200, code, body)
	code, body, _ = call(t, s, "POST", "/apply", `[["AddColumn","T","flag",{}]]`, nil)
	require.Equal(t, 200, code, body)
	kind := func() map[string]string {
		out := map[string]string{}
		var cl struct {
			Columns []struct {
				ID     string `json:"id"`
				Fields struct {
					IsFormula bool   `json:"isFormula"`
					Formula   string `json:"formula"`
					Type      string `json:"type"`
				} `json:"fields"`
			} `json:"columns"`
		}
		_, body, _ := call(t, s, "GET", "/tables/T/columns", "", nil)
		require.NoError(t, json.Unmarshal([]byte(body), &cl))
		for _, c := range cl.Columns {
			out[c.ID] = fmt.Sprintf("%v %q %s", c.Fields.IsFormula, c.Fields.Formula, c.Fields.Type)
		}
		return out
	}
	require.Equal(t, map[string]string{
		"a": `false "" Text`, "f": `true "$a" Any`,
		"any": `true "" Any`, "txt": `true "" Text`, "data": `false "" Text`, "num": `true "" Any`, "flag": `true "" Any`,
	}, kind())

	code, body, _ = call(t, s, "POST", "/tables/T/records", `{"records":[{"fields":{"a":"x","f":"y"}}]}`, nil)
	require.Equal(t, 400, code)
	require.JSONEq(t, `{"error":"Error manipulating data: [Sandbox] ValueError Can't save value to formula column f"}`, body)
	require.Zero(t, s.RowCount("T"))
	code, body, _ = call(t, s, "POST", "/apply", `[["BulkAddRecord","T",[null],{"f":["y"]}]]`, nil)
	require.Equal(t, 500, code)
	require.JSONEq(t, `{"error":"[Sandbox] ValueError Can't save value to formula column f"}`, body)

	code, body, _ = call(t, s, "POST", "/tables/T/records", `{"records":[{"fields":{"any":"", "txt":"", "num":"12.5"}},{"fields":{"any":null,"txt":"","num":"3"}}]}`, nil)
	require.Equal(t, 200, code, body)
	require.Equal(t, 12.5, s.Table("T")[1]["num"])
	code, body, _ = call(t, s, "POST", "/apply", `[["BulkUpdateRecord","T",[1,2],{"flag":[true,false]}]]`, nil)
	require.Equal(t, 200, code, body)
	got := kind()
	require.Equal(t, `true "" Any`, got["any"], "blank values leave an Any column empty")
	require.Equal(t, `false "" Text`, got["txt"])
	require.Equal(t, `false "" Numeric`, got["num"])
	require.Equal(t, `false "" Numeric`, got["flag"], "guess_type takes bools for numbers")
	_, body, _ = call(t, s, "GET", "/tables/_grist_Tables_column/records", "", nil)
	require.Regexp(t, `"colId":"num","description":"","displayCol":0,"formula":"","isFormula":false,[^}]*"type":"Numeric"`, body)

	code, body, _ = call(t, s, "PATCH", "/tables/T/records", `{"records":[{"id":1,"fields":{"any":"true"}},{"id":2,"fields":{"any":"false"}}]}`, nil)
	require.Equal(t, 200, code, body)
	require.Equal(t, `false "" Bool`, kind()["any"])
	require.Equal(t, true, s.Table("T")[1]["any"])
}

// TestApplyBundleAtomic: a POST /apply bundle whose later action fails
// leaves the document as it was, as grist-core's engine undoes the
// bundle's earlier actions (engine.py apply_user_actions,
// _undo_to_checkpoint), and answers the failing action's data engine
// error as it came: HTTP 500 {"error":"[Sandbox] …"}.
func TestApplyBundleAtomic(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "text", Type: "Text"})
	s.AddRows("T", map[string]any{"text": "a"})
	head := s.Head()
	cols := s.Columns("T")
	for _, tc := range []struct{ last, status, answer string }{
		{`["BulkUpdateRecord","T",[99],{"text":["x"]}]`, "500",
			`{"error":"[Sandbox] AssertionError docactions.[Bulk]UpdateRecord for non-existent record #99"}`},
		{`["BulkAddRecord","T",[null],{"nope":["x"]}]`, "500", `{"error":"[Sandbox] KeyError 'nope'"}`},
		{`["BulkAddRecord","T",[null],{"text":["x"],"f":["y"]}]`, "500",
			`{"error":"[Sandbox] ValueError Can't save value to formula column f"}`},
	} {
		bundle := `[["BulkUpdateRecord","T",[1],{"text":["b"]}],["AddColumn","T","f",{"formula":"$text"}],` +
			`["BulkAddRecord","T",[null],{"text":["n"]}],["BulkRemoveRecord","T",[1]],` + tc.last + `]`
		code, body, _ := call(t, s, "POST", "/apply", bundle, nil)
		require.Equal(t, map[int64]map[string]any{1: {"manualSort": int64(1), "text": "a"}}, s.Table("T"), tc.last)
		require.Equal(t, cols, s.Columns("T"), tc.last)
		require.Equal(t, head, s.Head(), "no action recorded")
		require.Equal(t, tc.status, fmt.Sprint(code), body)
		require.JSONEq(t, tc.answer, body)
	}
	code, body, _ := call(t, s, "POST", "/tables/T/records", `{"records":[{"fields":{"text":"c"}}]}`, nil)
	require.Equal(t, 200, code, body)
	require.JSONEq(t, `{"records":[{"id":2}]}`, body, "the undone add's row id is free again")
	code, body, _ = call(t, s, "POST", "/apply", `[["BulkRemoveRecord","T",[1,99]]]`, nil)
	require.Equal(t, 200, code, body, "BulkRemoveRecord ignores records that do not exist (docactions.py)")
	require.Equal(t, 1, s.RowCount("T"))
}

// TestApplyBundleTriggers: in one POST /apply, grist-core computes trigger
// formulas once, after the bundle's last action (engine.py
// apply_user_actions: _bring_all_up_to_date after the loop), on the rows
// as the bundle left them; a value an action gives a trigger column is
// kept only when no later action follows, since the exemptions are
// cleared before each action (engine.py:1318-1320).
func TestApplyBundleTriggers(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "text", Type: "Text"}, Column{ID: "other", Type: "Text"})
	code, body, _ := call(t, s, "POST", "/apply", `[["AddColumn","T","by",{"type":"Text","isFormula":false,"formula":"user.Email"}],`+
		`["AddColumn","T","copy",{"type":"Text","isFormula":false,"formula":"$other"}]]`, nil)
	require.Equal(t, 200, code, body)
	refs := map[string]int{}
	for _, c := range s.Columns("T") {
		refs[c.ID] = c.colRef
	}
	code, body, _ = call(t, s, "POST", "/apply", fmt.Sprintf(`[["BulkUpdateRecord","_grist_Tables_column",[%d,%d],`+
		`{"recalcWhen":[0,0],"recalcDeps":[["L",%d],["L",%d]]}]]`, refs["by"], refs["copy"], refs["text"], refs["text"]), nil)
	require.Equal(t, 200, code, body)
	s.AddAPIKey("kg-key", User{Email: "kgsync@example.com"})
	apply := func(actions ...string) {
		t.Helper()
		code, got := callAs(t, s, "kg-key", "POST", "/apply", "["+strings.Join(actions, ",")+"]")
		require.Equal(t, 200, code, got)
	}
	apply(`["BulkAddRecord","T",[null,null],{"text":["a","b"],"other":["o1","o2"]}]`)
	require.Equal(t, "o1", s.Table("T")[1]["copy"])

	apply(`["BulkUpdateRecord","T",[1],{"text":["y"],"by":["ann@example.com"]}]`)
	require.Equal(t, "ann@example.com", s.Table("T")[1]["by"], "alone, the given value is kept")
	apply(`["BulkUpdateRecord","T",[1],{"text":["z"],"by":["bob@example.com"]}]`,
		`["BulkUpdateRecord","T",[2],{"other":["q"]}]`)
	require.Equal(t, "kgsync@example.com", s.Table("T")[1]["by"], "a later action clears the given value's protection")
	apply(`["BulkUpdateRecord","T",[2],{"text":["c"]}]`, `["BulkUpdateRecord","T",[2],{"by":["carl@example.com"]}]`)
	require.Equal(t, "carl@example.com", s.Table("T")[2]["by"], "the last action's given value is kept")

	before := s.Head()
	apply(`["BulkUpdateRecord","T",[2],{"text":["d"]}]`, `["BulkUpdateRecord","T",[2],{"other":["o3"]}]`)
	require.Equal(t, "o3", s.Table("T")[2]["copy"], "computed on the row as the bundle left it")
	_, body, _ = call(t, s, "GET", "/compare?left="+before+"&right=HEAD", "", nil)
	require.Contains(t, body, `"copy":{"2":[["q"],["o3"]]}`, "the action records the computed value")
}
