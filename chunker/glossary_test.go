package chunker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// TestGlossaryLayouts: glossaries in the layouts documents set them in
// become terms: a term on a line of its own over its definition, "term:
// definition", a two-column table, an abbreviation and its expansion on
// each line (none taken for a term line over its definition, and no term
// line or definition that opens with capitals read as one), an EU
// definition whose quoted term is followed by more words before "means".
func TestGlossaryLayouts(t *testing.T) {
	for _, tc := range []struct {
		name, format, doc string
		want              map[string]string // term → start of its definition
	}{
		{"term line over its definition", "md", "# Glossary\n\naccess control\n\nThe process of granting or denying requests to use a resource.\n\nauthenticator\n\nSomething the claimant holds and uses to prove who they are.\n\nSee also the acronyms below.\n",
			map[string]string{"access control": "The process of granting", "authenticator": "Something the claimant"}},
		{"abbreviation and its expansion on each line", "md", "# Abbreviations\n\nFSCA field safety corrective action\n\nFSN field safety notice\n\nIFU instructions for use\n\nTD technical documentation\n\nSRN single registration number\n\nURL Uniform Resource Locator (internet address)\n",
			map[string]string{"FSCA": "field safety corrective action", "FSN": "field safety notice", "IFU": "instructions for use", "TD": "technical documentation",
				"SRN": "single registration number", "URL": "Uniform Resource Locator"}},
		{"term line over a definition that opens with an abbreviation", "md", "# Glossary\n\nJSON Web Token\n\nJWT compact token format defined in RFC 7519.\n\nTransport Layer Security\n\nTLS protocol that secures connections between two parties.\n\nsoftware bill of materials\n\nSBOM inventory of the components of a piece of software.\n",
			map[string]string{"JSON Web Token": "JWT compact token format", "Transport Layer Security": "TLS protocol", "software bill of materials": "SBOM inventory"}},
		{"term lines over lists are no abbreviations", "md", "# Glossary\n\nCPU time\n\n- the time a processor spends on a task\n\nAPI key\n\n- a secret that identifies a caller\n\nHTTP status\n\n* the three-digit code of a response\n",
			map[string]string{}},
		{"term: definition", "md", "# Terms and definitions\n\nBaseline: the settings a system is configured from.\n\nAsset: anything of value to the organization.\n",
			map[string]string{"Baseline": "the settings", "Asset": "anything of value"}},
		{"two-column table", "md", "# Glossary\n\n| Term | Definition |\n|---|---|\n| audit log | A record of the events of a system in the order they happened. |\n| least privilege | Giving each user only the access their work needs. |\n",
			map[string]string{"audit log": "A record of the events", "least privilege": "Giving each user"}},
		{"quoted term, more words, means", "md", "# Article 4\n\n## Definitions\n\n(11) ‘consent’ of the data subject means any freely given, specific, informed and unambiguous indication of the data subject's wishes.\n\n(12) ‘personal data breach’ means a breach of security leading to the loss of personal data.\n",
			map[string]string{"consent": "any freely given", "personal data breach": "a breach of security"}},
		{"apostrophe inside the quotes, a lead-in with points", "md", "# Article 2\n\n## Definitions\n\n(4) ‘goods made to the consumer’s specifications’ means non-prefabricated goods made on the basis of an individual choice.\n\n(9) ‘business premises’ means:\n\n(a) any immovable retail premises of the trader; or\n\n(b) any movable retail premises of the trader.\n",
			map[string]string{"goods made to the consumer’s specifications": "non-prefabricated goods", "business premises": "any immovable retail premises"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := chunker.Parse(tc.format, []byte(tc.doc))
			require.NoError(t, err)
			got := map[string]string{}
			for _, tm := range chunker.Terms(root) {
				got[tm.Name] = tm.Definition
			}
			require.Len(t, got, len(tc.want), "%v", got)
			for name, def := range tc.want {
				require.Contains(t, got, name)
				require.Contains(t, got[name], def, name)
			}
		})
	}
}
