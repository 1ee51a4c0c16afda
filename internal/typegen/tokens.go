package typegen

import (
	"sync"

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
func CountTokens(s string) int {
	encOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		enc, _ = tiktoken.GetEncoding("o200k_base")
	})
	if enc == nil {
		return (len(s) + 3) / 4
	}
	return len(enc.EncodeOrdinary(s))
}
