package typegen

import (
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// reference is tiktoken-go's o200k_base, which CountTokens must agree with.
var reference = sync.OnceValue(func() *tiktoken.Tiktoken {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		panic(err)
	}
	return enc
})

func referenceCount(s string) int { return len(reference().EncodeOrdinary(s)) }

// tokenCases are texts where splitting is delicate: runs of white space
// before words, punctuation and line breaks (o200k's lookahead), Unicode
// white space, contractions, numbers, marks and scripts without case.
var tokenCases = []string{
	"hello world", "", " ", "  ", "\n", "a  b", "a   b", "a \n b", "a\t\tb", "a \t\nb", "x  \n\n  y  ",
	"trailing   ", "   leading", "a\u00a0\u00a0b", "a\u3000 b", "a \u2028b", "\u0085\u0085x",
	"don't I'LL we're you've she'd it's THEY'RE 'S 'ſ", "1234567 12 1.5e10 ١٢٣٤",
	"naïve café e\u0301 ﬁ", "日本語のテキスト、句読点。", "Привет, мир!", "عربي نص", "😀👍🏽 emoji\u200d",
	"<|endoftext|> <|endofprompt|>", "foo/bar\n\n/// comment\r\n\r\n", "((( ))) ;;; ...", "a" + strings.Repeat(" ", 300) + "b",
	strings.Repeat("x", 1000), strings.Repeat("é", 700) + " " + strings.Repeat("9", 20), strings.Repeat("ab ", 400),
	"export function get_sum(input: { /** The first number */ a: number; b: number }): Promise<ToolResult>;\n",
	"invalid \xff\xfe utf-8 \xc3", "Mixed CASE camelCase HTTPServer XMLHttpRequest ABCdef",
}

func TestCountTokensMatchesTiktoken(t *testing.T) {
	for _, s := range tokenCases {
		if got, want := CountTokens(s), referenceCount(s); got != want {
			t.Errorf("CountTokens(%.60q) = %d, tiktoken-go %d", s, got, want)
		}
	}
	if testing.Short() {
		return
	}
	// Everything the corpus makes the gateway count: tool JSON,
	// descriptions, declarations with and without descriptions.
	n := 0
	for _, cs := range loadCorpus(t) {
		texts := []string{}
		for _, tool := range cs.tools {
			texts = append(texts, tool.original(), tool.Description)
		}
		decl, _ := ServerModule(cs.server(), nil)
		terse, _ := ServerModule(cs.server(), &Options{OmitDescriptions: true})
		texts = append(texts, decl, terse)
		for _, s := range texts {
			n++
			if got, want := CountTokens(s), referenceCount(s); !agrees(s, got, want) {
				t.Errorf("%s: CountTokens = %d, tiktoken-go %d on %.80q (%d hard cuts)", cs.id, got, want, s, hardCuts(s))
			}
		}
	}
	t.Logf("%d corpus texts agree", n)
}

func FuzzCountTokens(f *testing.F) {
	for _, s := range tokenCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		if got, want := CountTokens(s), referenceCount(s); !agrees(s, got, want) {
			t.Errorf("CountTokens(%q) = %d, tiktoken-go %d", s, got, want)
		}
	})
}

// agrees reports whether CountTokens' count of s may be got when the
// tokenizer's is want: the same, unless s has runs that segmentEnd cuts
// where no piece ends (a run of more than 2 KiB with no space between two
// other characters), each of which may split a piece and count a token or
// two more.
func agrees(s string, got, want int) bool {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	cuts := hardCuts(s)
	return got >= want && got <= want+2*cuts
}

// hardCuts counts the segments of s that segmentEnd ends where no piece
// ends.
func hardCuts(s string) int {
	n := 0
	for s != "" {
		cut := segmentEnd(s)
		if cut < len(s) && s[cut] != ' ' {
			n++
		}
		s = s[cut:]
	}
	return n
}

func BenchmarkCountTokens(b *testing.B) {
	decl, _ := ServerModule(loadCorpus(b)[0].server(), nil)
	n := CountTokens(decl)
	for b.Loop() {
		CountTokens(decl)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
}

func BenchmarkCountTokensTiktoken(b *testing.B) {
	decl, _ := ServerModule(loadCorpus(b)[0].server(), nil)
	n := referenceCount(decl)
	for b.Loop() {
		referenceCount(decl)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
}
