package retrieval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// Calibration is the relevance floor's calibration for one embedder, as
// `kgsync eval --calibrate` measures it on a golden set: the
// thresholds that keep at most 5% of the answerable questions from being
// declined, and the cosines of the best hit at which the embedder's
// similarity alone says a hit is relevant.
type Calibration struct {
	// Embedder is the fingerprint of the embedder it was measured with
	// (embed.Embedder.Model, e.g. "openai/text-embedding-3-small/1536").
	Embedder string `json:"embedder"`
	// MinEvidence and DeclineEvidence replace the floor's (0: keep them).
	MinEvidence     float64 `json:"min_evidence,omitempty"`
	DeclineEvidence float64 `json:"decline_evidence,omitempty"`
	// DeclineCosine is the best hit's cosine that 95% of the answerable
	// questions whose answer was found reach: a search at or above it is
	// never declined (0: not used).
	DeclineCosine float64 `json:"decline_cosine,omitempty"`
	// HighCosine is the cosine above every unanswerable question's best
	// hit, when at least a tenth of the found answerable questions reach
	// it: at or above it the answer is not marked weak for want of the
	// query's words (a paraphrase; 0: not used).
	HighCosine float64 `json:"high_cosine,omitempty"`
	// Questions is the number of golden questions it was measured on.
	Questions int `json:"questions"`
}

// calibrationFile is the file LoadCalibration reads: one calibration per
// embedder fingerprint.
type calibrationFile struct {
	Calibrations []Calibration `json:"calibrations"`
}

// LoadCalibration reads the calibration of the embedder with fingerprint
// model from path (JSON written by WriteCalibration). A missing file or
// one without that embedder gives nil and no error: the floor's own
// thresholds apply. A file that does not parse is an error naming it.
func LoadCalibration(path, model string) (*Calibration, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("floor calibration: %w", err)
	}
	var f calibrationFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("floor calibration %s: %w", path, err)
	}
	for _, c := range f.Calibrations {
		if c.Embedder == model {
			return &c, nil
		}
	}
	return nil, nil
}

// WriteCalibration stores c in path, replacing the calibration of the
// same embedder and keeping the others'; the file is replaced atomically.
func WriteCalibration(path string, c Calibration) error {
	var f calibrationFile
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("floor calibration %s: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("floor calibration: %w", err)
	}
	f.Calibrations = slices.DeleteFunc(f.Calibrations, func(o Calibration) bool { return o.Embedder == c.Embedder })
	f.Calibrations = append(f.Calibrations, c)
	sort.Slice(f.Calibrations, func(i, j int) bool { return f.Calibrations[i].Embedder < f.Calibrations[j].Embedder })
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("floor calibration: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".calibration-*")
	if err != nil {
		return fmt.Errorf("floor calibration: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("floor calibration: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("floor calibration: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("floor calibration: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// Calibrate is calibrate for `kgsync eval --calibrate`: the calibration of
// the floor f for the embedder with fingerprint model, measured on the
// hybrid results of golden questions (EvalReport.Results).
func Calibrate(f Floor, model string, rs []QuestionResult) Calibration {
	return calibrate(f, model, rs)
}

// HeldOut reports whether a golden set's file marks itself held out: a
// comment line starting "# HELD OUT". Its questions are reported, never
// calibrated on.
func HeldOut(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("# HELD OUT")) {
			return true
		}
	}
	return false
}

// calibrate measures the floor's calibration on the hybrid results of an
// eval: DeclineEvidence is the largest evidence below which at most 5% of
// the answerable questions are declined (those the retrievers agree on or
// the similarity vouches for are not); MinEvidence is the least evidence
// that marks the most unanswerable questions weak while at most
// maxWeakFound of the answerable ones whose answer was found are; the cosines are read
// from the best hits' (Calibration).
func calibrate(f Floor, model string, rs []QuestionResult) Calibration {
	c := Calibration{Embedder: model, Questions: len(rs)}
	var found, unans []float64
	answerable := 0
	for _, r := range rs {
		if r.Kind == KindUnanswerable {
			unans = append(unans, r.Evidence.Cosine)
			continue
		}
		answerable++
		if r.Modes[ModeHybrid].AtK > 0 {
			found = append(found, r.Evidence.Cosine)
		}
	}
	sort.Float64s(found)
	if len(found) >= 10 {
		c.DeclineCosine = found[len(found)/20]
		top := 0.0
		for _, u := range unans {
			top = max(top, u)
		}
		if hi := top + 0.01; len(unans) > 0 && hi <= found[len(found)*9/10] {
			c.HighCosine = hi
		}
	}
	g := f
	g.Disabled = false
	g.Calibration = &Calibration{DeclineCosine: c.DeclineCosine, HighCosine: c.HighCosine}
	top := 1 + f.ScoreWeight
	// DeclineEvidence: the largest threshold losing at most 5% of the
	// answerable questions.
	for t := 0; float64(t)/100 <= top+1e-9; t++ {
		g.MinEvidence, g.DeclineEvidence = top, float64(t)/100
		lost := 0
		for _, r := range rs {
			if r.Kind != KindUnanswerable && g.judge(r.Evidence).Declined {
				lost++
			}
		}
		if answerable > 0 && float64(lost) > 0.05*float64(answerable)+1e-9 {
			break
		}
		c.DeclineEvidence = g.DeclineEvidence
	}
	// MinEvidence: the least threshold catching the most unanswerable
	// questions while marking at most 5% of the found answers weak.
	best := -1
	g.DeclineEvidence = c.DeclineEvidence
	for t := 0; float64(t)/100 <= top+1e-9; t++ {
		g.MinEvidence = float64(t) / 100
		caught, weak := 0, 0
		for _, r := range rs {
			v := g.judge(r.Evidence)
			if r.Kind == KindUnanswerable {
				if v.Declined || v.Confidence == ConfidenceLow {
					caught++
				}
			} else if r.Modes[ModeHybrid].AtK > 0 && (v.Declined || v.Confidence == ConfidenceLow) {
				weak++
			}
		}
		if len(found) > 0 && float64(weak) > maxWeakFound*float64(len(found))+1e-9 {
			continue
		}
		if caught > best {
			best, c.MinEvidence = caught, g.MinEvidence
		}
	}
	c.DeclineEvidence = min(c.DeclineEvidence, c.MinEvidence)
	return c
}

// maxWeakFound is the largest share of the answerable questions whose
// answer was found that the calibrated MinEvidence may mark weak: a weak
// answer still reaches the user, marked so, and a question in the user's
// words rather than the document's is often weak lexically.
const maxWeakFound = 0.25
