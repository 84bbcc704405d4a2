package retrieval

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report as tables: the modes side by side, the
// hybrid and expanded modes split by kind and language, the relevance
// floor and its calibration, and the unresolved addresses.
func (r *EvalReport) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Golden != "" {
		what := "tuning set"
		if r.HeldOut {
			what = "HELD-OUT set"
		}
		fmt.Fprintf(&b, "golden %s (%s)\n", r.Golden, what)
	}
	fmt.Fprintf(&b, "pipeline %s, embedder %s: %d questions, k=%d, budget %d tokens\n\n", r.Pipeline, r.Embedder, r.Questions, r.K, r.Budget)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mode\tanswerable\trecall@1\trecall@%d\tsufficient\tmedian tokens\tmean tokens\n", r.K)
	for _, m := range r.Modes {
		a := m.All
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.0f\t%.0f\n", m.Mode, a.Questions, a.Recall1, a.Recall5, a.Sufficiency, a.MedianTokens, a.MeanTokens)
	}
	_ = tw.Flush()
	for _, m := range r.Modes {
		if m.Mode != ModeHybrid && m.Mode != ModeExpand {
			continue
		}
		fmt.Fprintf(&b, "\n%s by kind and language:\n", m.Mode)
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "split\tquestions\trecall@1\trecall@%d\tsufficient\tmedian tokens\n", r.K)
		for _, k := range sortedMetricKeys(m.ByKind) {
			x := m.ByKind[k]
			fmt.Fprintf(tw, "kind %s\t%d\t%.2f\t%.2f\t%.2f\t%.0f\n", k, x.Questions, x.Recall1, x.Recall5, x.Sufficiency, x.MedianTokens)
		}
		for _, l := range sortedMetricKeys(m.ByLang) {
			x := m.ByLang[l]
			fmt.Fprintf(tw, "lang %s\t%d\t%.2f\t%.2f\t%.2f\t%.0f\n", l, x.Questions, x.Recall1, x.Recall5, x.Sufficiency, x.MedianTokens)
		}
		_ = tw.Flush()
	}
	f := r.Floor
	if f.Unanswerable+f.Answerable > 0 {
		fmt.Fprintf(&b, "\nrelevance floor (decline below %.2f, low confidence below %.2f, score_weight %.2f):\n", f.DeclineEvidence, f.MinEvidence, f.ScoreWeight)
		fmt.Fprintf(&b, "  answerable (%d): %.0f%% declined (%.0f%% whose answer was in the hits), %.0f%% answered with low confidence\n",
			f.Answerable, 100*f.Lost, 100*f.LostFound, 100*f.WeakAnswerable)
		fmt.Fprintf(&b, "  unanswerable (%d): %.0f%% declined or low confidence (%.0f%% declined, %.0f%% low)\n",
			f.Unanswerable, 100*f.Caught, 100*f.Declined, 100*f.Weak)
		c := f.Calibration
		fmt.Fprintf(&b, "calibrated for %s on these %d questions: decline below %.2f, low below %.2f", c.Embedder, c.Questions, c.DeclineEvidence, c.MinEvidence)
		if c.DeclineCosine > 0 {
			fmt.Fprintf(&b, ", never declined at cosine >= %.2f", c.DeclineCosine)
		}
		if c.HighCosine > 0 {
			fmt.Fprintf(&b, ", never low at cosine >= %.2f", c.HighCosine)
		}
		fmt.Fprintf(&b, "\n  outcome: %.0f%% of answerable declined, %.0f%% low; %.0f%% of unanswerable declined or low (eval --calibrate stores it for searches)\n",
			100*f.CalibratedLost, 100*f.CalibratedWeak, 100*f.CalibratedCaught)
		if len(f.Curve) > 0 {
			b.WriteString("trade-off (min_evidence: unanswerable caught / found answers weak):")
			for i, p := range f.Curve {
				if i > 0 && p.Caught == f.Curve[i-1].Caught && p.WeakFound == f.Curve[i-1].WeakFound {
					continue
				}
				fmt.Fprintf(&b, " %.2f: %.0f%%/%.0f%%", p.MinEvidence, 100*p.Caught, 100*p.WeakFound)
			}
			b.WriteString("\n")
		}
	}
	if len(r.Unresolved) > 0 {
		fmt.Fprintf(&b, "\n%d golden addresses name no element (their questions count as missed):\n", len(r.Unresolved))
		for _, u := range r.Unresolved {
			fmt.Fprintf(&b, "  %s\n", u)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sortedMetricKeys(m map[string]Metrics) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Mode returns the report of one mode, or nil.
func (r *EvalReport) Mode(mode string) *ModeReport {
	for i := range r.Modes {
		if r.Modes[i].Mode == mode {
			return &r.Modes[i]
		}
	}
	return nil
}
