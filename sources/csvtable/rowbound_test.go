package csvtable

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources"
)

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestRowLongerThanTheBoundStopsTheRead: a quoted cell never closed (or a
// line without end) is not gathered whole in memory: the read stops once
// the row passes the bound, with an error naming the row's byte offset,
// having read little more than the bound; rows before it are read.
func TestRowLongerThanTheBoundStopsTheRead(t *testing.T) {
	t.Parallel()
	const bound = 4 << 10
	for name, row := range map[string]string{
		"unclosed quote": "2,\"" + strings.Repeat("x\n", 1<<20),
		"long line":      "2," + strings.Repeat("x", 2<<20) + "\n3,three\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			head := "\xEF\xBB\xBFid,name\n1,one\n"
			src := &countingReader{r: io.MultiReader(strings.NewReader(head), bytes.NewReader([]byte(row)))}
			tb := &table{id: "t", display: "t.csv", key: "id", types: map[string]colType{}, skip: map[string]bool{}, delim: ',', maxRow: bound}
			var pages []*sources.Page
			p := &pager{yield: func(pg *sources.Page, err error) bool { pages = append(pages, pg); return true }, size: 100, page: &sources.Page{}}
			n, err := tb.read(t.Context(), src, p, nil)
			require.EqualError(t, err, "csv table t: t.csv: the row at byte 17 is longer than 4096 bytes; a quoted cell may be left open")
			require.Equal(t, 1, n)
			require.Len(t, p.page.Records, 1)
			require.Equal(t, "t:1", p.page.Records[0].Key)
			require.LessOrEqual(t, src.n, int64(len(head)+bound+64<<10))
		})
	}
}
