// Package scripts is saved scripts: code kept in the data store under a
// name, every version kept, and run by name on every run surface with
// {"script": "NAME", "args": {...}} in place of {"code": ...}. The script
// reads its arguments from @codemode/args (its default export) or the
// global `args`.
//
// Start with [New]. A reference is "NAME" (the latest version) or
// "NAME@VERSION". Names are 1 to 64 letters, digits, '_', '-' and '.',
// starting with a letter or digit ([ValidName]).
package scripts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/store"
)

// MaxNameBytes bounds a script's name.
const MaxNameBytes = 64

// ValidName says what is wrong with name as a script's name, or nil.
func ValidName(name string) error {
	if name == "" {
		return errors.New("a saved script needs a name")
	}
	if len(name) > MaxNameBytes {
		return fmt.Errorf("the script name %.20q… is %d bytes; at most %d", name, len(name), MaxNameBytes)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (i > 0 && (c == '_' || c == '-' || c == '.'))
		if !ok {
			return fmt.Errorf("%q is not a valid script name: use letters, digits, '_', '-' and '.', starting with a letter or digit (e.g. weekly-report)", name)
		}
	}
	return nil
}

// ParseRef splits "NAME" or "NAME@VERSION"; version 0 is the latest.
func ParseRef(ref string) (name string, version int, err error) {
	name, v, hasVersion := strings.Cut(ref, "@")
	if err := ValidName(name); err != nil {
		return "", 0, err
	}
	if hasVersion {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", 0, fmt.Errorf("%q: the version after @ must be a number from 1, e.g. %s@2", ref, name)
		}
		version = n
	}
	return name, version, nil
}

// Scripts saves and finds scripts in a store.
type Scripts struct{ st store.Scripts }

// New returns the saved scripts of st.
func New(st *store.Store) *Scripts { return &Scripts{st.Scripts()} }

// Save saves code under name as its next version (unless it is the latest
// version's code already: then saved is false).
func (s *Scripts) Save(ctx context.Context, name, code, description string) (sc store.Script, saved bool, err error) {
	if err := ValidName(name); err != nil {
		return store.Script{}, false, err
	}
	if strings.TrimSpace(code) == "" {
		return store.Script{}, false, errors.New("the script is empty: nothing to save")
	}
	return s.st.Save(ctx, name, code, description)
}

// Get returns the script ref names.
func (s *Scripts) Get(ctx context.Context, ref string) (store.Script, error) {
	name, version, err := ParseRef(ref)
	if err != nil {
		return store.Script{}, err
	}
	return s.st.Get(ctx, name, version)
}

// List returns the latest version of every script.
func (s *Scripts) List(ctx context.Context) ([]store.Script, error) { return s.st.List(ctx) }

// Versions returns every version of name, newest first.
func (s *Scripts) Versions(ctx context.Context, name string) ([]store.Script, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	return s.st.Versions(ctx, name)
}

// Delete deletes the script ref names: one version, or every version of a
// name given without one. Deleting nothing is an error.
func (s *Scripts) Delete(ctx context.Context, ref string) (int64, error) {
	name, version, err := ParseRef(ref)
	if err != nil {
		return 0, err
	}
	n, err := s.st.Delete(ctx, name, version)
	if err == nil && n == 0 {
		return 0, &store.NotFoundError{What: "saved script", ID: ref}
	}
	return n, err
}

// Resolve returns the code of the script ref names and its full reference
// ("NAME@VERSION"). Its error is the diagnostic a run answers with: the
// request is at fault, and the hint lists the scripts there are.
func (s *Scripts) Resolve(ctx context.Context, ref string) (code, full string, _ *diag.Diagnostic) {
	sc, err := s.Get(ctx, ref)
	if err == nil {
		return sc.Code, sc.Name + "@" + strconv.Itoa(sc.Version), nil
	}
	d := &diag.Diagnostic{Severity: diag.SeverityError, Code: diag.InvalidRequest, Message: err.Error()}
	var nf *store.NotFoundError
	switch {
	case errors.As(err, &nf):
		var names []string
		if list, lerr := s.st.List(ctx); lerr == nil {
			for _, l := range list {
				names = append(names, l.Name)
			}
		}
		d.Message = fmt.Sprintf("there is no saved script %q", ref)
		d.Hint = "save it first (codemode scripts save NAME FILE), or send the code itself in `code`; " + diag.ListHint("saved scripts", names, 20)
	case ValidName(strings.SplitN(ref, "@", 2)[0]) != nil || strings.Contains(err.Error(), "version after @"):
		d.Hint = `name a saved script as "NAME" or "NAME@VERSION"`
	default:
		d.Message = "the saved scripts cannot be read: " + err.Error()
		d.Hint = "send the code itself in `code` until the data store is fixed"
	}
	return "", "", d
}
