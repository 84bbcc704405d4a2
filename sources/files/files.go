// Package files is the files source: every document under a directory tree
// is one record, keyed by its slash path relative to the root.
//
// A listing walks the whole tree first (names and types only), sorts the
// keys, then reads contents lazily one page at a time, so memory holds one
// page of contents (at most 64 records and about 64 MiB by default).
//
// What is a record: a file whose lower-cased extension has a format (the
// map given to New, e.g. ".md" → "md") and that matches Include (default:
// every such file) and no Exclude pattern. A file matching an explicit
// Include pattern but with no format is reported as skipped ("no parser for
// .xyz"); other files are ignored.
//
// What is skipped (reported in Page.Skipped, never treated as deleted, never
// fatal): a file that cannot be opened or read (permission denied, gone
// between the walk and the read), that is not a regular file (a FIFO, a
// device), that is larger than MaxFileBytes, a text format (txt, md, html)
// with invalid UTF-8 (or, with the pipeline's check, a NUL byte: binary
// content), a dangling symlink, and a symlink whose target is
// outside the root. Symlinks to files inside the root are followed (the key
// is the link's path); symlinks to directories are not descended (their
// files are listed under their real paths).
//
// A folder under the root that cannot be read is reported in
// Page.Unlisted (prefix "<folder>/"): the records stored under it are
// kept, and the rest of the tree is listed.
//
// What fails the listing (the iterator yields an error, so the pipeline
// deletes nothing): a root that does not exist, is not a directory or
// cannot be read, and a done context.
//
// Records carry no modification time: touching a file is not a change.
// Files have no cursor: every listing is complete and Page.Cursor is "".
package files

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/sources"
)

// Defaults for zero config and option values.
const (
	// DefaultMaxFileBytes is config.FilesSource's default max_file_bytes (64 MiB).
	DefaultMaxFileBytes int64 = 64 << 20
	// DefaultAnchor is config.FilesSource's default anchor.
	DefaultAnchor = "Document"
	// DefaultPageSize is the number of records and skips per page.
	DefaultPageSize = 64
	// DefaultPageBytes is the content size at which a page is closed early
	// (a page always holds at least one record).
	DefaultPageBytes int64 = 64 << 20
)

// textFormats are the formats whose content must be valid UTF-8.
var textFormats = map[string]bool{"txt": true, "md": true, "html": true}

// Option adjusts a Source.
type Option func(*Source)

// WithPageSize sets the maximum number of records plus skips per page
// (default DefaultPageSize); n <= 0 keeps the default.
func WithPageSize(n int) Option {
	return func(s *Source) {
		if n > 0 {
			s.pageSize = n
		}
	}
}

// WithPageBytes sets the content size in bytes after which a page is
// closed (default DefaultPageBytes); n <= 0 keeps the default.
func WithPageBytes(n int64) Option {
	return func(s *Source) {
		if n > 0 {
			s.pageBytes = n
		}
	}
}

// WithTextCheck replaces the check of text formats' content (default:
// valid UTF-8). The pipeline passes the chunker's encoding detection, so
// UTF-16 with a BOM and Windows-1251 texts are read; content the check
// rejects is reported as skipped with the check's error.
func WithTextCheck(check func(format string, content []byte) error) Option {
	return func(s *Source) {
		if check != nil {
			s.textCheck = check
		}
	}
}

// Source reads a directory tree; it satisfies sources.Source. It keeps no
// state between listings and is safe for concurrent Reads.
type Source struct {
	textCheck func(format string, content []byte) error
	name      string
	root      string
	include   []string
	exclude   []string
	maxBytes  int64
	anchor    string
	formats   map[string]string
	pageSize  int
	pageBytes int64
	logger    *slog.Logger
	// walk walks the tree (filepath.WalkDir; tests inject failures).
	walk func(root string, fn fs.WalkDirFunc) error
}

// New returns a files source named name over cfg.Root (used as given:
// config.Load has already made it absolute or relative to the working
// directory). formats maps a lower-case extension with its dot (".md") to
// a chunker format name ("md"); the pipeline passes it in so this package
// does not import chunker. The root is not checked until Read. New fails on
// an empty root, an invalid glob, a negative max_file_bytes or an
// extension without its dot. logger may be nil.
func New(name string, cfg config.FilesSource, formats map[string]string, logger *slog.Logger, opts ...Option) (*Source, error) {
	if name == "" {
		name = "files"
	}
	if cfg.Root == "" {
		return nil, fmt.Errorf("files source %q: root is required", name)
	}
	for i, p := range cfg.Include {
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("files source %q: include[%d] %q: invalid glob", name, i, p)
		}
	}
	for i, p := range cfg.Exclude {
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("files source %q: exclude[%d] %q: invalid glob", name, i, p)
		}
	}
	if cfg.MaxFileBytes < 0 {
		return nil, fmt.Errorf("files source %q: max_file_bytes must be >= 0, got %d", name, cfg.MaxFileBytes)
	}
	fm := make(map[string]string, len(formats))
	for ext, f := range formats {
		if !strings.HasPrefix(ext, ".") || f == "" {
			return nil, fmt.Errorf("files source %q: format %q for extension %q: want \".ext\" mapped to a format name", name, f, ext)
		}
		fm[strings.ToLower(ext)] = f
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Source{
		walk:      filepath.WalkDir,
		name:      name,
		root:      cfg.Root,
		include:   slices.Clone(cfg.Include),
		exclude:   slices.Clone(cfg.Exclude),
		maxBytes:  cmp.Or(cfg.MaxFileBytes, DefaultMaxFileBytes),
		anchor:    cmp.Or(cfg.Anchor, DefaultAnchor),
		formats:   fm,
		pageSize:  DefaultPageSize,
		pageBytes: DefaultPageBytes,
		logger:    logger.With(slog.String("source", name)),
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// entry is one listed path: to be read, or already known to be skipped.
type entry struct {
	key    string // slash path relative to the root
	path   string // file system path to read (the link itself for symlinks)
	format string
	skip   error
}

// Read lists the tree and yields pages of records in key order (byte-wise
// lexical order of the slash paths). cursor is ignored: files have no
// cursor. An empty tree yields no page. See the package doc for what is
// skipped and what fails the listing.
func (s *Source) Read(ctx context.Context, _ string) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		entries, unlisted, err := s.list(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		page := &sources.Page{Unlisted: unlisted}
		var size int64
		for _, en := range entries {
			if err := ctx.Err(); err != nil {
				yield(nil, fmt.Errorf("files source %q: %w", s.name, err))
				return
			}
			switch rec, err := s.read(en); {
			case err != nil:
				page.Skipped = append(page.Skipped, sources.Skip{Key: en.key, Err: err})
			default:
				page.Records = append(page.Records, rec)
				size += int64(len(rec.Document.Content))
			}
			if len(page.Records)+len(page.Skipped) >= s.pageSize || size >= s.pageBytes {
				if !yield(page, nil) {
					return
				}
				page, size = &sources.Page{}, 0
			}
		}
		if len(page.Records)+len(page.Skipped)+len(page.Unlisted) > 0 {
			yield(page, nil)
		}
	}
}

// list walks the tree and returns the entries sorted by key.
func (s *Source) list(ctx context.Context) ([]entry, []sources.Unlisted, error) {
	info, err := os.Stat(s.root)
	if err != nil {
		return nil, nil, fmt.Errorf("files source %q: root: %w", s.name, err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("files source %q: root %s is not a directory", s.name, s.root)
	}
	// Walk the real root, so a root that is itself a symlink is descended and
	// symlink targets can be compared with it.
	real, err := filepath.EvalSymlinks(s.root)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("files source %q: resolve root %s: %w", s.name, s.root, err)
	}
	var entries []entry
	var unlisted []sources.Unlisted
	err = s.walk(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == real || d == nil || !d.IsDir() {
				// The root itself: its files would look deleted.
				return fmt.Errorf("walk %s: %w", p, err)
			}
			// An unreadable folder blocks only itself: the stored records
			// under it are kept, the rest of the tree is listed.
			rel, rerr := filepath.Rel(real, p)
			if rerr != nil {
				return fmt.Errorf("walk %s: %w", p, err)
			}
			key := filepath.ToSlash(rel) + "/"
			unlisted = append(unlisted, sources.Unlisted{Prefix: key, Err: fmt.Errorf("files source %q: folder %s: %w", s.name, key, err)})
			return filepath.SkipDir
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == real || d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(real, p)
		if err != nil {
			return fmt.Errorf("walk %s: %w", p, err)
		}
		key := filepath.ToSlash(rel)
		format, want, skip := s.classify(key)
		if !want {
			return nil
		}
		en := entry{key: key, path: p, format: format, skip: skip}
		if skip == nil && d.Type()&fs.ModeSymlink != 0 {
			var keep bool
			keep, en.skip = s.checkLink(real, p, key)
			if !keep {
				return nil
			}
		}
		entries = append(entries, en)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("files source %q: list %s: %w", s.name, s.root, err)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	return entries, unlisted, nil
}

// classify decides whether key is listed (want) and, if so, its format or
// why it is skipped.
func (s *Source) classify(key string) (format string, want bool, skip error) {
	for _, p := range s.exclude {
		if ok, _ := doublestar.Match(p, key); ok {
			return "", false, nil
		}
	}
	ext := strings.ToLower(path.Ext(key))
	format, known := s.formats[ext]
	if len(s.include) == 0 {
		return format, known, nil
	}
	included := false
	for _, p := range s.include {
		if ok, _ := doublestar.Match(p, key); ok {
			included = true
			break
		}
	}
	switch {
	case !included:
		return "", false, nil
	case !known && ext == "":
		return "", true, fmt.Errorf("%s: no parser for files without an extension", key)
	case !known:
		return "", true, fmt.Errorf("%s: no parser for %s", key, ext)
	}
	return format, true, nil
}

// checkLink decides what to do with a symlink that names a record: keep it
// as a record (skip == nil), keep it as a skip, or drop it (a link to a
// directory, whose files are listed under their real paths).
func (s *Source) checkLink(root, p, key string) (keep bool, skip error) {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return true, fmt.Errorf("%s: dangling symlink: %w", key, err)
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return true, fmt.Errorf("%s: symlink target %s is outside the root", key, target)
	}
	if info, err := os.Stat(target); err == nil && info.IsDir() {
		s.logger.Debug("not following symlink to a directory", slog.String("key", key))
		return false, nil
	}
	return true, nil
}

// read returns the record of an entry, or why it is skipped.
func (s *Source) read(en entry) (sources.Record, error) {
	if en.skip != nil {
		return sources.Record{}, en.skip
	}
	// Stat before opening: opening a FIFO would block.
	info, err := os.Stat(en.path)
	if err != nil {
		return sources.Record{}, fmt.Errorf("read %s: %w", en.key, err)
	}
	if !info.Mode().IsRegular() {
		return sources.Record{}, fmt.Errorf("read %s: not a regular file (%s)", en.key, info.Mode().Type())
	}
	if info.Size() > s.maxBytes {
		return sources.Record{}, fmt.Errorf("read %s: %d bytes exceeds max_file_bytes %d", en.key, info.Size(), s.maxBytes)
	}
	f, err := os.Open(en.path)
	if err != nil {
		return sources.Record{}, fmt.Errorf("read %s: %w", en.key, err)
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, s.maxBytes+1))
	if err != nil {
		return sources.Record{}, fmt.Errorf("read %s: %w", en.key, err)
	}
	if int64(len(content)) > s.maxBytes { // grew since the stat
		return sources.Record{}, fmt.Errorf("read %s: more than max_file_bytes %d bytes", en.key, s.maxBytes)
	}
	if s.textCheck != nil {
		if err := s.textCheck(en.format, content); err != nil {
			return sources.Record{}, fmt.Errorf("read %s: %w", en.key, err)
		}
	} else if textFormats[en.format] && !utf8.Valid(content) {
		return sources.Record{}, fmt.Errorf("read %s: invalid UTF-8 at byte %d", en.key, invalidAt(content))
	}
	return sources.Record{
		Key:    en.key,
		Anchor: s.anchor,
		Attributes: map[string]any{
			"path":   en.key,
			"name":   path.Base(en.key),
			"format": en.format,
			"size":   int64(len(content)),
		},
		Document: &sources.Document{Format: en.format, Content: content},
	}, nil
}

// invalidAt returns the offset of the first invalid UTF-8 sequence.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}
