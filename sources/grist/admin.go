package grist

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Admin makes the calls that manage a document rather than read it (its
// user tables and webhooks, for `kgsync grist webhooks install`) through
// the source's client: the same base URL, Bearer auth, key redaction and
// *APIError. It never retries: a POST /webhooks repeated after a lost
// answer would create the webhooks twice.
type Admin struct {
	c *client
}

// NewAdmin returns an Admin for cfg's document (Server, DocID, APIKey and
// HTTPClient are used); cfg's errors are New's.
func NewAdmin(cfg Config) (*Admin, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	cfg.RetryMax = 0
	c, err := newClient(cfg, &counters{}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return &Admin{c: c}, nil
}

// Call sends body (as JSON, when not nil) with method to path, relative to
// /api/docs/{docId} (e.g. "/webhooks"), and decodes a 2xx answer into out
// when out is not nil. Any other answer is an *APIError whose Op is
// "METHOD path".
func (a *Admin) Call(ctx context.Context, method, path string, body, out any) error {
	op := method + " " + path
	if out != nil {
		return a.c.getJSON(ctx, method, path, nil, body, "", op, out)
	}
	resp, err := a.c.do(ctx, method, path, nil, body, nil, "", op)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// UserTables lists the document's user tables (UserTable), sorted: the
// tables a source with no configured tables reads. The server's order is
// not reliable (grist-api.md "Observed" §2).
func (a *Admin) UserTables(ctx context.Context) ([]string, error) {
	var tl tableList
	if err := a.Call(ctx, http.MethodGet, "/tables", nil, &tl); err != nil {
		return nil, err
	}
	var ids []string
	for _, t := range tl.Tables {
		if UserTable(t.ID, t.Fields.SummarySourceTable) {
			ids = append(ids, t.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Describe returns the document's user tables (UserTable) with their
// visible columns and each column's kind: text (Text, Choice), number
// (Numeric, Int), bool, date (Date, DateTime), list (ChoiceList),
// ref:<table>, reflist:<table>, attachments, any (Any, e.g. an untyped
// formula) or the Grist type itself for others. It is what `kgsync validate
// --online` checks the config against.
func (a *Admin) Describe(ctx context.Context) (map[string]map[string]string, error) {
	ids, err := a.UserTables(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]string, len(ids))
	for _, id := range ids {
		var cl struct {
			Columns []struct {
				ID     string `json:"id"`
				Fields struct {
					Type string `json:"type"`
				} `json:"fields"`
			} `json:"columns"`
		}
		if err := a.Call(ctx, http.MethodGet, "/tables/"+url.PathEscape(id)+"/columns", nil, &cl); err != nil {
			return nil, err
		}
		cols := map[string]string{}
		for _, c := range cl.Columns {
			if !hiddenColumn(c.ID, c.Fields.Type) {
				cols[c.ID] = Kind(c.Fields.Type)
			}
		}
		out[id] = cols
	}
	return out, nil
}

// Kind maps a Grist column type (grist-api.md §2) to the kind validate
// compares attribute uses with (see Describe).
func Kind(typ string) string {
	base, arg, _ := strings.Cut(typ, ":")
	switch base {
	case "Text", "Choice":
		return "text"
	case "Numeric", "Int":
		return "number"
	case "Bool":
		return "bool"
	case "Date", "DateTime":
		return "date"
	case "ChoiceList":
		return "list"
	case "Ref":
		return "ref:" + arg
	case "RefList":
		return "reflist:" + arg
	case "Attachments":
		return "attachments"
	case "Any", "":
		return "any"
	}
	return typ
}

// Describe returns what a Read from cursor (a stored cursor, "" for none)
// would read: each table under the name its records use, with each
// column's kind (Kind) under the name its attribute uses, and the rename
// warnings. With the names the cursor remembers (names.go), a table or
// column renamed in Grist that the config still names the old way is
// described under the old name, as a sync reads it. A config the
// document does not match (a column the model maps that is gone) is the
// *SchemaError a Read would yield.
func (s *Source) Describe(ctx context.Context, cursor string) (map[string]map[string]string, []string, error) {
	var old cursorState
	if cursor != "" {
		if err := json.Unmarshal([]byte(cursor), &old); err != nil {
			old = cursorState{}
		}
	}
	si, err := s.schema(ctx, old.Tables)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]map[string]string, len(si.tables))
	for _, t := range si.tables {
		cols := make(map[string]string, len(t.Cols))
		for _, c := range t.Cols {
			typ := c.Type
			if c.Target != "" {
				typ = c.Base + ":" + c.TargetName
			}
			cols[c.Name] = Kind(typ)
		}
		out[t.Name] = cols
	}
	return out, si.warnings, nil
}
