package schema

import (
	"regexp"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ecmaMatchTimeout bounds one match of a backtracking pattern. A pattern
// that times out counts as matching, and so does every other backtracking
// pattern of the same schema from then on: the upstream gets to judge the
// value, and a schema with a thousand catastrophic patterns, or an input
// with thousands of strings, costs one timeout, not thousands.
const ecmaMatchTimeout = 50 * time.Millisecond

// regexpEngine returns the "pattern" and "patternProperties" compiler of
// one schema. JSON Schema patterns are ECMA-262 regexps; Go's RE2 (linear
// time) covers nearly all of them, and the rest (lookarounds,
// backreferences: Zod's email pattern uses a lookahead) go to a
// backtracking ECMAScript engine with a timeout, shared by the schema's
// backtracking patterns (spent).
func regexpEngine() jsonschema.RegexpEngine {
	spent := new(atomic.Bool)
	return func(s string) (jsonschema.Regexp, error) {
		if re, err := regexp.Compile(s); err == nil {
			return re, nil
		}
		re, err := regexp2.Compile(s, regexp2.ECMAScript)
		if err != nil {
			return nil, err
		}
		re.MatchTimeout = ecmaMatchTimeout
		return &ecmaRegexp{re: re, spent: spent}, nil
	}
}

type ecmaRegexp struct {
	re    *regexp2.Regexp
	spent *atomic.Bool // shared by the schema's backtracking patterns
}

func (r *ecmaRegexp) String() string { return r.re.String() }

func (r *ecmaRegexp) MatchString(s string) bool {
	if r.spent.Load() {
		return true
	}
	ok, err := r.re.MatchString(s)
	if err != nil {
		r.spent.Store(true)
		return true
	}
	return ok
}

// compileRegexp compiles one pattern on its own (its timeout shared with
// nothing else).
func compileRegexp(s string) (jsonschema.Regexp, error) { return regexpEngine()(s) }
