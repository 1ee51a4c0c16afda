package config

import (
	"testing"
	"time"
)

// "codeMode" is true (the default), false or "both"; resultTTLMs is a
// whole number of milliseconds.
func TestCodeModeAndResultTTL(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {
  "a": {"command": "x"},
  "b": {"command": "x", "codeMode": false},
  "c": {"command": "x", "codeMode": "both"},
  "d": {"command": "x", "codeMode": true}},
 "codemode": {"resultTTLMs": 60000, "resultQuotaBytes": 1048576}}`, nil)
	for _, s := range c.Servers {
		want := map[string][2]bool{"a": {true, false}, "b": {false, true}, "c": {true, true}, "d": {true, false}}[s.Name]
		if s.InCodeMode() != want[0] || s.Direct() != want[1] {
			t.Errorf("%s: InCodeMode %v, Direct %v; want %v", s.Name, s.InCodeMode(), s.Direct(), want)
		}
	}
	if c.Serve.ResultTTL != time.Minute {
		t.Errorf("ResultTTL = %v", c.Serve.ResultTTL)
	}
	if c.Serve.ResultQuotaBytes != 1<<20 {
		t.Errorf("ResultQuotaBytes = %v", c.Serve.ResultQuotaBytes)
	}
	ce := configError(t, `{"mcpServers": {"a": {"command": "x", "codeMode": "direct"}}}`, nil)
	checkError(t, ce, "mcpServers.a.codeMode", []string{`true, false or "both"`}, []string{"false (served directly"})
	ce = configError(t, `{"codemode": {"resultTTLMs": -1}}`, nil)
	checkError(t, ce, "codemode.resultTTLMs", nil, nil)
	ce = configError(t, `{"codemode": {"resultQuotaBytes": "1G"}}`, nil)
	checkError(t, ce, "codemode.resultQuotaBytes", nil, nil)
}
