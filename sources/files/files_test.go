package files

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/corpus"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/sources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ sources.Source = (*Source)(nil)

var testFormats = map[string]string{".txt": "txt", ".md": "md", ".html": "html", ".pdf": "pdf", ".docx": "docx"}

// corpusDir is the corpus directory.
func corpusDir(t *testing.T) string { return corpus.Dir(t) }

// write creates root/rel with content, making parent directories.
func write(t *testing.T, root, rel string, content []byte) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, content, 0o644))
}

// copyCorpus copies corpus docs into root under the given names (rel → corpus file).
func copyCorpus(t *testing.T, root string, files map[string]string) {
	t.Helper()
	corpus := corpusDir(t)
	for rel, src := range files {
		b, err := os.ReadFile(filepath.Join(corpus, "docs", src))
		require.NoError(t, err)
		write(t, root, rel, b)
	}
}

// listing collects a whole Read: its pages, or its error.
type listing struct {
	pages   []*sources.Page
	records []sources.Record
	skipped []sources.Skip
	err     error
}

func (l listing) keys() []string {
	var out []string
	for _, r := range l.records {
		out = append(out, r.Key)
	}
	return out
}

func (l listing) skippedKeys() []string {
	var out []string
	for _, s := range l.skipped {
		out = append(out, s.Key)
	}
	return out
}

func readAll(t *testing.T, s *Source) listing {
	t.Helper()
	var l listing
	for page, err := range s.Read(t.Context(), "") {
		if err != nil {
			require.Nil(t, page)
			l.err = err
			continue
		}
		require.Empty(t, page.Cursor)
		l.pages = append(l.pages, page)
		l.records = append(l.records, page.Records...)
		l.skipped = append(l.skipped, page.Skipped...)
	}
	return l
}

func newSource(t *testing.T, cfg config.FilesSource, opts ...Option) *Source {
	t.Helper()
	s, err := New("docs", cfg, testFormats, nil, opts...)
	require.NoError(t, err)
	return s
}

func TestReadCorpusTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	copyCorpus(t, root, map[string]string{
		"rfc/rfc7239.txt":    "rfc7239.txt",
		"specs/spdx.md":      "spdx-2.3-package-information.md",
		"specs/openchain.md": "openchain-security-specification-1.1.md",
		"go_spec.HTML":       "go_spec.html",
		"openchain.pdf":      "openchain-security-specification-1.1.pdf",
		"ru/spec.docx":       "OpenChainSpec-2.0-Translation-ru.docx",
	})
	write(t, root, "notes.xyz", []byte("unknown format"))
	write(t, root, "README", []byte("no extension"))

	l := readAll(t, newSource(t, config.FilesSource{Root: root}))
	require.NoError(t, l.err)
	require.Empty(t, l.skipped)
	require.Equal(t, []string{
		"go_spec.HTML", "openchain.pdf", "rfc/rfc7239.txt", "ru/spec.docx", "specs/openchain.md", "specs/spdx.md",
	}, l.keys())

	wantFormat := map[string]string{
		"go_spec.HTML": "html", "openchain.pdf": "pdf", "rfc/rfc7239.txt": "txt",
		"ru/spec.docx": "docx", "specs/openchain.md": "md", "specs/spdx.md": "md",
	}
	corpus := corpusDir(t)
	src := map[string]string{
		"go_spec.HTML": "go_spec.html", "openchain.pdf": "openchain-security-specification-1.1.pdf",
		"rfc/rfc7239.txt": "rfc7239.txt", "ru/spec.docx": "OpenChainSpec-2.0-Translation-ru.docx",
		"specs/openchain.md": "openchain-security-specification-1.1.md", "specs/spdx.md": "spdx-2.3-package-information.md",
	}
	for _, r := range l.records {
		orig, err := os.ReadFile(filepath.Join(corpus, "docs", src[r.Key]))
		require.NoError(t, err)
		require.Equal(t, "Document", r.Anchor)
		require.Equal(t, map[string]any{
			"path":   r.Key,
			"name":   filepath.Base(r.Key),
			"format": wantFormat[r.Key],
			"size":   int64(len(orig)),
		}, r.Attributes)
		require.Equal(t, wantFormat[r.Key], r.Document.Format)
		require.Equal(t, orig, r.Document.Content, r.Key)
	}
	// The sizes of two corpus files as listed in MANIFEST.md.
	require.Equal(t, int64(35003), l.records[2].Attributes["size"])
	require.Equal(t, int64(109455), l.records[1].Attributes["size"])
}

func TestIncludeExclude(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, rel := range []string{
		"a.md", "guide/intro.md", "guide/drafts/wip.md", "guide/table.txt",
		"data/export.xyz", "data/readme.txt", "Makefile",
	} {
		write(t, root, rel, []byte("text of "+rel))
	}
	tests := []struct {
		name             string
		include, exclude []string
		want, skipped    []string
		skipErr          string
	}{
		{
			name: "default: every known format",
			want: []string{"a.md", "data/readme.txt", "guide/drafts/wip.md", "guide/intro.md", "guide/table.txt"},
		},
		{
			name:    "include a subtree",
			include: []string{"guide/**"},
			want:    []string{"guide/drafts/wip.md", "guide/intro.md", "guide/table.txt"},
		},
		{
			name:    "star does not cross directories",
			include: []string{"*.md"},
			want:    []string{"a.md"},
		},
		{
			name:    "exclude beats include",
			include: []string{"**/*.md"},
			exclude: []string{"**/drafts/**"},
			want:    []string{"a.md", "guide/intro.md"},
		},
		{
			name:    "exclude alone",
			exclude: []string{"guide/**", "*.md"},
			want:    []string{"data/readme.txt"},
		},
		{
			name:    "explicitly included unknown extension is reported",
			include: []string{"data/**"},
			want:    []string{"data/readme.txt"},
			skipped: []string{"data/export.xyz"},
			skipErr: "data/export.xyz: no parser for .xyz",
		},
		{
			name:    "explicitly included file without extension is reported",
			include: []string{"Makefile"},
			skipped: []string{"Makefile"},
			skipErr: "Makefile: no parser for files without an extension",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := readAll(t, newSource(t, config.FilesSource{Root: root, Include: tt.include, Exclude: tt.exclude}))
			require.NoError(t, l.err)
			require.Equal(t, tt.want, l.keys())
			require.Equal(t, tt.skipped, l.skippedKeys())
			if tt.skipErr != "" {
				require.EqualError(t, l.skipped[0].Err, tt.skipErr)
			}
		})
	}
}

func TestInvalidUTF8Skipped(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, "bad.md", []byte("# Title\nok \xff\xfe broken"))
	write(t, root, "bad.txt", []byte("\xc3")) // truncated two-byte sequence
	write(t, root, "good.md", []byte("# Заголовок\nтекст"))
	write(t, root, "binary.pdf", []byte("%PDF-1.7 \xff\xfe\x00"))

	l := readAll(t, newSource(t, config.FilesSource{Root: root}))
	require.NoError(t, l.err)
	require.Equal(t, []string{"binary.pdf", "good.md"}, l.keys(), "binary formats are not checked")
	require.Equal(t, []string{"bad.md", "bad.txt"}, l.skippedKeys())
	require.EqualError(t, l.skipped[0].Err, "read bad.md: invalid UTF-8 at byte 11")
	require.EqualError(t, l.skipped[1].Err, "read bad.txt: invalid UTF-8 at byte 0")
}

func TestUnreadableEntriesSkipped(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, "ok.md", []byte("fine"))
	// A dangling symlink: the name is listed, the file cannot be read.
	require.NoError(t, os.Symlink(filepath.Join(root, "nowhere.md"), filepath.Join(root, "gone.md")))
	// A FIFO: reading it would block.
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "pipe.md"), 0o644))
	// A directory named like a document is a directory: walked into, not a record.
	write(t, root, "dir.md/inner.txt", []byte("inside"))

	l := readAll(t, newSource(t, config.FilesSource{Root: root}))
	require.NoError(t, l.err)
	require.Equal(t, []string{"dir.md/inner.txt", "ok.md"}, l.keys())
	require.Equal(t, []string{"gone.md", "pipe.md"}, l.skippedKeys())
	require.ErrorContains(t, l.skipped[0].Err, "gone.md: dangling symlink")
	require.ErrorContains(t, l.skipped[1].Err, "read pipe.md: not a regular file")
}

func TestFileVanishingBetweenWalkAndRead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, rel := range []string{"a.md", "b.md", "c.md"} {
		write(t, root, rel, []byte(rel))
	}
	s := newSource(t, config.FilesSource{Root: root}, WithPageSize(1))
	var l listing
	for page, err := range s.Read(t.Context(), "") {
		require.NoError(t, err)
		if len(l.pages) == 0 {
			// The listing is done; b.md is read with the next page.
			require.NoError(t, os.Remove(filepath.Join(root, "b.md")))
		}
		l.pages = append(l.pages, page)
		l.records = append(l.records, page.Records...)
		l.skipped = append(l.skipped, page.Skipped...)
	}
	require.Equal(t, []string{"a.md", "c.md"}, l.keys())
	require.Equal(t, []string{"b.md"}, l.skippedKeys())
	require.ErrorIs(t, l.skipped[0].Err, os.ErrNotExist)
	require.ErrorContains(t, l.skipped[0].Err, "read b.md: ")
}

func TestBadRootFailsTheListing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "file.md", []byte("x"))
	tests := []struct {
		name, root, wantErr string
	}{
		{"missing", filepath.Join(dir, "missing"), `files source "docs": root: stat ` + filepath.Join(dir, "missing") + ": no such file or directory"},
		{"a file", filepath.Join(dir, "file.md"), `files source "docs": root ` + filepath.Join(dir, "file.md") + " is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := readAll(t, newSource(t, config.FilesSource{Root: tt.root}))
			require.EqualError(t, l.err, tt.wantErr)
			require.Empty(t, l.pages, "no page before the error")
		})
	}
}

func TestStableLexicalOrder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// WalkDir visits "a" (a directory) before "a.md", but "a.md" < "a/b.md"
	// byte-wise ('.' is 0x2E, '/' is 0x2F): keys come out in key order.
	rels := []string{"a/b.md", "a.md", "a-b.md", "B.md", "z/y/x.md", "ä.md"}
	for _, rel := range rels {
		write(t, root, rel, []byte(rel))
	}
	want := slices.Clone(rels)
	slices.Sort(want) // Go's string order is byte-wise
	require.Equal(t, []string{"B.md", "a-b.md", "a.md", "a/b.md", "z/y/x.md", "ä.md"}, want)
	s := newSource(t, config.FilesSource{Root: root})
	require.Equal(t, want, readAll(t, s).keys())
	require.Equal(t, want, readAll(t, s).keys())
}

func TestTouchIsNotAChange(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, "doc.md", []byte("# Doc"))
	s := newSource(t, config.FilesSource{Root: root})
	before := readAll(t, s).records
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(root, "doc.md"), later, later))
	require.Equal(t, before, readAll(t, s).records)
}

func TestMaxFileBytes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, "exact.txt", []byte(strings.Repeat("a", 100)))
	write(t, root, "over.txt", []byte(strings.Repeat("a", 101)))
	l := readAll(t, newSource(t, config.FilesSource{Root: root, MaxFileBytes: 100}))
	require.NoError(t, l.err)
	require.Equal(t, []string{"exact.txt"}, l.keys())
	require.Equal(t, []string{"over.txt"}, l.skippedKeys())
	require.EqualError(t, l.skipped[0].Err, "read over.txt: 101 bytes exceeds max_file_bytes 100")
}

func TestSymlinks(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	write(t, outside, "secret.md", []byte("outside the root"))
	root := t.TempDir()
	write(t, root, "docs/real.md", []byte("the real document"))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "escape.md")))
	require.NoError(t, os.Symlink("../../"+filepath.Base(outside)+"/secret.md", filepath.Join(root, "docs", "relative-escape.md")))
	require.NoError(t, os.Symlink("docs/real.md", filepath.Join(root, "alias.md")))
	require.NoError(t, os.Symlink("docs", filepath.Join(root, "docs-link.md"))) // a directory: not descended
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "outside-dir"))) // not descended either

	l := readAll(t, newSource(t, config.FilesSource{Root: root}))
	require.NoError(t, l.err)
	require.Equal(t, []string{"alias.md", "docs/real.md"}, l.keys())
	require.Equal(t, []byte("the real document"), l.records[0].Document.Content)
	require.Equal(t, "alias.md", l.records[0].Attributes["path"])
	require.Equal(t, []string{"docs/relative-escape.md", "escape.md"}, l.skippedKeys())
	for _, s := range l.skipped {
		require.ErrorContains(t, s.Err, "is outside the root")
	}

	// A root that is itself a symlink is read through.
	linkRoot := filepath.Join(t.TempDir(), "root-link")
	require.NoError(t, os.Symlink(root, linkRoot))
	l2 := readAll(t, newSource(t, config.FilesSource{Root: linkRoot}))
	require.NoError(t, l2.err)
	require.Equal(t, l.keys(), l2.keys())
}

func TestPaging(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 10 {
		write(t, root, fmt.Sprintf("doc%02d.md", i), []byte(strings.Repeat("x", 10)))
	}
	write(t, root, "doc03.xyz", []byte("ignored"))
	write(t, root, "doc05b.md", []byte("\xff")) // a skip takes a page slot too

	sizes := func(l listing) []int {
		var out []int
		for _, p := range l.pages {
			out = append(out, len(p.Records)+len(p.Skipped))
		}
		return out
	}
	l := readAll(t, newSource(t, config.FilesSource{Root: root}, WithPageSize(3)))
	require.NoError(t, l.err)
	require.Equal(t, []int{3, 3, 3, 2}, sizes(l))
	require.Len(t, l.records, 10)
	require.Equal(t, []string{"doc05b.md"}, l.skippedKeys())

	// Default: one page of at most 64.
	require.Equal(t, []int{11}, sizes(readAll(t, newSource(t, config.FilesSource{Root: root}))))

	// A byte budget closes pages early: 25 bytes → pages of 3 ten-byte records.
	l = readAll(t, newSource(t, config.FilesSource{Root: root}, WithPageBytes(25)))
	require.Equal(t, []int{3, 3, 4, 1}, sizes(l)) // the third page also holds the 0-byte skip
}

func TestStopEarlyAndCancel(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 5 {
		write(t, root, fmt.Sprintf("d%d.md", i), []byte("x"))
	}
	s := newSource(t, config.FilesSource{Root: root}, WithPageSize(2))
	n := 0
	for _, err := range s.Read(t.Context(), "") {
		require.NoError(t, err)
		n++
		break
	}
	require.Equal(t, 1, n)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var errs []error
	for page, err := range s.Read(ctx, "") {
		require.Nil(t, page)
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], context.Canceled)
}

func TestEmptyTreeYieldsNoPage(t *testing.T) {
	t.Parallel()
	l := readAll(t, newSource(t, config.FilesSource{Root: t.TempDir()}))
	require.NoError(t, l.err)
	require.Empty(t, l.pages)
}

func TestNew(t *testing.T) {
	t.Parallel()
	s, err := New("", config.FilesSource{Root: "x"}, testFormats, nil)
	require.NoError(t, err)
	require.Equal(t, "files", s.Name())
	require.Equal(t, DefaultMaxFileBytes, s.maxBytes)
	require.Equal(t, "Document", s.anchor)

	s, err = New("manuals", config.FilesSource{Root: "x", Anchor: "Manual"}, map[string]string{".MD": "md"}, nil)
	require.NoError(t, err)
	require.Equal(t, "manuals", s.Name())
	require.Equal(t, map[string]string{".md": "md"}, s.formats)

	tests := []struct {
		cfg     config.FilesSource
		formats map[string]string
		wantErr string
	}{
		{config.FilesSource{}, testFormats, `files source "docs": root is required`},
		{config.FilesSource{Root: "x", Include: []string{"[a-"}}, testFormats, `files source "docs": include[0] "[a-": invalid glob`},
		{config.FilesSource{Root: "x", Exclude: []string{"ok/**", "{a,"}}, testFormats, `files source "docs": exclude[1] "{a,": invalid glob`},
		{config.FilesSource{Root: "x", MaxFileBytes: -1}, testFormats, `files source "docs": max_file_bytes must be >= 0, got -1`},
		{config.FilesSource{Root: "x"}, map[string]string{"md": "md"}, `files source "docs": format "md" for extension "md": want ".ext" mapped to a format name`},
	}
	for _, tt := range tests {
		_, err := New("docs", tt.cfg, tt.formats, nil)
		require.EqualError(t, err, tt.wantErr)
	}
}

func TestAnchorFromConfig(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, "m.md", []byte("x"))
	l := readAll(t, newSource(t, config.FilesSource{Root: root, Anchor: "Manual"}))
	require.NoError(t, l.err)
	require.Equal(t, "Manual", l.records[0].Anchor)
}

// TestUnreadableFolderBlocksOnlyItself: a folder that cannot be read is
// reported as an unlisted part ("sub/") and the rest of the tree is
// listed; an unreadable root still fails the listing. (Tests run as root,
// who reads a chmod 000 folder, so the walk's failure is injected.)
func TestUnreadableFolderBlocksOnlyItself(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.md"), []byte("# A\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sub", "b.md"), []byte("# B\n"), 0o644))
	s, err := New("docs", config.FilesSource{Root: root}, map[string]string{".md": "md"}, nil)
	require.NoError(t, err)
	denied := func(dir string) func(string, fs.WalkDirFunc) error {
		return func(r string, fn fs.WalkDirFunc) error {
			return filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() && filepath.Base(p) == dir {
					if err := fn(p, d, nil); err != nil {
						return err
					}
					return fn(p, d, fs.ErrPermission)
				}
				return fn(p, d, err)
			})
		}
	}
	s.walk = denied("sub")
	var keys []string
	var unlisted []sources.Unlisted
	for pg, err := range s.Read(t.Context(), "") {
		require.NoError(t, err)
		unlisted = append(unlisted, pg.Unlisted...)
		for _, r := range pg.Records {
			keys = append(keys, r.Key)
		}
	}
	require.Equal(t, []string{"a.md"}, keys)
	require.Len(t, unlisted, 1)
	require.Equal(t, "sub/", unlisted[0].Prefix)
	require.ErrorIs(t, unlisted[0].Err, fs.ErrPermission)

	s.walk = denied(filepath.Base(root))
	var failed error
	for _, err := range s.Read(t.Context(), "") {
		if err != nil {
			failed = err
		}
	}
	require.ErrorIs(t, failed, fs.ErrPermission, "an unreadable root fails the listing")
}
