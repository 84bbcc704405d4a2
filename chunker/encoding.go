package chunker

import (
	"bytes"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	xunicode "golang.org/x/text/encoding/unicode"
)

// Encoding names Decode reports.
const (
	EncodingUTF8        = "utf-8"
	EncodingUTF8BOM     = "utf-8-bom"
	EncodingUTF16LE     = "utf-16le"
	EncodingUTF16BE     = "utf-16be"
	EncodingWindows1251 = "windows-1251"
)

// minCyrillicShare is the share of letters that must be Cyrillic for
// bytes that are not UTF-8 to be taken as Windows-1251. Text in another
// single-byte code page decoded as Windows-1251 gives mostly Latin letters
// mixed with odd symbols; Russian text gives mostly Cyrillic.
const minCyrillicShare = 0.5

// Decode returns content as a string and the name of the encoding it was
// in. Detection: a byte order mark first (UTF-8, UTF-16 LE, UTF-16 BE; the
// mark is removed), then valid UTF-8, then Windows-1251 when at least
// minCyrillicShare of the decoded letters are Cyrillic (common for Russian
// documents). Anything else is an error naming the offset of the first
// invalid UTF-8 byte. Empty content is UTF-8. Decoded text holding a NUL
// character is refused as binary (ErrBinary).
func Decode(content []byte) (string, string, error) {
	s, enc, err := decode(content)
	if err == nil {
		err = checkNUL(s)
	}
	if err != nil {
		return "", "", err
	}
	return s, enc, nil
}

func decode(content []byte) (string, string, error) {
	switch {
	case bytes.HasPrefix(content, []byte{0xEF, 0xBB, 0xBF}):
		if err := checkUTF8(content[3:]); err != nil {
			return "", "", fmt.Errorf("decode utf-8 with byte order mark: %w", err)
		}
		return string(content[3:]), EncodingUTF8BOM, nil
	case bytes.HasPrefix(content, []byte{0xFF, 0xFE}):
		return decodeUTF16(content, xunicode.LittleEndian, EncodingUTF16LE)
	case bytes.HasPrefix(content, []byte{0xFE, 0xFF}):
		return decodeUTF16(content, xunicode.BigEndian, EncodingUTF16BE)
	}
	if utf8.Valid(content) {
		return string(content), EncodingUTF8, nil
	}
	utfErr := checkUTF8(content)
	s, err := charmap.Windows1251.NewDecoder().Bytes(content)
	if err == nil && cyrillicShare(s) >= minCyrillicShare {
		return string(s), EncodingWindows1251, nil
	}
	return "", "", fmt.Errorf("decode: not UTF-8 (%w), UTF-16 with a byte order mark, or Windows-1251 Russian text", utfErr)
}

func decodeUTF16(content []byte, order xunicode.Endianness, name string) (string, string, error) {
	if len(content)%2 != 0 {
		return "", "", fmt.Errorf("decode %s: odd length %d", name, len(content))
	}
	dec := xunicode.UTF16(order, xunicode.ExpectBOM).NewDecoder()
	s, err := dec.Bytes(content)
	if err != nil {
		return "", "", fmt.Errorf("decode %s: %w", name, err)
	}
	if bytes.Contains(s, []byte("\uFFFD")) {
		return "", "", errors.New("decode " + name + ": unpaired surrogate")
	}
	return string(s), name, nil
}

// cyrillicShare is the share of letters in s that are Cyrillic (0 without
// letters).
func cyrillicShare(s []byte) float64 {
	var letters, cyr int
	for _, r := range string(s) {
		if unicode.IsLetter(r) {
			letters++
			if unicode.Is(unicode.Cyrillic, r) {
				cyr++
			}
		}
	}
	if letters == 0 {
		return 0
	}
	return float64(cyr) / float64(letters)
}
