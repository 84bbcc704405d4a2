package chunker

import (
	"regexp"
	"strings"
	"sync"
)

// Russian acts as officially published open with the state's name
// ("РОССИЙСКАЯ ФЕДЕРАЦИЯ"), the act's type ("ФЕДЕРАЛЬНЫЙ ЗАКОН") and its
// title ("О персональных данных"), and close with the signature, the
// place, the date and the number ("Президент Российской Федерации
// В.Путин", "Москва, Кремль", "27 июля 2006 года", "N 152-ФЗ"). Other
// documents cite the act by type, date and number ("Федеральный закон от
// 27.07.2006 N 152-ФЗ") or by number alone ("152-ФЗ"), never by the
// state's name.

// ruActPatterns holds the patterns of a Russian act's header and
// signature block; ruActRe compiles them.
type ruActPatterns struct {
	typeLine, signature, dateLine, numberLine, headerDate, citedAs, edition *regexp.Regexp
}

var ruMonths = map[string]string{
	"января": "01", "февраля": "02", "марта": "03", "апреля": "04", "мая": "05", "июня": "06",
	"июля": "07", "августа": "08", "сентября": "09", "октября": "10", "ноября": "11", "декабря": "12",
}

// ruActRe returns the patterns of a Russian act's header and signature
// block, compiled on first use.
var ruActRe = sync.OnceValue(func() *ruActPatterns {
	return &ruActPatterns{
		typeLine: regexp.MustCompile(`^(?i:федеральный конституционный закон|федеральный закон|закон российской федерации|закон республики беларусь|кодекс российской федерации|указ президента российской федерации|постановление правительства российской федерации|распоряжение правительства российской федерации)(?:\s+(\S.*))?$`),
		// signature: the office and the signatory's initials and name, nothing
		// else ("Президент Российской Федерации является …" is a sentence).
		signature:  regexp.MustCompile(`^(?:Президент|Председатель Правительства|Исполняющий обязанности Президента) (?:Российской Федерации|Республики Беларусь)(?:\s+[А-ЯЁ]\.\s?(?:[А-ЯЁ]\.\s?)?[А-ЯЁ][а-яё]+(?:-[А-ЯЁ][а-яё]+)?)?$`),
		dateLine:   regexp.MustCompile(`^(\d{1,2})\s+(января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря)\s+(\d{4})\s*(?:года|г\.)?$`),
		numberLine: regexp.MustCompile(`^(?:N|№)\s*(\d{1,5}(?:-[А-ЯЁ]{1,4})?)$`),
		// headerDate: a Belarus law's date and number set under its type
		// ("10 ноября 2008 г. № 455-З"), not under its signature.
		headerDate: regexp.MustCompile(`^(\d{1,2})\s+(января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря)\s+(\d{4})\s*(?:года|г\.)?\s+(?:N|№)\s*(\d{1,5}(?:-[А-ЯЁ]{1,4})?)$`),
		// citedAs: "Федеральный закон от 27.07.2006 N 152-ФЗ" at the start
		// of a title.
		// edition: "(ред. от 08.08.2024)", the version a copy shows.
		edition: regexp.MustCompile(`^\(ред\.[^)]*\)`),
		citedAs: regexp.MustCompile(`^((?:Федеральный конституционный закон|Федеральный закон|Закон Российской Федерации|Закон Республики Беларусь|Указ Президента Российской Федерации|Постановление Правительства Российской Федерации|Распоряжение Правительства Российской Федерации)\s+от\s+\d{2}\.\d{2}\.\d{4}(?:\s*г\.)?\s+(?:N|№)\s*(\d{1,5}(?:-[А-ЯЁ]{1,4})?))`),
	}
})

// isRuSignature reports whether a paragraph opens a Russian act's
// signature block.
func isRuSignature(text string) bool { return ruActRe().signature.MatchString(text) }

// ruActTitle reads a Russian act's header (its type, then its title,
// among the paragraphs before the first section) and its signature block
// (date and number among the last paragraphs) and returns its title as
// it is cited: `Федеральный закон от 27.07.2006 N 152-ФЗ "О персональных
// данных"`; "" when either is missing.
func ruActTitle(root *Element) string {
	var kind, name, date, number string
	for i, c := range root.Children {
		if isContainer(c.Kind) || i > 12 {
			break
		}
		t := normalizeSpace(c.Text)
		if m := ruActRe().citedAs.FindStringSubmatch(t); m != nil && i < 4 {
			// A heading line that cites the act already ("Федеральный
			// закон от 27.07.2006 N 152-ФЗ (ред. от 08.08.2024) "О
			// персональных данных"").
			rest := strings.TrimSpace(ruActRe().edition.ReplaceAllString(strings.TrimSpace(t[len(m[1]):]), ""))
			if rest == "" {
				return m[1]
			}
			return m[1] + " " + rest
		}
		if m := ruActRe().typeLine.FindStringSubmatch(t); kind == "" && m != nil {
			// "ФЕДЕРАЛЬНЫЙ ЗАКОН", its title on the next line or, where a
			// centred heading ran on, on the same one.
			name = m[1]
			t = strings.TrimSpace(strings.TrimSuffix(t, m[1]))
			r := []rune(strings.ToLower(t))
			kind = strings.ToUpper(string(r[0])) + string(r[1:])
			kind = strings.Replace(kind, "российской федерации", "Российской Федерации", 1)
			kind = strings.Replace(kind, "президента", "Президента", 1)
			kind = strings.Replace(kind, "правительства", "Правительства", 1)
			kind = strings.Replace(kind, "республики беларусь", "Республики Беларусь", 1)
			continue
		}
		if m := ruActRe().headerDate.FindStringSubmatch(t); kind != "" && name == "" && m != nil {
			date, number = ruDate(m[1], m[2], m[3]), m[4]
			continue
		}
		if kind != "" && name == "" {
			name = t
		}
	}
	if kind == "" || name == "" {
		return ""
	}
	kids := root.Children
	for i := len(kids) - 1; i >= 0 && i >= len(kids)-8; i-- {
		t := normalizeSpace(kids[i].Text)
		if m := ruActRe().numberLine.FindStringSubmatch(t); m != nil && number == "" {
			number = m[1]
		}
		if m := ruActRe().dateLine.FindStringSubmatch(t); m != nil && date == "" {
			date = ruDate(m[1], m[2], m[3])
		}
	}
	if date == "" || number == "" {
		return ""
	}
	name = strings.Trim(name, `"«»“” `)
	return kind + " от " + date + " N " + number + ` "` + name + `"`
}

// ruDate writes a date set as "7 июля 2003" as it is cited: "07.07.2003".
func ruDate(day, month, year string) string {
	if len(day) == 1 {
		day = "0" + day
	}
	return day + "." + ruMonths[month] + "." + year
}

// ruActIDs are the ways other documents cite a Russian act titled as
// ruActTitle writes it: "Федеральный закон от 27.07.2006 N 152-ФЗ" and
// "152-ФЗ".
func ruActIDs(title string) []string {
	m := ruActRe().citedAs.FindStringSubmatch(normalizeSpace(title))
	if m == nil {
		return nil
	}
	return []string{m[1], m[2]}
}
