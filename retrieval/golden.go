package retrieval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Question kinds of a golden set.
const (
	KindLexical      = "lexical"
	KindParaphrase   = "paraphrase"
	KindAddress      = "address"
	KindUnanswerable = "unanswerable"
	// KindDefinition asks what a term means ("what does X mean", "what is
	// meant by X", "define X", "что означает X", "qué se entiende por X").
	KindDefinition = "definition"
)

// GoldenQuestion is one line of a golden set (JSON Lines): a question, its
// kind and language, and the addresses of its answer elements and of the
// context an answer also needs, each in its document's own numbering
// ("RFC 7231 4.2.2", "constitutionrf.txt Статья 81 часть 3"), or no
// answers for an unanswerable question. Addresses are structural, so a
// golden set outlives a change of chunk size.
type GoldenQuestion struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Kind     string   `json:"kind"`
	Lang     string   `json:"lang"`
	Answers  []string `json:"answers"`
	Context  []string `json:"context,omitempty"`
	// Note says how the answer was checked or what the near miss is.
	Note string `json:"note,omitempty"`
}

// goldenAliases are other keys a golden set line may use for the fields.
var goldenAliases = map[string][]string{
	"id":       {"qid", "name"},
	"question": {"query", "q", "text"},
	"kind":     {"type", "category"},
	"lang":     {"language", "locale"},
	"answers":  {"answer", "answer_addresses", "answer_elements", "expected", "addresses", "gold"},
	"context":  {"required_context", "context_addresses", "requires", "needs"},
	"note":     {"notes", "comment"},
}

// ReadGolden reads a golden set: one JSON object a line (blank lines and
// lines starting with # or // are skipped). Besides the GoldenQuestion keys
// it accepts common aliases (query, type, language, answer, expected,
// required_context …) and a single string where a list is expected. kind
// is one of lexical, paraphrase, definition, address, unanswerable (an empty kind is
// unanswerable when there are no answers, lexical otherwise). Errors name
// the file and line; a bad line does not hide the others' errors.
func ReadGolden(r io.Reader, name string) ([]GoldenQuestion, error) {
	var out []GoldenQuestion
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	ids := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' || bytes.HasPrefix(text, []byte("//")) {
			continue
		}
		q, err := parseGolden(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, line, err))
			continue
		}
		if q.ID == "" {
			q.ID = fmt.Sprintf("line%d", line)
		}
		if prev, dup := ids[q.ID]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: id %q already used on line %d", name, line, q.ID, prev))
			continue
		}
		ids[q.ID] = line
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no questions", name))
	}
	return out, errors.Join(errs...)
}

func parseGolden(text []byte) (GoldenQuestion, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(text, &raw); err != nil {
		return GoldenQuestion{}, fmt.Errorf("not a JSON object: %w", err)
	}
	field := func(key string) (json.RawMessage, bool) {
		if v, ok := raw[key]; ok {
			return v, true
		}
		for _, a := range goldenAliases[key] {
			if v, ok := raw[a]; ok {
				return v, true
			}
		}
		return nil, false
	}
	str := func(key string) (string, error) {
		v, ok := field(key)
		if !ok || string(v) == "null" {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			var n json.Number
			if json.Unmarshal(v, &n) == nil {
				return n.String(), nil
			}
			return "", fmt.Errorf("%s: want a string", key)
		}
		return strings.TrimSpace(s), nil
	}
	list := func(key string) ([]string, error) {
		v, ok := field(key)
		if !ok || string(v) == "null" {
			return nil, nil
		}
		var one string
		if json.Unmarshal(v, &one) == nil {
			if one = strings.TrimSpace(one); one == "" {
				return nil, nil
			}
			return []string{one}, nil
		}
		var many []string
		if err := json.Unmarshal(v, &many); err != nil {
			return nil, fmt.Errorf("%s: want a list of addresses", key)
		}
		out := many[:0]
		for _, s := range many {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	var q GoldenQuestion
	var err error
	for _, f := range []struct {
		key string
		to  *string
	}{{"id", &q.ID}, {"question", &q.Question}, {"kind", &q.Kind}, {"lang", &q.Lang}, {"note", &q.Note}} {
		if *f.to, err = str(f.key); err != nil {
			return q, err
		}
	}
	if q.Answers, err = list("answers"); err != nil {
		return q, err
	}
	if q.Context, err = list("context"); err != nil {
		return q, err
	}
	if q.Question == "" {
		return q, errors.New("question: missing or empty")
	}
	q.Kind = strings.ToLower(q.Kind)
	switch q.Kind {
	case "":
		q.Kind = KindLexical
		if len(q.Answers) == 0 {
			q.Kind = KindUnanswerable
		}
	case KindLexical, KindParaphrase, KindAddress, KindDefinition:
		if len(q.Answers) == 0 {
			return q, fmt.Errorf("kind %s: no answers (an unanswerable question has kind unanswerable)", q.Kind)
		}
	case KindUnanswerable, "negative", "none":
		q.Kind = KindUnanswerable
		if len(q.Answers) > 0 {
			return q, errors.New("kind unanswerable: has answers")
		}
	default:
		return q, fmt.Errorf("kind %q: want lexical, paraphrase, definition, address or unanswerable", q.Kind)
	}
	q.Lang = strings.ToLower(q.Lang)
	if q.Lang == "" {
		q.Lang = DetectLanguage(q.Question)
	}
	return q, nil
}
