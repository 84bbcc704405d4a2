package gristtest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Webhook is one webhook of the document as GET /webhooks shows it
// (grist-api.md §6 and grist-samples/real/webhooks/get-webhooks-initial.json).
// The server keeps them in creation order; it does not deliver events.
type Webhook struct {
	ID     string        `json:"id"`
	Fields WebhookFields `json:"fields"`
}

// WebhookFields are a webhook's fields, in the order the real server lists
// them. Authorization is "" when none was set; IsReadyColumn is nil for
// none.
type WebhookFields struct {
	URL            string   `json:"url"`
	Authorization  string   `json:"authorization"`
	UnsubscribeKey string   `json:"unsubscribeKey"`
	EventTypes     []string `json:"eventTypes"`
	IsReadyColumn  *string  `json:"isReadyColumn"`
	WatchedColIDs  []string `json:"watchedColIds"`
	TableID        string   `json:"tableId"`
	Enabled        bool     `json:"enabled"`
	Name           string   `json:"name"`
	Memo           string   `json:"memo"`
}

// webhookStore holds the document's webhooks; the zero value is empty.
type webhookStore struct {
	list []*Webhook
}

func (s *Server) webhookRoutes(mux *http.ServeMux, p string) {
	mux.HandleFunc("GET "+p+"/webhooks", s.getWebhooks)
	mux.HandleFunc("POST "+p+"/webhooks", s.postWebhooks)
	mux.HandleFunc("PATCH "+p+"/webhooks/{id}", s.patchWebhook)
	mux.HandleFunc("DELETE "+p+"/webhooks/{id}", s.deleteWebhook)
}

// Webhooks returns a copy of the document's webhooks in creation order.
func (s *Server) Webhooks() []Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Webhook, 0, len(s.hooks.list))
	for _, w := range s.hooks.list {
		c := *w
		c.Fields.EventTypes = slices.Clone(w.Fields.EventTypes)
		c.Fields.WatchedColIDs = slices.Clone(w.Fields.WatchedColIDs)
		out = append(out, c)
	}
	return out
}

// newUUID returns a random version-4 UUID, the shape of webhook ids and
// unsubscribe keys.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// partialFields are the fields a POST or PATCH may carry; nil = absent.
type partialFields struct {
	URL           *string          `json:"url"`
	Authorization *string          `json:"authorization"`
	EventTypes    *[]string        `json:"eventTypes"`
	IsReadyColumn *json.RawMessage `json:"isReadyColumn"`
	WatchedColIDs *[]string        `json:"watchedColIds"`
	TableID       *string          `json:"tableId"`
	Enabled       *bool            `json:"enabled"`
	Name          *string          `json:"name"`
	Memo          *string          `json:"memo"`
	Condition     *string          `json:"condition"`
}

// invalidPayload is the real server's 400 for a body failing its schema
// check (grist-samples/real/errors/webhook-delete-event.json).
func invalidPayload(w http.ResponseWriter, r *http.Request, detail string) {
	writeJSON(w, r, 400, map[string]any{"error": "Invalid payload", "details": map[string]string{"userError": "Error: " + detail}})
}

// checkFields validates f against the document (callers hold s.mu): event
// types within add/update, a known table, a known ready column. prefix
// names the value in schema errors ("value.webhooks[0].fields" or
// "value"), wrap is the text the real server puts before it.
func (s *Server) checkFields(w http.ResponseWriter, r *http.Request, f *partialFields, prefix, wrap string, tableID string) bool {
	if f.EventTypes != nil {
		for i, e := range *f.EventTypes {
			if e != "add" && e != "update" {
				invalidPayload(w, r, fmt.Sprintf("%s%s.eventTypes[%d] is none of \"add\", \"update\"", wrap, prefix, i))
				return false
			}
		}
	}
	t, ok := s.tables[tableID]
	if !ok {
		writeErr(w, r, 404, fmt.Sprintf("Table not found %q", tableID))
		return false
	}
	if f.IsReadyColumn != nil && string(*f.IsReadyColumn) != "null" {
		var col string
		if json.Unmarshal(*f.IsReadyColumn, &col) != nil || t.col(col) == nil {
			writeErr(w, r, 404, fmt.Sprintf("Column not found %q", strings.Trim(string(*f.IsReadyColumn), `"`)))
			return false
		}
	}
	return true
}

// apply copies the set fields of f into wf.
func (f *partialFields) apply(wf *WebhookFields) {
	if f.URL != nil {
		wf.URL = *f.URL
	}
	if f.Authorization != nil {
		wf.Authorization = *f.Authorization
	}
	if f.EventTypes != nil {
		wf.EventTypes = slices.Clone(*f.EventTypes)
	}
	if f.IsReadyColumn != nil {
		var col string
		if json.Unmarshal(*f.IsReadyColumn, &col) == nil {
			wf.IsReadyColumn = &col
		} else {
			wf.IsReadyColumn = nil
		}
	}
	if f.WatchedColIDs != nil {
		wf.WatchedColIDs = slices.Clone(*f.WatchedColIDs)
	}
	if f.TableID != nil {
		wf.TableID = *f.TableID
	}
	if f.Enabled != nil {
		wf.Enabled = *f.Enabled
	}
	if f.Name != nil {
		wf.Name = *f.Name
	}
	if f.Memo != nil {
		wf.Memo = *f.Memo
	}
}

// GET /webhooks → {"webhooks": [{id, fields, usage}]}; usage is that of a
// webhook that never fired.
func (s *Server) getWebhooks(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, h := range s.hooks.list {
		out = append(out, map[string]any{"id": h.ID, "fields": h.Fields,
			"usage": map[string]any{"status": "idle", "numWaiting": 0, "lastEventBatch": nil}})
	}
	writeJSON(w, r, 200, map[string]any{"webhooks": out})
}

// POST /webhooks {"webhooks": [{"fields": {...}}]} → {"webhooks": [{"id"}]};
// url, eventTypes and tableId are required, all are created or none.
func (s *Server) postWebhooks(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Webhooks []struct {
			Fields *partialFields `json:"fields"`
		} `json:"webhooks"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Webhooks == nil {
		invalidPayload(w, r, "value.webhooks is missing")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var created []*Webhook
	for i, h := range body.Webhooks {
		wrap := fmt.Sprintf("value.webhooks[%d] is not a Webhook; value.webhooks[%d].fields is not a WebhookFields; ", i, i)
		prefix := fmt.Sprintf("value.webhooks[%d].fields", i)
		f := h.Fields
		if f == nil {
			invalidPayload(w, r, fmt.Sprintf("value.webhooks[%d] is not a Webhook; %s is missing", i, prefix))
			return
		}
		for _, req := range []struct {
			name    string
			missing bool
		}{{"url", f.URL == nil}, {"eventTypes", f.EventTypes == nil}, {"tableId", f.TableID == nil}} {
			if req.missing {
				invalidPayload(w, r, wrap+prefix+"."+req.name+" is missing")
				return
			}
		}
		if !s.checkFields(w, r, f, prefix, wrap, *f.TableID) {
			return
		}
		wh := &Webhook{ID: newUUID(), Fields: WebhookFields{UnsubscribeKey: newUUID(), Enabled: true, WatchedColIDs: []string{}}}
		f.apply(&wh.Fields)
		created = append(created, wh)
	}
	ids := []map[string]string{}
	for _, wh := range created {
		s.hooks.list = append(s.hooks.list, wh)
		ids = append(ids, map[string]string{"id": wh.ID})
	}
	writeJSON(w, r, 200, map[string]any{"webhooks": ids})
}

func (s *Server) webhookOr404(w http.ResponseWriter, r *http.Request) int {
	id := r.PathValue("id")
	i := slices.IndexFunc(s.hooks.list, func(h *Webhook) bool { return h.ID == id })
	if i < 0 {
		writeErr(w, r, 404, fmt.Sprintf("Webhook not found %q", id))
	}
	return i
}

// PATCH /webhooks/{id} with partial fields → {"success": true}.
func (s *Server) patchWebhook(w http.ResponseWriter, r *http.Request) {
	var f partialFields
	if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
		invalidPayload(w, r, "value is not a WebhookPartialFields")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.webhookOr404(w, r)
	if i < 0 {
		return
	}
	h := s.hooks.list[i]
	table := h.Fields.TableID
	if f.TableID != nil {
		table = *f.TableID
	}
	if !s.checkFields(w, r, &f, "value", "value is not a WebhookPartialFields; ", table) {
		return
	}
	f.apply(&h.Fields)
	writeJSON(w, r, 200, map[string]bool{"success": true})
}

// DELETE /webhooks/{id} → {"success": true}.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.webhookOr404(w, r)
	if i < 0 {
		return
	}
	s.hooks.list = slices.Delete(s.hooks.list, i, i+1)
	writeJSON(w, r, 200, map[string]bool{"success": true})
}
