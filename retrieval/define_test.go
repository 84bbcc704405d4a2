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
	} {
		require.Equal(t, want, definitionSubjects(q), q)
	}
}
