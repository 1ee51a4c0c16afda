package typegen

import (
	"math"
	"sync"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

var (
	encOnce sync.Once
	enc     *tiktoken.Tiktoken
)

// CountTokens returns the number of o200k_base tokens in s, the tokenizer of
// current OpenAI models and a fair proxy for others. The vocabulary is
// embedded (no network); it is loaded on first use, which takes a moment.
// Special-token text such as "<|endoftext|>" is counted as ordinary text. If
// the vocabulary cannot be loaded, which would be a build defect, the count
// falls back to one token per four bytes.
//
// The text is encoded in segments of at most segmentBytes, so that the work
// is linear in its length: the tokenizer's grows with the square of the
// longest piece it cannot split (a run of letters or of spaces: 64,000 took
// 4 s, and one an upstream puts in a tool description reaches the
// declarations whole). Segments end where the tokenizer's own splitting
// ends a piece (before a space between two other characters), so that the
// count of ordinary text is exact; a run with no such place is cut every
// hardCutBytes and counted a little high.
func CountTokens(s string) int { return CountTokensUpTo(s, math.MaxInt) }

// CountTokensUpTo is CountTokens for a caller that only compares the count
// with limit: once the count is past limit it stops, and returns a number
// past limit.
func CountTokensUpTo(s string, limit int) int {
	encOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		enc, _ = tiktoken.GetEncoding("o200k_base")
	})
	n := 0
	for s != "" && n <= limit {
		cut := segmentEnd(s)
		if enc == nil {
			n += (cut + 3) / 4
		} else {
			n += len(enc.EncodeOrdinary(s[:cut]))
		}
		s = s[cut:]
	}
	return n
}

const (
	segmentBytes = 2048
	hardCutBytes = 256
)

// segmentEnd returns where the first segment of s ends: all of s if it is
// at most segmentBytes, otherwise the last place within segmentBytes before
// a space that has a non-space character on each side (where the
// tokenizer's pre-tokenisation ends a piece: " word", " 123" and " {" all
// start one), otherwise hardCutBytes (on a character boundary).
func segmentEnd(s string) int {
	if len(s) <= segmentBytes {
		return len(s)
	}
	for i := min(segmentBytes, len(s)-2); i > 0; i-- {
		if s[i] == ' ' && !isSpace(s[i-1]) && !isSpace(s[i+1]) {
			return i
		}
	}
	i := hardCutBytes
	for i > 1 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}
