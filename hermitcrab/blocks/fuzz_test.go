package blocks

import (
	"errors"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/tool"
	"github.com/llmkernels/kernels/internal/option"
)

// The tools' edge: any JSON value sent as a tool's "path" is read without
// panicking into an option error of "path", or into an address that reads
// back the same from its text (what the tool answers with); as a "depth",
// into an option error of "depth" or a number.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{`"0.12"`, `"0"`, `12.5`, `0.9`, `"01.13"`, `"0..9."`, `1.5e300`, `1e-7`, `null`, `"１"`, `-1`,
		`"0.x"`, `100`, `[1]`, `{"a":1}`, `true`, `""`, `" 0.1 "`, `"0.1.2.3.4.5.6.7.8.9"`, `0.10`} {
		f.Add(`{"path":` + s + `}`)
	}
	f.Fuzz(func(t *testing.T, input string) {
		var args struct {
			Path any `json:"path"`
		}
		if tool.Decode([]byte(input), &args) != nil {
			return // the tool answers that its input is not JSON
		}
		if _, err := ParseDepth("depth", args.Path); err != nil {
			if e, ok := errors.AsType[*option.Error](err); !ok || e.Field != "depth" {
				t.Fatalf("%s: %v is not an option error of depth", input, err)
			}
		}
		a, err := ParseAddress("path", args.Path)
		if err != nil {
			if e, ok := errors.AsType[*option.Error](err); !ok || e.Field != "path" {
				t.Fatalf("%s: %v is not an option error of path", input, err)
			}
			return
		}
		b, err := ParseAddress("path", a.String())
		if err != nil || b.String() != a.String() || b.Digits() != a.Digits() {
			t.Fatalf("%s read as %q (%s), which reads back as %q (%s): %v", input, a, a.Digits(), b, b.Digits(), err)
		}
	})
}
