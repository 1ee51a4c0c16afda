package schema

import (
	"regexp"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ecmaMatchTimeout bounds one match of a backtracking pattern. A pattern
// that times out counts as matching, and is not evaluated again: the
// upstream gets to judge the value, and an input with thousands of strings
// costs one timeout, not thousands.
const ecmaMatchTimeout = 50 * time.Millisecond

// compileRegexp compiles "pattern" and "patternProperties" keys. JSON Schema
// patterns are ECMA-262 regexps; Go's RE2 (linear time) covers nearly all
// of them, and the rest (lookarounds, backreferences: Zod's email pattern
// uses a lookahead) go to a backtracking ECMAScript engine with a timeout.
func compileRegexp(s string) (jsonschema.Regexp, error) {
	if re, err := regexp.Compile(s); err == nil {
		return re, nil
	}
	re, err := regexp2.Compile(s, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = ecmaMatchTimeout
	return &ecmaRegexp{re: re}, nil
}

type ecmaRegexp struct {
	re       *regexp2.Regexp
	timedOut atomic.Bool
}

func (r *ecmaRegexp) String() string { return r.re.String() }

func (r *ecmaRegexp) MatchString(s string) bool {
	if r.timedOut.Load() {
		return true
	}
	ok, err := r.re.MatchString(s)
	if err != nil {
		r.timedOut.Store(true)
		return true
	}
	return ok
}
