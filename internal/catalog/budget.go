package catalog

import (
	"context"
	"errors"
)

// ErrBudgetSpent ends a search that would do more work than one request
// may (see Budget).
var ErrBudgetSpent = errors.New("the search needs more work than one request may do")

// Budget bounds the work of one search request, which may examine every
// tool of every server (10,000 of them, say), so that no query can hold a
// core for long: the caller states the work before doing it with Spend,
// which refuses once the request's context is done (the client cancelled
// or left, the run ended, the caller's time budget passed) or the work
// would exceed the maximum. A refusal is final. A Budget belongs to one
// request and one goroutine.
//
// Work is counted in units the caller chooses to be proportional to time:
// catalog.SearchWithin counts term lookups, the emceepee surface's regular
// expression search counts bytes matched times the size of the compiled
// pattern (a bound on the steps of Go's linear-time matcher).
type Budget struct {
	ctx  context.Context
	max  int64
	used int64
	err  error
	opts BudgetOptions
}

// BudgetOptions configure a Budget. All fields are optional.
type BudgetOptions struct {
	// OnSpend is called at the start of every Spend with the work used so
	// far; tests use it to cancel a search midway.
	OnSpend func(ctx context.Context, used int64)
}

// NewBudget returns a budget of maxWork units that also ends with ctx.
func NewBudget(ctx context.Context, maxWork int64, opts *BudgetOptions) *Budget {
	b := &Budget{ctx: ctx, max: maxWork}
	if opts != nil {
		b.opts = *opts
	}
	return b
}

// Spend asks for work units before the work is done. It returns nil if
// they may be spent, and otherwise the reason the search must stop now:
// the context's error, or ErrBudgetSpent; then the work must not be done.
func (b *Budget) Spend(work int64) error {
	if b.err != nil {
		return b.err
	}
	if b.opts.OnSpend != nil {
		b.opts.OnSpend(b.ctx, b.used)
	}
	switch {
	case b.ctx.Err() != nil:
		b.err = b.ctx.Err()
	case work > b.max-b.used:
		b.err = ErrBudgetSpent
	default:
		b.used += work
	}
	return b.err
}

// Used returns the work spent so far; it never exceeds the maximum.
func (b *Budget) Used() int64 { return b.used }

// Max returns the budget's maximum.
func (b *Budget) Max() int64 { return b.max }

// Err returns why the search stopped, or nil if it did not.
func (b *Budget) Err() error { return b.err }
