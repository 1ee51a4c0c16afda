package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/ui"
)

// The pages are an http.Handler over the store's history (and saved
// scripts): serve it at /ui.
func Example() {
	dir, _ := os.MkdirTemp("", "ui-example")
	defer os.RemoveAll(dir)
	st := store.New(&store.Options{Dir: dir})
	defer st.Close()
	st.History().Add(context.Background(), []store.RunRecord{{ID: "0190aaaa-0000-7000-8000-000000000001", Start: time.Now(),
		Surface: "run", Outcome: "ok", Code: "return 1", Limits: json.RawMessage("{}"), Response: json.RawMessage("{}")}})

	pages := ui.New(&ui.Options{History: st.History()})
	rec := httptest.NewRecorder()
	pages.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/", nil))
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), `<tr data-run="0190aaaa-0000-7000-8000-000000000001"`))
	// Output: 200 true
}
