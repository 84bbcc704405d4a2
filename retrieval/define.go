package retrieval

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// reSubjects returns the patterns of a definition question, each with its
// subject (what it asks the meaning of) as group 1, compiled on first use:
// "what does X mean", "what is meant by X", "define X", "the meaning of
// X", "what is X", "что означает X", "что понимается под X", "что такое
// X", "qué se entiende por X", "qué significa X".
var reSubjects = sync.OnceValue(func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range []string{
		`^what\s+(?:does|do)\s+(?:the\s+(?:term|word|phrase|expression|abbreviation|acronym|letters)\s+)?(.+?)\s+(?:mean|stand\s+for)\b`,
		`^what\s+is\s+meant\s+by\s+(.+)$`,
		`^what\s+is\s+understood\s+by\s+(.+)$`,
		`^(?:please\s+)?define\s+(.+)$`,
		`^(?:what\s+is\s+)?the\s+(?:definition|meaning)\s+of\s+(.+)$`,
		`^(?:definition|meaning)\s+of\s+(.+)$`,
		`^what(?:\s+(?:is|are)|'s)\s+(?:an?\s+|the\s+)?(.+)$`,
		`^что\s+(?:означает|обозначает|значит|такое|понимается\s+под|подразумевается\s+под)\s+(?:(?:термин|понятие|слово|выражение)\s+)?(.+)$`,
		`^(?:дайте\s+)?определение\s+(?:(?:термина|понятия|слова|выражения)\s+)?(.+)$`,
		`^qu[ée]\s+(?:se\s+entiende\s+por|significa|quiere\s+decir|es|son)\s+(.+)$`,
		`^(?:(?:cu[áa]l\s+es\s+)?(?:la\s+)?definici[óo]n\s+de|define)\s+(.+)$`,
		`^(?:que\s+(?:signifie|veut\s+dire)|qu['’]entend-on\s+par|qu['’]est-ce\s+qu['’](?:e\s+)?|(?:quelle\s+est\s+la\s+)?d[ée]finition\s+(?:de\s+|d['’]|du\s+|des\s+))\s*(.+)$`,
	} {
		out = append(out, regexp.MustCompile(`(?i)`+p))
	}
	return out
})

// reSubjectTail is where a subject's qualification starts: "X in the
// GDPR", "X under this Regulation", "X в спецификации", "X según …".
var reSubjectTail = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\s+(?:in|under|according\s+to|for\s+the\s+purposes\s+of|in\s+terms\s+of|в|во|по|согласно|en|seg[úu]n|de\s+acuerdo\s+con)\s+.*$`)
})

// definitionSubjects are the subjects a definition question may ask the
// meaning of, most specific first: the subject whole and without its
// qualification ("X in the MDR" → "X"); none for another question.
func definitionSubjects(query string) []string {
	s, _ := subjectsOf(query)
	return s
}

// reWhatIs is the pattern of "what is X" among reSubjects: it asks a
// definition only when X names a term or a heading whole ("What is the
// unknown identifier used for?" does not ask what it is).
const reWhatIs = 6

// subjectsOf is definitionSubjects and whether the subject must name a
// term or heading whole (a "what is X" question).
func subjectsOf(query string) ([]string, bool) {
	q := strings.TrimSpace(query)
	q = strings.TrimRight(q, "?.!¿ ")
	q = strings.TrimLeft(q, "¿ ")
	for i, re := range reSubjects() {
		m := re.FindStringSubmatch(q)
		if m == nil {
			continue
		}
		clean := func(s string) string {
			return strings.TrimSpace(strings.Trim(strings.TrimSpace(s), `"'«»“”‘’„`))
		}
		var out []string
		if s := clean(m[1]); s != "" {
			out = append(out, s)
		}
		if s := clean(reSubjectTail().ReplaceAllString(m[1], "")); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
		return out, i == reWhatIs
	}
	return nil, false
}

// titleIndex finds sections by their heading's lexical terms (the heading
// without its number), built on first use.
type titleIndex struct {
	once   sync.Once
	byKey  map[string][]string // joined terms → section ids
	lang   map[string]string   // section id → its document's language
	maxLen int
}

// definitionTargets are the nodes a definition question's subject names
// exactly: the defined terms whose name (or an alias) has the subject's
// terms, else the sections whose heading does ("zero value" names "The
// zero value"; "User-Agent header field" names "5.5.3. User-Agent", the
// heading holding at least half of the subject's words as its start).
// Term definitions come first.
func (d *corpusData) definitionTargets(subjects []string, whole bool) []string {
	if len(subjects) == 0 {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	langs := append(slices.Clone(d.langs), "")
	for _, s := range subjects {
		wants := map[string][]string{} // the subject's terms in each document language
		for _, t := range d.x.terms {
			lang := ""
			if doc := d.x.docOf[t.DefinedIn]; doc != nil {
				lang = doc.Lang
			}
			want, ok := wants[lang]
			if !ok {
				want = Terms(s, lang)
				wants[lang] = want
			}
			if len(want) == 0 {
				continue
			}
			for _, alias := range termAliases(t.Name) {
				if slices.Equal(Terms(alias, lang), want) {
					add(t.DefinedIn)
					break
				}
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	ti := d.titles()
	for _, s := range subjects {
		for _, lang := range langs {
			want := Terms(s, lang)
			for n := min(len(want), ti.maxLen); n >= 1 && 2*n >= len(want) && (!whole || n == len(want)); n-- {
				for _, id := range ti.byKey[strings.Join(want[:n], " ")] {
					if l := ti.lang[id]; l == "" || lang == "" || l == lang {
						add(id)
					}
				}
				if len(out) > 0 {
					return out
				}
			}
		}
	}
	return out
}

// titles builds the title index on first use.
func (d *corpusData) titles() *titleIndex {
	ti := &d.titleIdx
	ti.once.Do(func() {
		ti.byKey, ti.lang = map[string][]string{}, map[string]string{}
		for _, doc := range d.corpus.Documents {
			for _, n := range doc.Nodes {
				if n.Label != LabelSection || strings.TrimSpace(n.Title) == "" {
					continue
				}
				title := reLeadNumber().ReplaceAllString(n.Title, "")
				key := Terms(title, doc.Lang)
				if len(key) == 0 || len(key) > 8 {
					continue
				}
				k := strings.Join(key, " ")
				ti.byKey[k] = append(ti.byKey[k], n.ID)
				ti.lang[n.ID] = doc.Lang
				ti.maxLen = max(ti.maxLen, len(key))
			}
		}
	})
	return ti
}
