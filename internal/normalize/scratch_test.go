package normalize

import (
	"context"
	"os"
	"testing"
)

func TestScratch(t *testing.T) {
	src := os.Getenv("SRC")
	if src == "" {
		t.Skip()
	}
	mode := Body
	switch os.Getenv("MODE") {
	case "call":
		mode = Call
	case "module":
		mode = Module
	}
	p := Prepare(context.Background(), src, &Options{Mode: mode})
	t.Logf("code:\n%s\nprefix: %q\nsuffix: %q\ninfo: %+v", p.Code, p.Transpile.Prefix, p.Transpile.Suffix, p.Info)
	got, diags := runPrepared(t, p)
	t.Logf("result %s diags %+v", got, diags)
}
