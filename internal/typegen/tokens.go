package typegen

import (
	"bytes"
	"encoding/base64"
	"hash/maphash"
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// CountTokens returns the number of o200k_base tokens in s, the tokenizer of
// current OpenAI models and a fair proxy for others: the count
// tiktoken-go's EncodeOrdinary gives (special-token text such as
// "<|endoftext|>" is counted as ordinary text). The vocabulary is the one
// tiktoken-go-loader embeds (no network).
//
// The serving layer counts declarations to decide what tools/list says, so
// counting is on the path of a gateway's first answer. tiktoken-go takes
// about 200 ms of CPU and keeps 22 MiB of maps to load the vocabulary, and
// several microseconds per token to split text with its backtracking
// regular expression; this counter keeps the vocabulary as one compact
// table (about 4 MiB, built in milliseconds on first use) and splits text
// with Go's regexp, emulating the one lookahead of o200k's pattern
// (docs/BENCHMARKS.md, "Token counting"). tokens_test.go checks it against
// tiktoken-go on the whole corpus and by fuzzing.
//
// The text is encoded in segments of at most segmentBytes, so that the work
// is linear in its length: the byte-pair merge's grows with the square of
// the longest piece it cannot split (a run of letters or of spaces; one an
// upstream puts in a tool description reaches the declarations whole).
// Segments end where the splitting ends a piece (before a space between
// two other characters), so that the count of ordinary text is exact; a run
// with no such place is cut every hardCutBytes and counted a little high.
func CountTokens(s string) int { return CountTokensUpTo(s, math.MaxInt) }

// CountTokensUpTo is CountTokens for a caller that only compares the count
// with limit: once the count is past limit it stops, and returns a number
// past limit.
func CountTokensUpTo(s string, limit int) int {
	if s == "" {
		return 0
	}
	v := o200k()
	if !utf8.ValidString(s) {
		// tiktoken-go splits runes: every invalid byte becomes U+FFFD.
		s = string([]rune(s))
	}
	n := 0
	for s != "" && n <= limit {
		cut := segmentEnd(s)
		if v == nil { // a build defect: the vocabulary is embedded
			n += (cut + 3) / 4
		} else {
			n += v.countSegment(s[:cut])
		}
		s = s[cut:]
	}
	return n
}

// countSegment counts the tokens of valid UTF-8 text.
func (v *vocab) countSegment(s string) int {
	n := 0
	for pos := 0; pos < len(s); {
		end := v.nextPiece(s, pos)
		n += v.countPiece(s[pos:end])
		pos = end
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
// splitting ends a piece: " word", " 123" and " {" all start one),
// otherwise hardCutBytes (on a character boundary).
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

// LoadTokenizer builds CountTokens' table now, in the few milliseconds it
// takes, instead of on first use: a server calls it in the background as it
// starts, so that its first answer does not wait for it.
func LoadTokenizer() { o200k() }

// vocab is the o200k_base vocabulary: the tokens' bytes back to back in
// rank order (ranks run from 0 without gaps) and an open-addressing hash
// table from bytes to rank.
type vocab struct {
	blob  []byte
	off   []uint32 // token r is blob[off[r]:off[r+1]]
	slots []uint32 // rank+1; 0 is empty; len is a power of two
	seed  maphash.Seed
	split *regexp.Regexp
}

var o200k = sync.OnceValue(func() *vocab {
	data, err := assets.Assets.ReadFile("o200k_base.tiktoken")
	if err != nil {
		return nil
	}
	v := &vocab{seed: maphash.MakeSeed(), split: regexp.MustCompile(o200kPattern())}
	lines := bytes.Count(data, []byte{'\n'}) + 1
	v.off = make([]uint32, 0, lines+1)
	v.blob = make([]byte, 0, len(data)/2)
	var buf [256]byte
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 {
			continue
		}
		b64, rank, ok := bytes.Cut(line, []byte{' '})
		if !ok || string(rank) != itoa(len(v.off)) {
			return nil // ranks must run 0, 1, 2, ... (they do in o200k_base)
		}
		n, err := base64.StdEncoding.Decode(buf[:], b64)
		if err != nil {
			return nil
		}
		v.off = append(v.off, uint32(len(v.blob)))
		v.blob = append(v.blob, buf[:n]...)
	}
	n := len(v.off)
	v.off = append(v.off, uint32(len(v.blob)))
	size := 1
	for size < 2*n {
		size <<= 1
	}
	v.slots = make([]uint32, size)
	mask := uint64(size - 1)
	for r := range n {
		i := maphash.Bytes(v.seed, v.token(r)) & mask
		for v.slots[i] != 0 {
			i = (i + 1) & mask
		}
		v.slots[i] = uint32(r + 1)
	}
	return v
})

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func (v *vocab) token(r int) []byte { return v.blob[v.off[r]:v.off[r+1]] }

// rank returns the rank of token b, or -1.
func (v *vocab) rank(b string) int {
	mask := uint64(len(v.slots) - 1)
	for i := maphash.String(v.seed, b) & mask; ; i = (i + 1) & mask {
		s := v.slots[i]
		if s == 0 {
			return -1
		}
		if string(v.token(int(s-1))) == b {
			return int(s - 1)
		}
	}
}

// countPiece is the number of tokens tiktoken's byte-pair merge makes of
// one piece of split text: one if the piece is a token, else the parts
// left once no adjacent pair is a token (merging the lowest-ranked pair
// first, as bytePairMerge does).
func (v *vocab) countPiece(piece string) int {
	if len(piece) <= 1 || v.rank(piece) >= 0 {
		return 1
	}
	// parts[i] is the start of part i and the rank of merging parts i and
	// i+1 (as one token spanning to the start of part i+2), or none.
	const none = int(^uint(0) >> 1)
	type part struct{ start, rank int }
	var stack [64]part
	parts := stack[:0]
	if len(piece)+1 > len(stack) {
		parts = make([]part, 0, len(piece)+1)
	}
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, part{i, none})
	}
	rankAt := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r := v.rank(piece[parts[i].start:parts[i+skip+2].start]); r >= 0 {
				return r
			}
		}
		return none
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankAt(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := none, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minIdx < 0 {
			break
		}
		i := minIdx
		parts[i].rank = rankAt(i, 1)
		if i > 0 {
			parts[i-1].rank = rankAt(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return len(parts) - 1
}

// o200kPattern is o200k_base's split pattern as RE2 can run it. Three
// differences from the original, each keeping its meaning: \s is Unicode
// White_Space (as regexp2 and Python mean it, not RE2's ASCII set), the
// contractions' case-insensitivity is spelled out (RE2 would also fold "ſ"
// into "s"), and `\s+(?!\S)`, a lookahead RE2 lacks, is left out: nextPiece
// shortens a whitespace match the way it would have matched.
func o200kPattern() string {
	var ws strings.Builder
	for _, r16 := range unicode.White_Space.R16 {
		for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
			ws.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	for _, r32 := range unicode.White_Space.R32 {
		for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
			ws.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	s := ws.String() // the members of \s, for use inside a class
	contraction := `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?`
	return strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` + contraction,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` + contraction,
		`\p{N}{1,3}`,
		` ?[^` + s + `\p{L}\p{N}]+[\r\n/]*`,
		`[` + s + `]*[\r\n]+`,
		`[` + s + `]+`,
	}, "|")
}

// splitWindow is how much text one match looks at first: a piece is almost
// always much shorter, and Go's regexp runs fastest on a short input.
const splitWindow = 64

// nextPiece returns the end of the piece of text that starts at pos.
func (v *vocab) nextPiece(s string, pos int) int {
	for w := splitWindow; ; w *= 4 {
		end := min(len(s), pos+w)
		loc := v.split.FindStringIndex(s[pos:end])
		if loc == nil || loc[0] != 0 {
			// Cannot happen: every character starts a piece.
			_, size := utf8.DecodeRuneInString(s[pos:])
			return pos + size
		}
		stop := pos + loc[1]
		if stop == end && end < len(s) {
			continue // the piece may go on past the window
		}
		piece := s[pos:stop]
		if stop < len(s) && isSpaceRun(piece) && !strings.ContainsAny(piece, "\r\n") {
			// Matched by `\s+`, which o200k tries only after
			// `\s+(?!\S)`: that one gives back the last white space
			// before the non-space character that follows, and fails
			// on a run of one.
			if _, size := utf8.DecodeLastRuneInString(piece); size < len(piece) {
				stop -= size
			}
		}
		return stop
	}
}

func isSpaceRun(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}
