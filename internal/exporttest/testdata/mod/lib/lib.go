// Package lib exports what its command uses, and some names only its
// tests use.
package lib

// Used is called by the command.
func Used() int { return helper() }

// OnlyTests is called by tests alone.
func OnlyTests() int { return 2 }

// Unused is called by nobody.
const Unused = 3

// Within is used by the package itself, not by the command.
var Within = 4

func helper() int { return Within }

// Config is the command's options.
type Config struct {
	Name    string // set by the command
	Debug   bool   // read by Peek
	Encoded int    `json:"encoded"` // read by encoding/json
}

// Run is the command's.
func (c Config) Run() string { return c.Name }

// Peek is for tests.
func (c Config) Peek() bool { return c.Debug }

// String is called by fmt.
func (c Config) String() string { return c.Name }
