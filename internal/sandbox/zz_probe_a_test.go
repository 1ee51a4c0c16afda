package sandbox

import (
	"context"
	"testing"
	"time"
)

func FuzzZZProbeAURL(f *testing.F) {
	for _, s := range []string{"http://a/b?c#d", "file:///x", "http://[::1]:80/", "blob:https://a/b", "a:/..//", "http://%41.com", "http://xn--a.com", "http://1.2.3.4.5", "sc://ñ/", "http://a:b@c/", "non-spec:/.//", "http://0x7f.1/"} {
		f.Add(s, "http://base/x", "pathname", "..")
	}
	f.Fuzz(func(t *testing.T, a, b, field, c string) {
		urlOp("parse", a, "", "")
		urlOp("parseBase", a, b, "")
		r, err := urlOp("parse", b, "", "")
		if err == nil {
			_ = r
			u, _ := urlParser.Parse(b)
			urlOp("set", u.Href(false), field, c)
			for _, fl := range []string{"protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"} {
				urlOp("set", u.Href(false), fl, a)
			}
		}
		urlOp("formParse", a, "", "")
	})
}

func TestZZProbeAScript(t *testing.T) {
	code := `globalThis.__codemode_result__ = 1`
	res := Run(context.Background(), code, &Options{Limits: Limits{Timeout: 2 * time.Second}})
	t.Logf("%+v %s", res.Diagnostics, res.Result)
}
