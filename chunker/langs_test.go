package chunker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// TestSpanishAndRussianShapes: glossaries and references in the words of
// Spanish and Russian codes, in small documents of their shapes (a CTE
// Documento Básico converted to Markdown: "Sección SI 1", numbered clauses
// restarting in each Sección, "Anejo SI A Terminología", "Tabla 1.1"; a
// Russian code: "3 Термины и определения", "в соответствии с 5.2.3").
func TestSpanishAndRussianShapes(t *testing.T) {
	es := `# Sección SI 1 Propagación interior

## 1 Compartimentación en sectores de incendio

1 Los edificios se deben compartimentar en sectores de incendio según las condiciones que se establecen en la tabla 1.1 de esta Sección.

Tabla 1.1 Condiciones de compartimentación en sectores de incendio

| Uso | Condiciones |
| --- | --- |
| Residencial | La superficie no debe exceder de 2.500 m2 |

## 4 Reacción al fuego de los elementos

4.1 Los elementos cumplirán las condiciones de reacción al fuego que se establecen en la tabla 4.1, según el apartado 1 de esta Sección.

# Sección SI 2 Propagación exterior

## 1 Medianerías y fachadas

1.1 Los elementos verticales separadores de otro edificio deben ser al menos EI 120, véase el apartado 4.1 de la Sección SI 1.

# Anejo SI A Terminología

Altura de evacuación: Máxima diferencia de cotas entre un origen de evacuación y la salida de edificio que le corresponda.

Sector de incendio: Espacio de un edificio separado de otras zonas del mismo por elementos constructivos delimitadores resistentes al fuego.
`
	root, err := chunker.Parse("md", []byte(es))
	require.NoError(t, err)
	cites := citations(root)
	got := map[string]bool{}
	for _, c := range cites {
		got[c] = true
	}
	for _, c := range []string{"Sección SI 1", "Sección SI 2", "Sección SI 1 1", "Sección SI 1 4", "Sección SI 1 4.1", "Sección SI 2 1", "Sección SI 2 1.1", "Tabla 1.1", "Anejo SI A"} {
		require.True(t, got[c], "%s in %v", c, got)
	}
	var names []string
	for _, tm := range chunker.Terms(root) {
		names = append(names, tm.Name)
	}
	require.Equal(t, []string{"Altura de evacuación", "Sector de incendio"}, names)
	refs := chunker.CrossRefs(root)
	res, un := chunker.Resolve(root, refs)
	byText := map[string]string{}
	for i, r := range refs {
		byText[r.Text] = cites[res[i]]
	}
	require.Len(t, un, 1, "%v", byText)
	require.Equal(t, "tabla 4.1", refs[un[0]].Text, "the document has no Tabla 4.1: kept and counted, not resolved")
	require.Equal(t, "Tabla 1.1", byText["tabla 1.1"])
	require.Equal(t, "Sección SI 1 1", byText["apartado 1"], "'de esta Sección': the Sección the text is in")
	require.Equal(t, "Sección SI 1 4.1", byText["apartado 4.1 de la Sección SI 1"])

	ru := "СВОД ПРАВИЛ\n\n" +
		"1 Область применения\n\n" +
		"Настоящий свод правил устанавливает требования пожарной безопасности.\n\n" +
		"3 Термины и определения\n\n" +
		"3.1 пожарный отсек: Часть здания, выделенная противопожарными стенами.\n\n" +
		"3.2 эвакуационный выход: Выход, ведущий на путь эвакуации.\n\n" +
		"5 Требования\n\n" +
		"5.2 Общие требования\n\n" +
		"5.2.3 Ширина выхода должна быть не менее 0,8 м.\n\n" +
		"5.2.4 Двери выполняются в соответствии с 5.2.3 и таблицей 1.\n"
	root, err = chunker.Parse("txt", []byte(ru))
	require.NoError(t, err)
	names = nil
	for _, tm := range chunker.Terms(root) {
		names = append(names, tm.Name)
	}
	require.Equal(t, []string{"пожарный отсек", "эвакуационный выход"}, names)
	cites = citations(root)
	refs = chunker.CrossRefs(root)
	res, _ = chunker.Resolve(root, refs)
	found := false
	for i, r := range refs {
		if r.Target == "5.2.3" {
			found = true
			require.Equal(t, "5.2.3", cites[res[i]])
		}
	}
	require.True(t, found, "%v", refs)
}
