package upstream

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/codemode-mcp/codemode/internal/redact"
)

// The filter passes JSON-RPC messages through byte for byte and drops
// everything else, one line at a time, however the pipe splits its reads.
func TestStdoutFilter(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":{}}`
	big := `{"jsonrpc":"2.0","id":2,"result":{"text":"` + strings.Repeat("x", maxJudgedLine) + `"}}`
	bigLog := strings.Repeat("y", maxJudgedLine+10)
	for _, c := range []struct {
		name, in, want string
		skipped        []string
	}{
		{"messages only", msg + "\n" + msg + "\n", msg + "\n" + msg + "\n", nil},
		{"a banner first", "Server running on stdio\n" + msg + "\n", msg + "\n", []string{"Server running on stdio"}},
		{"CRLF", "banner\r\n" + msg + "\r\n", msg + "\r\n", []string{"banner"}},
		{"a BOM", "\uFEFF" + msg + "\n", msg + "\n", nil},
		{"blank lines pass", "\n  \n" + msg + "\n", "\n  \n" + msg + "\n", nil},
		{"JSON that is not JSON-RPC", `{"level":30,"msg":"hi"}` + "\n" + `[1,2]` + "\n" + `[]` + "\n" + msg + "\n", msg + "\n",
			[]string{`{"level":30,"msg":"hi"}`, `[1,2]`, `[]`}},
		{"a batch", `[` + msg + `,` + msg + `]` + "\n", `[` + msg + `,` + msg + `]` + "\n", nil},
		{"broken JSON", `{"jsonrpc":"2.0",` + "\n" + msg + "\n", msg + "\n", []string{`{"jsonrpc":"2.0",`}},
		{"a log line between messages", msg + "\n[info] working\n" + msg + "\n", msg + "\n" + msg + "\n", []string{"[info] working"}},
		{"no newline at the end", "banner\n" + msg, msg, []string{"banner"}},
		{"a partial banner at the end", msg + "\nbye", msg + "\n", []string{"bye"}},
		{"a long message passes unjudged", big + "\n" + msg + "\n", big + "\n" + msg + "\n", nil},
		{"a long non-JSON line is dropped", bigLog + "\n" + msg + "\n", msg + "\n", []string{bigLog[:maxJudgedLine]}},
	} {
		for _, oneByte := range []bool{false, true} {
			var skipped []string
			var r io.Reader = strings.NewReader(c.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			f := &stdoutFilter{r: r, skipped: func(line []byte) { skipped = append(skipped, string(line)) }}
			got, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("%s (one byte at a time: %v): passed\n%.200q, want\n%.200q", c.name, oneByte, got, c.want)
			}
			if strings.Join(skipped, "|") != strings.Join(c.skipped, "|") {
				t.Errorf("%s (one byte at a time: %v): skipped %.200q, want %.200q", c.name, oneByte, skipped, c.skipped)
			}
		}
	}
}

// A dropped line is quoted redacted, then clipped, as valid UTF-8.
func TestQuoteLine(t *testing.T) {
	long := strings.Repeat("é", 300) + "tok-123"
	for _, c := range []struct{ line, want string }{
		{"key=tok-123 ok", "key=[REDACTED] ok"},
		{"  padded\t", "padded"},
		{"bad \xff byte", "bad \uFFFD byte"},
	} {
		if got := quoteLine([]byte(c.line), redact.New([]string{"tok-123"})); got != c.want {
			t.Errorf("quoteLine(%q) = %q, want %q", c.line, got, c.want)
		}
	}
	got := quoteLine([]byte(long), redact.New([]string{"tok-123"}))
	if len(got) > maxQuotedLine+40 || strings.Contains(got, "tok") || !strings.Contains(got, "more bytes") {
		t.Errorf("quoteLine(long) = %q", got)
	}
}

func TestIsJSONRPC(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, true},
		{` { "id" : 1 , "jsonrpc" : "2.0" } `, true},
		{`{"result":{"jsonrpc":"2.0"},"id":1}`, false},
		{`{"msg":"jsonrpc","x":["jsonrpc"]}`, false},
		{`{"a\"jsonrpc":1}`, false},
		{`{"a":"x\\","jsonrpc":"2.0"}`, true},
		{`{"a":[{"b":1},2],"jsonrpc":"2.0"}`, true},
		{`{"jsonrpc":"2.0"`, false},
		{`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]`, true},
		{`[{"jsonrpc":"2.0","method":"a"},{"method":"b"}]`, false},
		{`"jsonrpc"`, false},
		{`Server ready`, false},
	} {
		if got := isJSONRPC([]byte(c.line)); got != c.want {
			t.Errorf("isJSONRPC(%s) = %v, want %v", c.line, got, c.want)
		}
	}
}
