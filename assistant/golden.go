package assistant

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/retrieval"
)

// Question is one structured golden question: the golden-set line
// (id, question, kind, lang, answers) with the complete list of expected
// row ids in Answers, the expected count, the rows call that answers it
// and the anchor and attribute vts restricts search to.
type Question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	// Kind is "list" (show all), "count" (how many) or "vts" (a question
	// in words answered by a row: search only).
	Kind string `json:"kind"`
	Lang string `json:"lang,omitempty"`
	// Answers are the expected row ids, every one of them.
	Answers []string `json:"answers"`
	// Count is the expected number of rows (len(Answers) when absent).
	Count *int `json:"count,omitempty"`
	// Rows is the rows call that answers the question (not for vts).
	Rows *RowsInput `json:"rows,omitempty"`
	// Search restricts the restricted search: anchor and attribute.
	Search *struct {
		Anchor    string `json:"anchor"`
		Attribute string `json:"attribute,omitempty"`
	} `json:"search,omitempty"`
	Note string `json:"note,omitempty"`
}

// ReadQuestions reads structured golden questions, one JSON object a line
// (blank lines and lines starting with # skipped). Unknown keys are
// errors. Errors name the file and line; a bad line does not hide the
// others' errors.
func ReadQuestions(r io.Reader, name string) ([]Question, error) {
	var out []Question
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	ids := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		var q Question
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, line, err))
			continue
		}
		switch {
		case q.ID == "":
			errs = append(errs, fmt.Errorf("%s:%d: id is empty", name, line))
		case ids[q.ID] > 0:
			errs = append(errs, fmt.Errorf("%s:%d: id %q already used on line %d", name, line, q.ID, ids[q.ID]))
		case q.Question == "":
			errs = append(errs, fmt.Errorf("%s:%d: question is empty", name, line))
		case !slices.Contains([]string{"list", "count", "vts"}, q.Kind):
			errs = append(errs, fmt.Errorf("%s:%d: kind %q, want list, count or vts", name, line, q.Kind))
		case q.Kind != "vts" && q.Rows == nil:
			errs = append(errs, fmt.Errorf("%s:%d: a %s question needs its rows call", name, line, q.Kind))
		default:
			ids[q.ID] = line
			out = append(out, q)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return out, errors.Join(errs...)
}

// expected is the question's expected count.
func (q Question) expected() int {
	if q.Count != nil {
		return *q.Count
	}
	return len(q.Answers)
}

// Tool scores of an evaluation, in report order.
const (
	ToolRows             = "rows"
	ToolSearch           = "search"
	ToolSearchRestricted = "search+anchor/attribute"
)

// ToolScore is one tool's score on the questions it was asked.
type ToolScore struct {
	Tool      string `json:"tool"`
	Questions int    `json:"questions"`
	// ExactList is the share of questions whose answer is the complete
	// list, nothing missing and nothing extra (list questions).
	ExactList float64 `json:"exact_list"`
	ListQs    int     `json:"list_questions"`
	// Count is the share whose count is right (list and count questions):
	// for rows its total, for search the number of rows it returned.
	Count   float64 `json:"count"`
	CountQs int     `json:"count_questions"`
	// Recall is the mean share of the expected rows returned (list and
	// vts questions).
	Recall   float64 `json:"recall"`
	RecallQs int     `json:"recall_questions"`
}

// QuestionScore is one question's outcome per tool.
type QuestionScore struct {
	ID    string                    `json:"id"`
	Kind  string                    `json:"kind"`
	Tools map[string]QuestionResult `json:"tools"`
}

// QuestionResult is a tool's answer to one question.
type QuestionResult struct {
	Exact  bool    `json:"exact"`
	Count  int     `json:"count"`
	Recall float64 `json:"recall"`
	Error  string  `json:"error,omitempty"`
}

// EvalReport is the structured evaluation of a pipeline's tools.
type EvalReport struct {
	Pipeline  string          `json:"pipeline"`
	Questions int             `json:"questions"`
	Tools     []ToolScore     `json:"tools"`
	Results   []QuestionScore `json:"results"`
}

// searchK is how many hits the search baselines ask for: as many as the
// question expects rows, at least 5 and at most 50, so search has the room
// to list the answer.
func searchK(n int) int { return min(max(n, 5), 50) }

// Eval scores the tools on questions for pipeline name ("" when one is
// served): rows by its complete list and total (every page read), search
// without and with the question's anchor/attribute by recall, complete
// list and the number of rows it returned, the answer a search-only
// assistant would give.
func (s *Server) Eval(ctx context.Context, name string, qs []Question) (rep *EvalReport, err error) {
	defer func() {
		if err != nil && ctx.Err() != nil {
			s.dropViews()
		}
	}()
	p, err := s.pipelineFor(name)
	if err != nil {
		return nil, err
	}
	v, err := s.viewOf(ctx, p)
	if err != nil {
		return nil, err
	}
	rep = &EvalReport{Pipeline: p.Name, Questions: len(qs)}
	for _, q := range qs {
		qsc := QuestionScore{ID: q.ID, Kind: q.Kind, Tools: map[string]QuestionResult{}}
		if q.Rows != nil {
			ids, total, err := s.allRows(ctx, p.Name, *q.Rows)
			r := QuestionResult{Count: total}
			if err != nil {
				r.Error = err.Error()
			} else {
				r.Exact, r.Recall = score(q.Answers, ids)
			}
			qsc.Tools[ToolRows] = r
		}
		k := searchK(len(q.Answers))
		searches := map[string]retrieval.Options{ToolSearch: {K: k}}
		if q.Search != nil {
			searches[ToolSearchRestricted] = retrieval.Options{K: k, Anchor: q.Search.Anchor, Attribute: q.Search.Attribute}
		}
		for tool, o := range searches {
			res, err := v.srch.Search(ctx, q.Question, o)
			var r QuestionResult
			if err != nil {
				r.Error = err.Error()
			} else {
				var ids []string
				for _, h := range res.Hits {
					if !slices.Contains(ids, h.Node) {
						ids = append(ids, h.Node)
					}
				}
				r.Count = len(ids)
				r.Exact, r.Recall = score(q.Answers, ids)
			}
			qsc.Tools[tool] = r
		}
		rep.Results = append(rep.Results, qsc)
	}
	for _, tool := range []string{ToolRows, ToolSearch, ToolSearchRestricted} {
		ts := ToolScore{Tool: tool}
		var recall float64
		var exact, count int
		for i, qsc := range rep.Results {
			r, ok := qsc.Tools[tool]
			if !ok {
				continue
			}
			q := qs[i]
			ts.Questions++
			if q.Kind != "count" {
				ts.RecallQs++
				recall += r.Recall
			}
			if q.Kind == "list" {
				ts.ListQs++
				if r.Exact && r.Error == "" {
					exact++
				}
			}
			if q.Kind != "vts" {
				ts.CountQs++
				if r.Error == "" && r.Count == q.expected() {
					count++
				}
			}
		}
		if ts.Questions == 0 {
			continue
		}
		if ts.RecallQs > 0 {
			ts.Recall = recall / float64(ts.RecallQs)
		}
		if ts.ListQs > 0 {
			ts.ExactList = float64(exact) / float64(ts.ListQs)
		}
		if ts.CountQs > 0 {
			ts.Count = float64(count) / float64(ts.CountQs)
		}
		rep.Tools = append(rep.Tools, ts)
	}
	return rep, nil
}

// allRows reads every page of a rows call: the ids and the total.
func (s *Server) allRows(ctx context.Context, pipeline string, in RowsInput) ([]string, int, error) {
	if in.Pipeline == "" {
		in.Pipeline = pipeline
	}
	if in.Count {
		out, err := s.Rows(ctx, in)
		return nil, out.Total, err
	}
	in.Limit, in.Offset = MaxRowsLimit, 0
	var ids []string
	for {
		out, err := s.Rows(ctx, in)
		if err != nil {
			return nil, 0, err
		}
		for _, r := range out.Rows {
			ids = append(ids, r.ID)
		}
		if out.NextOffset == 0 {
			return ids, out.Total, nil
		}
		in.Offset = out.NextOffset
	}
}

// score compares got with want: exact when they hold the same ids, and
// the share of want in got (1 when want is empty and got is too).
func score(want, got []string) (bool, float64) {
	if len(want) == 0 {
		return len(got) == 0, map[bool]float64{true: 1, false: 0}[len(got) == 0]
	}
	gs := map[string]bool{}
	for _, g := range got {
		gs[g] = true
	}
	hit := 0
	for _, w := range want {
		if gs[w] {
			hit++
		}
	}
	return hit == len(want) && len(gs) == len(want), float64(hit) / float64(len(want))
}

// WriteText prints the report as a table, the search-only baselines
// beside rows.
func (r *EvalReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "structured golden set: %d questions, pipeline %s\n", r.Questions, r.Pipeline)
	fmt.Fprintf(&b, "%-24s %9s %14s %14s %14s\n", "tool", "questions", "exact list", "count", "recall")
	for _, t := range r.Tools {
		fmt.Fprintf(&b, "%-24s %9d %6.1f%% of %3d %6.1f%% of %3d %6.1f%% of %3d\n", t.Tool, t.Questions,
			100*t.ExactList, t.ListQs, 100*t.Count, t.CountQs, 100*t.Recall, t.RecallQs)
	}
	for _, q := range r.Results {
		if rr, ok := q.Tools[ToolRows]; ok && rr.Error != "" {
			fmt.Fprintf(&b, "rows failed on %s: %s\n", q.ID, rr.Error)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
