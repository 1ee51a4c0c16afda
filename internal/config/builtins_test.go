package config

import (
	"errors"
	"slices"
	"testing"
)

func TestBuiltinsStoreClients(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "CI_TOKEN" {
			return "ci-token-0123456789abcdef", true
		}
		return "", false
	}
	c, err := Parse("c.json", []byte(`{"codemode": {
  "builtins": ["store"],
  "store": {"maxValueBytes": 100, "maxNamespaceBytes": 1000},
  "clients": {"ci": {"token": "${CI_TOKEN}"}, "alice": {"token": "${ALICE_TOKEN}", "namespace": "team"}}
}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Builtins, []string{"store"}) || c.Store.MaxValueBytes != 100 || c.Store.MaxNamespaceBytes != 1000 {
		t.Errorf("builtins %v store %+v", c.Builtins, c.Store)
	}
	if len(c.Clients) != 2 || c.Clients[0].Token != "ci-token-0123456789abcdef" || c.Clients[0].Namespace != "ci" ||
		c.Clients[1].Token != "" || !slices.Equal(c.Clients[1].Unresolved, []string{"ALICE_TOKEN"}) || c.Clients[1].Namespace != "team" {
		t.Errorf("clients %+v", c.Clients)
	}
	d, _ := Parse("d.json", []byte(`{}`), env)
	if d.Builtins != nil || d.Store.MaxValueBytes != 1<<20 || d.Store.MaxNamespaceBytes != 64<<20 {
		t.Errorf("defaults: builtins %v store %+v", d.Builtins, d.Store)
	}
	if e, _ := Parse("e.json", []byte(`{"codemode": {"builtins": []}}`), env); e.Builtins == nil || len(e.Builtins) != 0 {
		t.Errorf("builtins [] = %#v, want empty, not nil", e.Builtins)
	}
}

func TestBuiltinsStoreClientsErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, key, problem, fix string }{
		{"unknown builtin", `{"codemode": {"builtins": ["thoughtbx"]}}`, "codemode.builtins[0]", `unknown built-in server "thoughtbx"`, `"thoughtbox"`},
		{"twice", `{"codemode": {"builtins": ["store", "store"]}}`, "codemode.builtins[1]", "listed twice", "only one"},
		{"surface without builtin", `{"codemode": {"surfaces": ["thoughtbox"], "builtins": ["store"]}}`, "codemode.builtins", "thoughtbox built-in", `add "thoughtbox"`},
		{"store key", `{"codemode": {"store": {"maxValuesBytes": 1}}}`, "codemode.store.maxValuesBytes", "unknown key", "maxValueBytes"},
		{"store value", `{"codemode": {"store": {"maxValueBytes": -1}}}`, "codemode.store.maxValueBytes", "positive", "whole number"},
		{"short token", `{"codemode": {"clients": {"ci": {"token": "short"}}}}`, "codemode.clients.ci.token", "shorter than 16", "openssl"},
		{"no token", `{"codemode": {"clients": {"ci": {}}}}`, "codemode.clients.ci", "needs a token", "token"},
		{"default name", `{"codemode": {"clients": {"default": {"token": "0123456789abcdefgh"}}}}`, "codemode.clients.default", `"default"`, "another name"},
		{"bad name", `{"codemode": {"clients": {"a b": {"token": "0123456789abcdefgh"}}}}`, "codemode.clients.a b", "not a valid client name", "letters"},
		{"same token", `{"codemode": {"clients": {"a": {"token": "0123456789abcdefgh"}, "b": {"token": "0123456789abcdefgh"}}}}`, "codemode.clients.b.token", "same token", "its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.json", []byte(tc.src), func(string) (string, bool) { return "", false })
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v", err)
			}
			checkError(t, ce, tc.key, []string{tc.problem}, []string{tc.fix})
		})
	}
}
