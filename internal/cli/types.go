package cli

func (e *env) types(args []string) int { return e.usageErr(errorString("not implemented yet")) }

type errorString string

func (e errorString) Error() string { return string(e) }
