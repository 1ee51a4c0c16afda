package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// codemode ui serves the inspector over a local store, on loopback only,
// with no gateway: it shows the runs that codemode run recorded there.
func TestUICommand(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := invoke(t, `globalThis.__codemode_result__ = 42`, "run", "--data-dir", dir, "-"); code != ExitOK {
		t.Fatalf("run: %d %s", code, stderr)
	}
	if code, _, stderr := invoke(t, "", "ui", "--addr", "0.0.0.0:0", "--data-dir", dir); code != ExitUsage || !strings.Contains(stderr, "loopback only") {
		t.Errorf("a non-loopback address: %d %s", code, stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		code := Main(ctx, []string{"ui", "--addr", "127.0.0.1:0", "--data-dir", dir}, strings.NewReader(""), io.Discard, pw)
		pw.Close()
		done <- code
	}()
	// The URL is in the log line that says it serves.
	var url string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := regexp.MustCompile(`serving the inspector"? url=(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" {
		t.Fatal("codemode ui did not say where it serves")
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "local store, no gateway running") || !strings.Contains(string(body), "<td>cli</td>") {
		t.Errorf("GET %s: %d\n%s", url, res.StatusCode, body)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("exit %d after the signal", code)
	}
}
