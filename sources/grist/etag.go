package grist

// ETag polling: the change check used when /states is refused.
//
// Every GET answer of Grist carries a weak ETag (Express's: W/"<length in
// hex>-<base64 SHA-1 prefix>") and a GET sent with If-None-Match gets 304
// and no body while the answer is unchanged (grist-api.md "Observed" §3,
// grist-samples/real/read/get-records-Guides-if-none-match.txt; POST /sql
// ignores the header). The server still builds the answer, so a 304 saves
// transfer and decoding, not the server's work.
//
// The probes are:
//   - metaProbe, _grist_Tables_column's records: every column of every
//     table, so an added, removed or renamed column, a type change (which
//     may leave a table's /records answer byte for byte the same, Int to
//     Numeric) and an added or removed table all change its ETag;
//   - each selected table's rows, "/tables/{id}/records?sort=id", the very
//     request a full listing makes when SQL is refused, so the listing's own
//     answer supplies the tag of the rows it listed;
//   - what the records' values depend on beyond their own table: the rows
//     of a Ref target keyed by a column but not selected (its key values
//     become link keys) and _grist_Attachments when a table has an
//     Attachments column (its metadata becomes attribute values).
//
// Polling sends the cursor's probes in order (metaProbe first) with
// If-None-Match and stops at the first that is not 304. All 304 yields
// sources.ErrNotModified: nothing read, nothing deleted. Anything else
// leads to a full listing of every table, complete (Page.Partial false) so
// that deletions follow from absence as usual. A listing limited to the
// changed tables would need Partial plus explicit Page.Deleted, and only
// the pipeline's state knows a changed table's old keys; the saving of
// ETags is therefore the all-unchanged case, which is the common one
// between edits.
//
// A tag must never describe data newer than what was listed, or a change
// made between the two would be missed. So each tag comes from the answer
// listed (/records) or from a probe sent before the listing (metaProbe
// before the schema is read, the others before any row is read); a change
// after the probe only makes the next poll list again.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kgsync/kgsync/sources"
)

// metaProbe is the GET whose ETag changes with any column of any table
// (grist-samples/real/read/get-records-_grist_Tables_column-limit3.txt).
const metaProbe = "/tables/_grist_Tables_column/records"

// attachmentsProbe is the request loadAttachments makes.
const attachmentsProbe = "/tables/_grist_Attachments/records"

// recordsProbe is the probe of a table's rows: the request scanTable makes
// when it reads through /records.
func recordsProbe(tableID string) string {
	return "/tables/" + url.PathEscape(tableID) + "/records?sort=id"
}

// etagSet collects the tags of one listing: probes is every probe the
// next poll must send, tags what was learned so far.
type etagSet struct {
	probes []string
	tags   map[string]string
}

// complete returns the tags when every probe has one, else nil: a cursor
// without ETags makes the next Read list everything, as an incomplete set
// would miss changes to the probes it lacks.
func (e *etagSet) complete(s *Source) map[string]string {
	out := make(map[string]string, len(e.probes))
	for _, p := range e.probes {
		tag := e.tags[p]
		if tag == "" {
			s.logger.Info("no ETag for a probe, next read lists everything", "probe", p)
			return nil
		}
		out[p] = tag
	}
	return out
}

// configPrint fingerprints the configuration that decides the probes and
// the records (tables, key columns, attachment formats), so that a changed
// configuration is listed in full rather than answered "not modified".
func (s *Source) configPrint() string {
	var used []string
	for _, n := range s.cfg.Names {
		used = append(used, n.Table+"."+n.Column)
	}
	slices.Sort(used)
	b, _ := json.Marshal(struct {
		Tables      []string
		KeyColumns  map[string]string
		Attachments map[string]string
		Names       []string
	}{s.cfg.Tables, s.cfg.KeyColumns, s.cfg.AttachmentFormats, slices.Compact(used)})
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])[:16]
}

// probe sends GET key (a path below the document, optionally with a query)
// with If-None-Match: old when old is set, and closes the body unread. It
// returns the answer's ETag and whether the resource changed: false for a
// 304, and for a 200 carrying the very tag sent (a server or proxy that
// ignores If-None-Match). A 403, or a 404 other than "document not found"
// (a table renamed or removed, metadata hidden), counts as changed with no
// tag; other errors are returned.
func (s *Source) probe(ctx context.Context, key, old string) (tag string, changed bool, err error) {
	p, rawQuery, _ := strings.Cut(key, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", false, err
	}
	var hdr http.Header
	if old != "" {
		hdr = http.Header{"If-None-Match": {old}}
	}
	s.stats.ETagProbes.Add(1)
	resp, err := s.c.do(ctx, http.MethodGet, p, q, nil, hdr, "", "check for changes")
	if err != nil {
		if code := statusOf(err); code == http.StatusForbidden || code == http.StatusNotFound && !isDocNotFound(err) {
			s.logger.Info("etag probe refused, listing everything", "probe", key, "err", err)
			return "", true, nil
		}
		return "", false, err
	}
	resp.Body.Close()
	tag = resp.Header.Get("ETag")
	if resp.StatusCode == http.StatusNotModified {
		s.stats.ETag304.Add(1)
		return old, false, nil
	}
	return tag, old == "" || tag != old, nil
}

// probeOrder is the cursor's probes with metaProbe first (a schema change
// makes every other answer moot), then the rest sorted.
func probeOrder(tags map[string]string) []string {
	var rest []string
	for p := range tags {
		if p != metaProbe {
			rest = append(rest, p)
		}
	}
	slices.Sort(rest)
	if _, ok := tags[metaProbe]; ok {
		return append([]string{metaProbe}, rest...)
	}
	return rest
}

// poll sends the cursor's probes until one reports a change. Tags of the
// probes answered go into fresh. It reports whether all were unchanged.
func (s *Source) poll(ctx context.Context, old map[string]string, fresh map[string]string) (bool, error) {
	for _, p := range probeOrder(old) {
		tag, changed, err := s.probe(ctx, p, old[p])
		if err != nil {
			return false, err
		}
		if tag != "" {
			fresh[p] = tag
		}
		if changed {
			s.logger.Debug("etag probe changed", "probe", p)
			return false, nil
		}
	}
	return true, nil
}

// readETag is Read when /states is refused. With a cursor holding ETags
// for the current configuration and no full listing due (FullEvery), it
// polls; all 304 yields sources.ErrNotModified. Otherwise it lists every
// table and stores the probes' tags in the new cursor.
func (s *Source) readETag(ctx context.Context, cursor string, old cursorState, idx sources.RowIndex, yield yieldFunc) error {
	now := s.cfg.Now()
	cfg := s.configPrint()
	fresh := map[string]string{}
	due := now.Sub(time.Unix(old.Full, 0)) >= s.cfg.FullEvery
	if len(old.ETags) > 0 && old.Config == cfg && !due {
		same, err := s.poll(ctx, old.ETags, fresh)
		if err != nil {
			return err
		}
		if same {
			s.stats.NotModified.Add(1)
			yield(nil, notModified(old))
			return errStopped
		}
	}
	// The schema's tag is taken before the schema is read.
	if _, ok := fresh[metaProbe]; !ok {
		tag, _, err := s.probe(ctx, metaProbe, old.ETags[metaProbe])
		if err != nil {
			return err
		}
		fresh[metaProbe] = tag
	}
	si, err := s.schema(ctx, old.Tables)
	if err != nil {
		return err
	}
	s.warn(si)
	tables := si.tables
	set := &etagSet{probes: []string{metaProbe}, tags: fresh}
	selected := map[string]bool{}
	for _, t := range tables {
		selected[t.ID] = true
		set.probes = append(set.probes, recordsProbe(t.ID))
	}
	// Probes the listing does not answer itself are sent now, before any
	// row is read: dependencies always, tables too while SQL is in use.
	var before []string
	for _, t := range tables {
		if !s.sqlOff() {
			before = append(before, recordsProbe(t.ID))
		}
	}
	for _, dep := range s.dependencies(si, selected) {
		set.probes = append(set.probes, dep)
		before = append(before, dep)
	}
	for _, p := range before {
		if _, ok := fresh[p]; ok {
			continue
		}
		tag, _, err := s.probe(ctx, p, old.ETags[p])
		if err != nil {
			return err
		}
		if tag != "" {
			fresh[p] = tag
		}
	}
	s.stats.FullScans.Add(1)
	next := cursorState{Full: now.Unix(), Schema: fingerprint(tables), Config: cfg, Tables: si.memory, Warnings: si.warnings}
	return s.readFull(ctx, si, idx, cursor, next, set, yield)
}

// dependencies are the probes of what records of tables depend on outside
// their own rows: Ref targets keyed by a column and not selected, and
// _grist_Attachments when a table has an Attachments column.
func (s *Source) dependencies(si *schemaInfo, selected map[string]bool) []string {
	keyed := map[string]bool{}
	for id, name := range si.names {
		if _, ok := s.cfg.KeyColumns[name]; ok {
			keyed[id] = true
		}
		if _, ok := s.cfg.KeyColumns[id]; ok {
			keyed[id] = true
		}
	}
	var deps []string
	att := false
	for _, t := range si.tables {
		att = att || t.HasAtt
		for _, c := range t.Cols {
			if c.Base != "Ref" && c.Base != "RefList" {
				continue
			}
			target := c.Target
			if keyed[target] && !selected[target] {
				deps = append(deps, recordsProbe(target))
			}
		}
	}
	if att {
		deps = append(deps, attachmentsProbe)
	}
	slices.Sort(deps)
	return slices.Compact(deps)
}
