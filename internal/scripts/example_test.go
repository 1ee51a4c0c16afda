package scripts_test

import (
	"context"
	"fmt"
	"os"

	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/store"
)

// A saved script keeps every version; a run names one as "NAME" (the
// latest) or "NAME@VERSION".
func Example() {
	dir, _ := os.MkdirTemp("", "scripts-example")
	defer os.RemoveAll(dir)
	st := store.New(&store.Options{Dir: dir})
	defer st.Close()
	s := scripts.New(st)
	ctx := context.Background()
	s.Save(ctx, "greet", `return "hello " + args.name`, "")
	s.Save(ctx, "greet", `return "hi " + args.name`, "shorter")

	code, full, _ := s.Resolve(ctx, "greet")
	fmt.Println(full, code)
	code, full, _ = s.Resolve(ctx, "greet@1")
	fmt.Println(full, code)
	// Output:
	// greet@2 return "hi " + args.name
	// greet@1 return "hello " + args.name
}
