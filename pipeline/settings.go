package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/kgsync/kgsync/state"
)

// settingsCursor is the cursor row where a run stores the settings of the
// pipeline's fingerprint and data model as JSON, for `kgsync plan`.
const settingsCursor = "_settings"

// settingNames name a fingerprint setting as the config writes it.
var settingNames = map[string]string{
	"max_tokens":      "chunking.max_tokens",
	"overlap_tokens":  "chunking.overlap_tokens",
	"tokenizer":       "chunking.tokenizer",
	"embedder":        "embedder.model",
	"mapping_version": "kgsync's graph mapping version",
	"chunker_version": "kgsync's chunker version",
	"analyzer":        "kgsync's lexical analyzer version",
	"review":          "review sources",
	"model":           "model (anchors, attributes, links; hash)",
}

// settingsNow are the settings a run stores: the fingerprint's values and
// the data model's mark.
func (p *Pipeline) settingsNow() map[string]any {
	if p.Settings == nil {
		return nil
	}
	s := maps.Clone(p.Settings)
	s["model"] = fmt.Sprintf("%016x", p.Model.Mark())
	return s
}

// storeSettings records the settings after a run that read every source.
func (r *runner) storeSettings(ctx context.Context) error {
	s := r.p.settingsNow()
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return r.p.Store.Commit(ctx, state.Commit{Pipeline: r.p.Name, Cursors: map[string]string{settingsCursor: string(b)}})
}

// SettingChanges compares the settings the last run stored with the
// current ones: one line per changed setting, "chunking.max_tokens: 512 →
// 400", sorted; nil when none changed or nothing was stored (a pipeline
// never run, or last run by an older kgsync: then one line says so when
// known is false).
func (p *Pipeline) SettingChanges(ctx context.Context) (changes []string, known bool, err error) {
	now := p.settingsNow()
	if now == nil {
		return nil, false, nil
	}
	raw, err := p.Store.CursorGet(ctx, p.Name, settingsCursor)
	if err != nil || raw == "" {
		return nil, false, err
	}
	var old map[string]any
	if err := json.Unmarshal([]byte(raw), &old); err != nil {
		return nil, false, fmt.Errorf("stored settings: %w", err)
	}
	nowJSON, _ := json.Marshal(now)
	var cur map[string]any
	_ = json.Unmarshal(nowJSON, &cur) // the same JSON types as the stored ones
	keys := slices.Sorted(maps.Keys(settingNames))
	for _, k := range keys {
		o, n := old[k], cur[k]
		if fmt.Sprint(o) == fmt.Sprint(n) {
			continue
		}
		changes = append(changes, fmt.Sprintf("%s: %s → %s", settingNames[k], show(o), show(n)))
	}
	return changes, true, nil
}

func show(v any) string {
	if v == nil {
		return "(none)"
	}
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
