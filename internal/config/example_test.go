package config_test

import (
	"fmt"
	"os"

	"github.com/codemode-mcp/codemode/internal/config"
)

func ExampleParse() {
	src := []byte(`{"mcpServers": {
		"Memory_Graph": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
		"github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
	}}`)
	os.Setenv("GITHUB_TOKEN", "ghp_example")
	c, err := config.Parse("codemode.json", src, os.LookupEnv)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range c.Servers {
		fmt.Println(s.ID, s.Transport)
	}
	_, err = config.Parse("codemode.json", []byte(`{"mcpServers": {"x": {"comand": "npx"}}}`), os.LookupEnv)
	fmt.Println(err)
	// Output:
	// memory-graph stdio
	// github http
	// codemode.json: mcpServers.x.comand: unknown key "comand"
	//   fix: did you mean "command"? Allowed keys here are "type", "command", "args", "env", "inheritEnv", "cwd", "url", "headers", "timeoutMs", "disabled", "allowTools", "denyTools", "autoApprove", "approval", "codeMode"
}
