package config

import (
	"slices"
	"strings"
	"testing"
)

// Names that say a value is a credential, the ones issue 18 found missed
// first; and names that do not.
func TestSecretNames(t *testing.T) {
	for _, n := range []string{"GITHUB_PAT", "STRIPE_SK", "SENTRY_DSN", "MYSQL_PWD", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
		"AWS_SESSION_TOKEN", "AZURE_CLIENT_SECRET", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN",
		"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_API_KEY", "DIGITALOCEAN_ACCESS_TOKEN", "SLACK_WEBHOOK_URL", "githubPat",
		"X-Amz-Signature", "api_key", "apikey", "PGPASSWORD", "DB_PASS", "ARM_CLIENT_SECRET", "HF_TOKEN", "JWT_SIGNING"} {
		if !secretName(n) {
			t.Errorf("%s is not taken for a secret", n)
		}
	}
	for _, n := range []string{"PATH", "HOME", "LOG_LEVEL", "TASK_QUEUE", "SKIP_CHECKS", "NODE_ENV", "DATABASE_URL", "REGION", "version"} {
		if secretName(n) {
			t.Errorf("%s is taken for a secret", n)
		}
	}
}

func TestLooksLikeToken(t *testing.T) {
	for _, v := range []string{"ghp_abcdefghijklmnop1234", "sk-proj-abcdefgh", "xoxb-1234-5678-abcdefgh", "AKIAIOSFODNN7EXAMPLE",
		"123e4567-e89b-12d3-a456-426614174000", "a8f5f167f44f4964e6c998dee827110c", "AbCdEf0123456789xyz", "sk_live_0123456789abcdef"} {
		if !looksLikeToken(v) {
			t.Errorf("%q does not look like a token", v)
		}
	}
	for _, v := range []string{"my-service-2024-production", "/home/user/data-2024", "2025-06-18", "@modelcontextprotocol/server-memory",
		"--max-old-space-size=4096", "debug-verbose", "hello world 1234567890", "abcdefghijklmnopqrstuvwxyz"} {
		if looksLikeToken(v) {
			t.Errorf("%q looks like a token", v)
		}
	}
}

// The configured values issue 18 found missed: a URL with credentials in an
// env value, *_PAT and *_SK values, a token in a remote URL's path or in a
// ?sig= parameter, a token passed as an argument.
func TestSecretsByNameShapeAndURL(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {
		"db": {"command": "c", "args": ["postgres://app:db-pass-1234@db.internal:5432/prod", "--api-key", "plain-api-key-value", "--token=tok-value-5678", "--verbose", "sk-ant-api03-abcdefgh"],
			"env": {"DATABASE_URL": "mysql://root:hunter2-xyz@localhost/db", "GITHUB_PAT": "github_pat_11ABCDEFG", "STRIPE_SK": "rk_live_abcdefgh",
				"OTHER_URL": "https://api.example.com/v1", "DEBUG": "verbose-mode-on", "ANYTHING": "Zq0123456789abcdefXY"}},
		"hook": {"url": "https://hooks.example.com/services/T000/B000/XyZ123abcDEF456ghiJKL/mcp"},
		"sas": {"url": "https://store.example.net/mcp?sv=2024-01-01&sig=Ab12%2BCd34%3D&se=2030-01-01"},
		"s3": {"url": "https://b.s3.amazonaws.com/mcp?X-Amz-Credential=AKIAEXAMPLE%2F20240101&X-Amz-Signature=deadbeefcafe0123"}}}`, nil)
	want := map[string][]string{
		"db": {"db-pass-1234", "postgres://app:db-pass-1234@db.internal:5432/prod", "plain-api-key-value", "tok-value-5678", "sk-ant-api03-abcdefgh",
			"hunter2-xyz", "mysql://root:hunter2-xyz@localhost/db", "github_pat_11ABCDEFG", "rk_live_abcdefgh", "Zq0123456789abcdefXY"},
		"hook": {"XyZ123abcDEF456ghiJKL"},
		"sas":  {"Ab12%2BCd34%3D", "Ab12+Cd34="},
		"s3":   {"AKIAEXAMPLE%2F20240101", "AKIAEXAMPLE/20240101", "deadbeefcafe0123"},
	}
	for _, s := range c.Servers {
		for _, w := range want[s.ID] {
			if !slices.Contains(s.Secrets, w) {
				t.Errorf("%s: secrets %q lack %q", s.ID, s.Secrets, w)
			}
		}
		for _, not := range []string{"https://api.example.com/v1", "verbose-mode-on", "2024-01-01", "2030-01-01", "services", "--verbose"} {
			if slices.Contains(s.Secrets, not) {
				t.Errorf("%s: %q taken for a secret", s.ID, not)
			}
		}
	}
}

func TestInheritEnv(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {
		"a": {"command": "x"},
		"b": {"command": "x", "inheritEnv": true},
		"c": {"command": "x", "inheritEnv": false},
		"d": {"command": "x", "inheritEnv": ["NODE_OPTIONS", "NPM_CONFIG_*"]}}}`, nil)
	got := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		got[i] = strings.Join(s.InheritEnv, ",")
	}
	if want := []string{"", "*", "", "NODE_OPTIONS,NPM_CONFIG_*"}; !slices.Equal(got, want) {
		t.Errorf("inheritEnv = %q, want %q", got, want)
	}
	for _, tc := range []struct{ src, want string }{
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": "PATH"}}}`, "mcpServers.a.inheritEnv"},
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": ["A=B"]}}}`, "mcpServers.a.inheritEnv[0]"},
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": ["*AWS"]}}}`, "prefix ending in"},
		{`{"mcpServers": {"a": {"url": "http://x/mcp", "inheritEnv": true}}}`, `cannot have "command", "args", "env", "inheritEnv"`},
	} {
		_, err := Parse("codemode.json", []byte(tc.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", tc.src, err, tc.want)
		}
	}
}
