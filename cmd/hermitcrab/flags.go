package main

// optionFlags names the flag (or argument) that sets each option the
// kernel names in its errors (hermitcrab.OptionError): the one place the
// command turns the library's names into its own (cli.OptionFlags).
var optionFlags = map[string]string{
	"data":               "--data",
	"addr":               "--addr",
	"allow_host":         "--allow-host",
	"token":              "--token",
	"shell_file":         "--shell",
	"web_allow":          "--web-allow",
	"web_deny":           "--web-deny",
	"path":               "ADDRESS",
	"type":               "--type",
	"body":               "BODY",
	"window":             "--window",
	"agent_rate":         "--agent-rate",
	"agent_burst":        "--agent-burst",
	"addr_rate":          "--addr-rate",
	"addr_burst":         "--addr-burst",
	"max_body":           "--max-body",
	"max_savepoint_body": "--max-savepoint-body",
}
