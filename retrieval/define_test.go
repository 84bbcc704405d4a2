package retrieval

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDefinitionSubjects: the subject of a definition question in English,
// Russian and Spanish, with and without its qualification; none for a
// question that asks something else.
func TestDefinitionSubjects(t *testing.T) {
	for q, want := range map[string][]string{
		"What does pseudonymisation mean in the GDPR?": {"pseudonymisation"},
		"Define pseudonymisation under the GDPR":       {"pseudonymisation under the GDPR", "pseudonymisation"},
		"What is meant by 'placing on the market'?":    {"placing on the market"},
		"Define clinical evaluation.":                  {"clinical evaluation"},
		"Что означает «Предоставляемое программное обеспечение»?":    {"Предоставляемое программное обеспечение"},
		"Что понимается под персоналом по программному обеспечению?": {"персоналом по программному обеспечению", "персоналом"},
		"¿Qué se entiende por evacuación?":               {"evacuación"},
		"What is an implantable device?":                 {"implantable device"},
		"How quickly must a controller notify a breach?": nil,
		// Wordings the patterns were not written for.
		"What do the letters SBOM stand for?":             {"SBOM"},
		"What's an SBOM?":                                 {"SBOM"},
		"Что означает термин «оператор»?":                 {"оператор"},
		"Дайте определение понятия «гражданство»":         {"гражданство"},
		"Что делает Президент при роспуске Думы?":         nil,
		"¿Cuál es la definición de responsable?":          {"responsable"},
		"Qu'est-ce qu'un dispositif médical ?":            {"un dispositif médical"},
		"Que signifie « mise sur le marché » ?":           {"mise sur le marché"},
		"Qu'entend-on par fabricant ?":                    {"fabricant"},
		"Quelle est la définition d'un incident grave ?":  {"un incident grave"},
		"Que fait le fabricant après un incident grave ?": nil,
	} {
		require.Equal(t, want, definitionSubjects(q), q)
	}
}
