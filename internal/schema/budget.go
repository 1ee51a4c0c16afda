package schema

import (
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validation is bounded in work. A schema is the upstream's, and some are
// exponential to validate: definitions that each apply the previous one
// twice in place (`d1: {allOf: [{$ref: d0}, {$ref: d0}]}`, … `d40`) make
// the validator visit one input value 2^40 times, and recursive schemas
// can do the same over the depth of the input. The validator has no
// context or step limit of its own, and it runs in the gateway (on the
// run's event loop): one such tool call held a core forever, long after
// its run was answered.
//
// So every compiled schema carries an extension (a vocabulary of ours,
// with no keyword: it applies to every schema object) that counts the
// schema evaluations of the validation in progress, and stops it, by a
// panic that Validate recovers, once they pass a budget proportional to the
// size of the input. A legitimate schema evaluates a handful of schema
// objects per input value; the budget allows stepsPerValue, plus
// baseSteps. A stopped validation counts as "the schema cannot be
// checked", as a schema that does not compile does: the call goes on and
// the upstream, which validates its own input, decides.

const (
	baseSteps     = 100_000
	stepsPerValue = 200
)

// budget is a Validator's count of steps left. Validations of one
// Validator take turns (mu): the extension is shared by every validation of
// the compiled schema, and has no other way to tell them apart.
type budget struct {
	mu    sync.Mutex
	left  int64
	armed bool
}

// overBudget is what the extension panics with.
type overBudget struct{}

// budgetVocab is the vocabulary that attaches the budget's counter to
// every schema object of a compilation.
func budgetVocab(b *budget) *jsonschema.Vocabulary {
	return &jsonschema.Vocabulary{
		URL: "https://codemode.invalid/vocab/budget",
		Compile: func(*jsonschema.CompilerContext, map[string]any) (jsonschema.SchemaExt, error) {
			return budgetStep{b}, nil
		},
	}
}

type budgetStep struct{ b *budget }

// Validate counts one evaluation of a schema object (the validator calls it
// once per object it evaluates against a value, after the object's other
// keywords).
func (s budgetStep) Validate(*jsonschema.ValidatorContext, any) {
	if !s.b.armed {
		return
	}
	s.b.left--
	if s.b.left < 0 {
		panic(overBudget{})
	}
}

// check validates x against s (v's compiled schema or one of its
// subschemas) within the budget. exceeded reports a validation stopped for
// its work; a panic of the validator's own is returned as panicked.
func (v *Validator) check(s *jsonschema.Schema, x any) (err error, exceeded, panicked bool) {
	b := v.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left, b.armed = baseSteps+stepsPerValue*countValues(x), true
	defer func() {
		b.armed = false
		if r := recover(); r != nil {
			_, exceeded = r.(overBudget)
			panicked = !exceeded
			err = nil
		}
	}()
	return s.Validate(x), false, false
}

// countValues counts the JSON values in x (x itself included), up to
// 1<<40.
func countValues(x any) int64 {
	var n int64
	var walk func(any)
	walk = func(x any) {
		if n >= 1<<40 {
			return
		}
		n++
		switch x := x.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(x)
	return n
}
