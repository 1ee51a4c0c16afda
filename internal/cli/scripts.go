package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/codemode-mcp/codemode/internal/scripts"
)

const scriptsUsage = `Usage: codemode scripts <command> [flags]

  codemode scripts save NAME FILE [--description D]   save FILE (or - for stdin) as the next version of NAME
  codemode scripts list [--json]                       the saved scripts, latest versions
  codemode scripts show NAME[@VERSION] [--json]        a script's code (the latest version, or VERSION) and its versions
  codemode scripts delete NAME[@VERSION]               delete one version, or every version of NAME

Every run surface runs a saved script with {"script": "NAME", "args": {...}}
instead of {"code": ...}, and codemode run with --script NAME --args JSON;
the script reads its arguments from @codemode/args or the global args.
Names are letters, digits, '_', '-' and '.', starting with a letter or digit.
A save never replaces a version: it adds the next one (none if the code is
the latest version's).
`

func (e *env) scripts(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, scriptsUsage)
		return ExitUsage
	}
	sub, args := args[0], args[1:]
	var c common
	var desc string
	var asJSON bool
	fs := newFlagSet("scripts "+sub, e.stderr, "scripts "+sub+" ...")
	c.register(fs, "warn")
	switch sub {
	case "save":
		fs.StringVar(&desc, "description", "", "what the script does, shown by list and the inspector")
	case "list", "show":
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "delete":
	case "help", "-h", "--help":
		fmt.Fprint(e.stdout, scriptsUsage)
		return ExitOK
	default:
		fmt.Fprintf(e.stderr, "codemode scripts: unknown command %q\n\n%s", sub, scriptsUsage)
		return ExitUsage
	}
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	want := map[string]int{"save": 2, "list": 0, "show": 1, "delete": 1}[sub]
	if len(pos) != want {
		fmt.Fprint(e.stderr, scriptsUsage)
		return e.usageErr(fmt.Errorf("scripts %s takes %d argument(s), got %q", sub, want, pos))
	}
	st, err := e.openStore(c)
	if err != nil {
		return e.usageErr(err)
	}
	defer st.Close()
	s := scripts.New(st)
	switch sub {
	case "save":
		if err := scripts.ValidName(pos[0]); err != nil {
			return e.usageErr(err)
		}
		code, err := e.readScript(pos[1])
		if err != nil {
			return e.usageErr(err)
		}
		sc, saved, err := s.Save(e.ctx, pos[0], code, desc)
		if err != nil {
			return e.storeErr("saving the script", err)
		}
		if saved {
			fmt.Fprintf(e.stdout, "saved %s@%d\n", sc.Name, sc.Version)
		} else {
			fmt.Fprintf(e.stdout, "unchanged: %s@%d has this code already\n", sc.Name, sc.Version)
		}
	case "list":
		list, err := s.List(e.ctx)
		if err != nil {
			return e.storeErr("listing the scripts", err)
		}
		if asJSON {
			enc := json.NewEncoder(e.stdout)
			for _, sc := range list {
				enc.Encode(map[string]any{"name": sc.Name, "version": sc.Version, "versions": sc.Versions, "savedAt": sc.CreatedAt.UTC(),
					"description": sc.Description, "codeSha256": sc.CodeSHA256})
			}
			return ExitOK
		}
		if len(list) == 0 {
			fmt.Fprintln(e.stderr, "no saved scripts (codemode scripts save NAME FILE)")
			return ExitOK
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tVERSION\tVERSIONS\tSAVED (UTC)\tDESCRIPTION")
		for _, sc := range list {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", sc.Name, sc.Version, sc.Versions, sc.CreatedAt.UTC().Format("2006-01-02 15:04:05"), sc.Description)
		}
		tw.Flush()
	case "show":
		sc, err := s.Get(e.ctx, pos[0])
		if err != nil {
			return e.storeErr("scripts show", err)
		}
		vs, err := s.Versions(e.ctx, sc.Name)
		if err != nil {
			return e.storeErr("scripts show", err)
		}
		if asJSON {
			var versions []int
			for _, v := range vs {
				versions = append(versions, v.Version)
			}
			enc := json.NewEncoder(e.stdout)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			enc.Encode(map[string]any{"name": sc.Name, "version": sc.Version, "versions": versions, "savedAt": sc.CreatedAt.UTC(),
				"description": sc.Description, "codeSha256": sc.CodeSHA256, "code": sc.Code})
			return ExitOK
		}
		fmt.Fprintf(e.stderr, "%s@%d, saved %s UTC", sc.Name, sc.Version, sc.CreatedAt.UTC().Format("2006-01-02 15:04:05"))
		if sc.Description != "" {
			fmt.Fprintf(e.stderr, ": %s", sc.Description)
		}
		var others []string
		for _, v := range vs {
			others = append(others, fmt.Sprint(v.Version))
		}
		fmt.Fprintf(e.stderr, " (versions %s)\n", strings.Join(others, ", "))
		fmt.Fprint(e.stdout, sc.Code)
		if !strings.HasSuffix(sc.Code, "\n") {
			fmt.Fprintln(e.stdout)
		}
	case "delete":
		n, err := s.Delete(e.ctx, pos[0])
		if err != nil {
			return e.storeErr("scripts delete", err)
		}
		fmt.Fprintf(e.stdout, "deleted %d version(s) of %s\n", n, strings.SplitN(pos[0], "@", 2)[0])
	}
	return ExitOK
}
