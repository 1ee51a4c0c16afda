package config

import (
	"strings"
	"testing"
	"time"
)

func TestHistoryConfig(t *testing.T) {
	c, err := Parse("c.json", []byte(`{"codemode": {"history": {"payloads": true, "maxAgeDays": 7, "maxBytes": 1000000}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := c.History; h.Disabled || !h.Payloads || h.MaxAge != 7*24*time.Hour || h.MaxBytes != 1000000 {
		t.Errorf("history %+v", h)
	}
	d, _ := Parse("d.json", []byte(`{}`), nil)
	if h := d.History; h.Disabled || h.Payloads || h.MaxAge != 30*24*time.Hour || h.MaxBytes != 256<<20 {
		t.Errorf("defaults %+v", h)
	}
	if e, _ := Parse("e.json", []byte(`{"codemode": {"history": {"enabled": false}}}`), nil); !e.History.Disabled {
		t.Errorf("enabled false: %+v", e.History)
	}
	for _, tc := range []struct{ cfg, want string }{
		{`{"codemode": {"history": {"payloads": "yes"}}}`, "codemode.history.payloads"},
		{`{"codemode": {"history": {"maxAgeDays": 0}}}`, "codemode.history.maxAgeDays"},
		{`{"codemode": {"history": {"maxbytes": 10}}}`, "maxBytes"},
		{`{"codemode": {"history": []}}`, "codemode.history"},
	} {
		_, err := Parse("x.json", []byte(tc.cfg), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}
