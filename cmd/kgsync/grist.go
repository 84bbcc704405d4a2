package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/sources/grist"
)

func newGristCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "grist",
		Short: "Manage the Grist side of Grist pipelines",
		Args:  cobra.NoArgs,
	}
	hooks := &cobra.Command{
		Use:   "webhooks",
		Short: "Manage the Grist webhooks that trigger the daemon",
		Args:  cobra.NoArgs,
	}
	var publicURL string
	var asJSON bool
	install := &cobra.Command{
		Use:   "install PIPELINE --public-url URL",
		Short: "Create or update the Grist webhooks of a pipeline's Grist tables",
		Long: `Create, or bring up to date, one Grist webhook per Grist table of
PIPELINE, pointing at the daemon's POST /hooks/grist/PIPELINE/TABLE
(docs/daemon.md, "Grist webhooks").

The tables are each Grist source's "tables", or every user table of the
document when none are listed. A webhook is ours when its URL is
<public-url>/hooks/grist/PIPELINE/TABLE; missing ones are created, ours are
patched when a field differs (event types add and update, enabled, no
ready column, name, memo, table, and the Authorization header carrying
daemon.webhook_secret), other webhooks of the document are left alone.
Running it again changes nothing. It needs owner access to the document.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGristWebhooksInstall(cmd.Context(), g, args[0], publicURL, asJSON)
		},
	}
	install.Flags().StringVar(&publicURL, "public-url", "", "the daemon's URL as Grist reaches it, e.g. https://kgsync.example.com (required)")
	install.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per webhook")
	_ = install.MarkFlagRequired("public-url")
	hooks.AddCommand(install)
	cmd.AddCommand(hooks)
	rev := &cobra.Command{
		Use:   "review",
		Short: "Manage the Grist tables where experts review a files pipeline's documents",
		Args:  cobra.NoArgs,
	}
	var reviewJSON bool
	rinstall := &cobra.Command{
		Use:   "install PIPELINE",
		Short: "Create the review tables and columns of a pipeline in its Grist document",
		Long: `Create, in the Grist document of PIPELINE's review section, the
Documents and Elements tables (review.grist.documents_table and
elements_table) and every column they lack (docs/review.md lists them).
Existing tables, columns and rows are left as they are: running it again
changes nothing. A column that exists with another type is reported, not
converted. A run does the same before its first write to the tables; this
command lets an owner do it explicitly (it needs owner access to the
document, a run then only needs edit access).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGristReviewInstall(cmd.Context(), g, args[0], reviewJSON)
		},
	}
	rinstall.Flags().BoolVar(&reviewJSON, "json", false, "print one JSON object per change")
	rev.AddCommand(rinstall)
	cmd.AddCommand(rev)
	return cmd
}

func runGristReviewInstall(ctx context.Context, g *globals, name string, asJSON bool) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
	pc, ok := cfg.Pipeline(name)
	if !ok {
		return &exitError{code: 2, err: fmt.Errorf("no pipeline %q in the config", name)}
	}
	if pc.Review == nil || pc.Review.Grist == nil {
		return &exitError{code: 2, err: fmt.Errorf("pipeline %q has no review section (review.grist: server, doc_id, api_key)", name)}
	}
	rg := pc.Review.Grist
	w, err := grist.NewWriter(grist.Config{Server: rg.Server, DocID: rg.DocID, APIKey: rg.APIKey, MaxInFlight: rg.MaxInFlight,
		HTTPClient: &http.Client{Timeout: 60 * time.Second}}, nil)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	changes, err := review.Install(ctx, w, rg.DocumentsTable, rg.ElementsTable)
	for _, c := range changes {
		if asJSON {
			line, _ := json.Marshal(c)
			fmt.Fprintln(g.stdout, string(line))
			continue
		}
		if c.Column != "" {
			fmt.Fprintf(g.stdout, "%s: %s %s\n", c.Table, c.Action, c.Column)
		} else {
			fmt.Fprintf(g.stdout, "%s: %s\n", c.Table, c.Action)
		}
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// webhookResult is the outcome for one table, as install prints it.
type webhookResult struct {
	Source  string   `json:"source"`
	Table   string   `json:"table"`
	Action  string   `json:"action"` // created, updated, unchanged
	ID      string   `json:"webhook_id"`
	Changed []string `json:"changed,omitempty"` // fields patched, for updated
	URL     string   `json:"url"`
}

func runGristWebhooksInstall(ctx context.Context, g *globals, name, publicURL string, asJSON bool) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
	pc, ok := cfg.Pipeline(name)
	if !ok {
		return &exitError{code: 2, err: fmt.Errorf("no pipeline %q in the config", name)}
	}
	base, err := parsePublicURL(publicURL)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if cfg.Daemon.WebhookSecret == "" {
		return &exitError{code: 3, err: errors.New("daemon.webhook_secret is empty: the daemon refuses webhook deliveries without it; set it first")}
	}
	var results []webhookResult
	var failed []error
	found := false
	for _, sc := range pc.Sources {
		if sc.Grist == nil {
			continue
		}
		found = true
		c, err := newGristAdmin(sc.Grist)
		if err != nil {
			failed = append(failed, fmt.Errorf("source %q: %w", sc.Name, err))
			continue
		}
		rs, err := installWebhooks(ctx, c, webhookSpec{
			Pipeline: pc.Name, Source: sc.Name, Tables: sc.Grist.Tables, Base: base,
			Authorization: "Bearer " + cfg.Daemon.WebhookSecret,
		})
		results = append(results, rs...)
		if err != nil {
			failed = append(failed, fmt.Errorf("source %q: %w", sc.Name, err))
		}
	}
	if rv := pc.Review; rv != nil && rv.Grist != nil {
		// The experts' edits in the review's Elements table trigger a run
		// too: updates of their columns only (kgsync adds the rows and
		// writes the other columns itself).
		found = true
		c, err := newGristAdmin(&config.GristSource{Server: rv.Grist.Server, DocID: rv.Grist.DocID, APIKey: rv.Grist.APIKey})
		if err != nil {
			failed = append(failed, fmt.Errorf("review: %w", err))
		} else {
			rs, err := installWebhooks(ctx, c, webhookSpec{
				Pipeline: pc.Name, Source: "review", Tables: []string{rv.Grist.ElementsTable}, Base: base,
				Authorization: "Bearer " + cfg.Daemon.WebhookSecret,
				EventTypes:    []string{"update"}, Watched: review.WatchedColumns(),
			})
			results = append(results, rs...)
			if err != nil {
				failed = append(failed, fmt.Errorf("review: %w", err))
			}
		}
	}
	if !found {
		return &exitError{code: 2, err: fmt.Errorf("pipeline %q has no grist source and no review", name)}
	}
	for _, r := range results {
		if asJSON {
			line, _ := json.Marshal(r)
			fmt.Fprintln(g.stdout, string(line))
			continue
		}
		switch r.Action {
		case "updated":
			fmt.Fprintf(g.stdout, "%s/%s: updated webhook %s (%s) -> %s\n", r.Source, r.Table, r.ID, strings.Join(r.Changed, ", "), r.URL)
		default:
			fmt.Fprintf(g.stdout, "%s/%s: %s webhook %s -> %s\n", r.Source, r.Table, r.Action, r.ID, r.URL)
		}
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: errors.Join(failed...)}
	}
	return nil
}

// parsePublicURL checks an http(s) URL with a host and returns it without
// a trailing slash.
func parsePublicURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--public-url %q: want the daemon's http(s) URL as Grist reaches it, such as https://kgsync.example.com", s)
	}
	return u.String(), nil
}

// gristTableID is what the daemon's webhook route accepts as a table.
var gristTableID = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// webhookSpec is what install wants for one Grist source.
type webhookSpec struct {
	Pipeline, Source string
	// Tables are the configured table ids; empty = every user table.
	Tables []string
	// Base is the daemon's public URL without a trailing slash.
	Base string
	// Authorization is the header value Grist sends with each delivery.
	Authorization string
	// EventTypes are the events to subscribe to (default add and update);
	// Watched, when set, the only columns whose updates send events (a
	// review's Elements table: the experts' columns, so that kgsync's own
	// writes send none).
	EventTypes, Watched []string
}

// hookFields are the webhook fields install manages (grist-api.md §6;
// authorization since grist-core 1.1.16).
type hookFields struct {
	URL           string   `json:"url"`
	Authorization string   `json:"authorization"`
	EventTypes    []string `json:"eventTypes"`
	IsReadyColumn *string  `json:"isReadyColumn"`
	TableID       string   `json:"tableId"`
	Enabled       bool     `json:"enabled"`
	Name          string   `json:"name"`
	Memo          string   `json:"memo"`
	// WatchedColIDs limits update events to changes of these columns
	// (grist-api.md §6, since v1.1.13); nil = every column.
	WatchedColIDs []string `json:"watchedColIds,omitempty"`
}

// want returns the fields of the webhook for table.
func (s webhookSpec) want(table string) hookFields {
	h := hookFields{
		URL:           s.Base + "/hooks/grist/" + url.PathEscape(s.Pipeline) + "/" + url.PathEscape(table),
		Authorization: s.Authorization,
		EventTypes:    []string{"add", "update"},
		WatchedColIDs: s.Watched,
		TableID:       table,
		Enabled:       true,
		Name:          "kgsync " + s.Pipeline + " " + table,
		Memo:          "Managed by kgsync (grist webhooks install): triggers pipeline " + s.Pipeline + " on changes to " + table + ".",
	}
	if s.EventTypes != nil {
		h.EventTypes = s.EventTypes
	}
	return h
}

// diff returns the JSON names of the fields of have that differ from want,
// and a PATCH body holding want's values for them.
func (want hookFields) diff(have hookFields) ([]string, map[string]any) {
	var names []string
	patch := map[string]any{}
	set := func(name string, differs bool, v any) {
		if differs {
			names = append(names, name)
			patch[name] = v
		}
	}
	set("url", have.URL != want.URL, want.URL)
	set("authorization", have.Authorization != want.Authorization, want.Authorization)
	set("eventTypes", !sameSet(have.EventTypes, want.EventTypes), want.EventTypes)
	set("isReadyColumn", have.IsReadyColumn != nil, nil)
	set("tableId", have.TableID != want.TableID, want.TableID)
	set("enabled", have.Enabled != want.Enabled, want.Enabled)
	set("name", have.Name != want.Name, want.Name)
	set("memo", have.Memo != want.Memo, want.Memo)
	if want.WatchedColIDs != nil {
		set("watchedColIds", !sameSet(have.WatchedColIDs, want.WatchedColIDs), want.WatchedColIDs)
	}
	return names, patch
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// installWebhooks brings the webhooks of one source's document in line
// with spec: it lists the document's webhooks and tables, creates the
// missing ones in one POST and patches ours that differ. Results are in
// table order; on error they hold what was done before it.
func installWebhooks(ctx context.Context, c *gristAdmin, spec webhookSpec) ([]webhookResult, error) {
	tables := spec.Tables
	if len(tables) == 0 {
		var err error
		if tables, err = c.UserTables(ctx); err != nil {
			return nil, err
		}
	}
	for _, t := range tables {
		if !gristTableID.MatchString(t) {
			return nil, fmt.Errorf("table %q is not a Grist table id", t)
		}
	}
	existing, err := c.webhooks(ctx)
	if err != nil {
		return nil, err
	}
	byURL := map[string]gristWebhook{}
	// Ours by table: a webhook whose URL is this pipeline's route for
	// another table id. Grist keeps a webhook's table by tableRef, so after
	// a table rename it reports the new tableId with the old URL: it is
	// patched to the new URL rather than left posting to a route that
	// answers 404.
	prefix := spec.Base + "/hooks/grist/" + url.PathEscape(spec.Pipeline) + "/"
	byTable := map[string]gristWebhook{}
	for _, h := range existing {
		if _, dup := byURL[h.Fields.URL]; !dup { // the first of duplicates is ours
			byURL[h.Fields.URL] = h
		}
		if _, dup := byTable[h.Fields.TableID]; !dup && strings.HasPrefix(h.Fields.URL, prefix) {
			byTable[h.Fields.TableID] = h
		}
	}
	results := make([]webhookResult, len(tables))
	var create []hookFields
	var createAt []int
	for i, t := range tables {
		want := spec.want(t)
		results[i] = webhookResult{Source: spec.Source, Table: t, URL: want.URL}
		have, ok := byURL[want.URL]
		if !ok {
			if have, ok = byTable[t]; ok {
				if _, taken := byURL[have.Fields.URL]; taken && byURL[have.Fields.URL].ID != have.ID {
					ok = false
				}
			}
		}
		if !ok {
			create = append(create, want)
			createAt = append(createAt, i)
			continue
		}
		results[i].ID = have.ID
		names, patch := want.diff(have.Fields)
		if len(names) == 0 {
			results[i].Action = "unchanged"
			continue
		}
		if err := c.patchWebhook(ctx, have.ID, patch); err != nil {
			return done(results), fmt.Errorf("table %q: %w", t, err)
		}
		results[i].Action, results[i].Changed = "updated", names
	}
	if len(create) > 0 {
		ids, err := c.createWebhooks(ctx, create)
		if err != nil {
			return done(results), err
		}
		for j, i := range createAt {
			results[i].Action, results[i].ID = "created", ids[j]
		}
	}
	return results, nil
}

// done keeps the results that have an action.
func done(rs []webhookResult) []webhookResult {
	return slices.DeleteFunc(rs, func(r webhookResult) bool { return r.Action == "" })
}

// gristWebhook is one entry of GET /webhooks.
type gristWebhook struct {
	ID     string     `json:"id"`
	Fields hookFields `json:"fields"`
}

// gristAdmin manages a document's webhooks through grist.Admin, with the
// source's server, document and API key.
type gristAdmin struct {
	*grist.Admin
	doc string
}

func newGristAdmin(c *config.GristSource) (*gristAdmin, error) {
	a, err := grist.NewAdmin(grist.Config{Server: c.Server, DocID: c.DocID, APIKey: c.APIKey,
		HTTPClient: &http.Client{Timeout: 60 * time.Second}})
	if err != nil {
		return nil, err
	}
	return &gristAdmin{Admin: a, doc: c.DocID}, nil
}

func (c *gristAdmin) webhooks(ctx context.Context) ([]gristWebhook, error) {
	var out struct {
		Webhooks []gristWebhook `json:"webhooks"`
	}
	if err := c.Call(ctx, http.MethodGet, "/webhooks", nil, &out); err != nil {
		return nil, err
	}
	return out.Webhooks, nil
}

// createWebhooks creates all of fields in one POST (Grist creates all or
// none) and returns their ids in order.
func (c *gristAdmin) createWebhooks(ctx context.Context, fields []hookFields) ([]string, error) {
	type entry struct {
		Fields hookFields `json:"fields"`
	}
	body := struct {
		Webhooks []entry `json:"webhooks"`
	}{}
	for _, f := range fields {
		body.Webhooks = append(body.Webhooks, entry{Fields: f})
	}
	var out struct {
		Webhooks []struct {
			ID string `json:"id"`
		} `json:"webhooks"`
	}
	if err := c.Call(ctx, http.MethodPost, "/webhooks", body, &out); err != nil {
		return nil, err
	}
	if len(out.Webhooks) != len(fields) {
		return nil, fmt.Errorf("grist document %s: POST /webhooks: %d ids for %d webhooks", c.doc, len(out.Webhooks), len(fields))
	}
	ids := make([]string, len(fields))
	for i, w := range out.Webhooks {
		ids[i] = w.ID
	}
	return ids, nil
}

func (c *gristAdmin) patchWebhook(ctx context.Context, id string, patch map[string]any) error {
	return c.Call(ctx, http.MethodPatch, "/webhooks/"+url.PathEscape(id), patch, nil)
}
