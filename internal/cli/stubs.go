package cli

func (e *env) types(args []string) int { return e.usageErr(errNotYet) }
func (e *env) serve(args []string) int { return e.usageErr(errNotYet) }

var errNotYet = errorString("not implemented yet")

type errorString string

func (e errorString) Error() string { return string(e) }
