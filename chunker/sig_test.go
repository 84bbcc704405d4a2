package chunker

import "testing"

// TestEdgeNumbers: page numbers at a line's ends are ignored when
// running headers are compared; numbers inside the line are not.
func TestEdgeNumbers(t *testing.T) {
	for in, want := range map[string]string{
		"si 1 - 12":                   "si 1 - #",
		"page 3 of 40":                "page #",
		"46/144 eli: http://x":        "# eli: http://x",
		"documento básico si":         "documento básico si",
		"12":                          "#",
		"rfc 7231 http/1.1 june 2014": "rfc 7231 http/1.1 june #",
	} {
		if got := edgeNumbers(in); got != want {
			t.Errorf("edgeNumbers(%q) = %q, want %q", in, got, want)
		}
	}
}
