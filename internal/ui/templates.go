package ui

import (
	"html/template"
	"strconv"
	"strings"
	"time"
)

// pages are the templates, each parsed with the layout.
var pages = []string{"runs", "run", "servers", "scripts", "script", "login", "error"}

// parseTemplates parses every page; prefix is where the pages are served
// (the rows the live updates send are rendered outside a page).
func parseTemplates(prefix string) map[string]*template.Template {
	funcs := template.FuncMap{
		"when":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") },
		"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"eq":     func(a, b string) bool { return a == b },
		"list":   func(s ...string) []string { return s },
		"prefix": func() string { return prefix },
		"lines":  func(s string) []string { return strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") },
		"inc":    func(i int) int { return i + 1 },
		"itoa":   strconv.Itoa,
		"stateClass": func(s string) string {
			switch s {
			case "connected":
				return "ok"
			case "error", "backoff":
				return "fail"
			}
			return ""
		},
	}
	out := map[string]*template.Template{}
	for _, name := range pages {
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}
