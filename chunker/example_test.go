package chunker_test

import (
	"fmt"

	"github.com/kgsync/kgsync/chunker"
)

func ExampleSplit() {
	doc := []byte(`# 7 Package information

## 7.1 Package name field <a name="7.1"></a>

Identify the full name of the package.

The name is mandatory.

## 7.2 Package version field

Identify the version of the package.
`)
	root, err := chunker.Parse("md", doc)
	if err != nil {
		panic(err)
	}
	chunks, err := chunker.Split("spdx.md", root, chunker.Options{MaxTokens: 128, OverlapTokens: 16})
	if err != nil {
		panic(err)
	}
	for _, c := range chunks {
		fmt.Printf("%s | %s | %d tokens | %q\n", c.Address, c.Context, c.Tokens, c.Text)
	}
	// Output:
	// spdx.md › 7 › 7.1 › p1 | 7 Package information › 7.1 Package name field | 29 tokens | "Identify the full name of the package.\n\nThe name is mandatory.\n\n7.2 Package version field\nIdentify the version of the package."
}

func ExampleParseAddress() {
	for _, s := range []string{"point (a) of Article 7(3)", "Section 6.3 of Annex II", "RFC 7231 section 4.2.2", "ч. 3 ст. 81", "MDR, Article 2 (71)"} {
		a, _ := chunker.ParseAddress(s)
		fmt.Printf("%s → doc %q, %q\n", s, a.Doc, a.Citation)
	}
	// Output:
	// point (a) of Article 7(3) → doc "", "Article 7(3)(a)"
	// Section 6.3 of Annex II → doc "", "Annex II 6.3"
	// RFC 7231 section 4.2.2 → doc "RFC 7231", "4.2.2"
	// ч. 3 ст. 81 → doc "", "Статья 81 часть 3"
	// MDR, Article 2 (71) → doc "MDR", "Article 2(71)"
}
