package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestPrintJSONEscapesWhatATerminalObeys pins that --json output carries no
// raw control a terminal acts on: encoding/json escapes C0 itself, PrintJSON
// escapes DEL, C1 (U+009B is CSI) and bidirectional overrides, and the
// document still decodes to the same text, with <, > and & as they are.
func TestPrintJSONEscapesWhatATerminalObeys(t *testing.T) {
	in := map[string]string{"reply": "a\x1b[2J b\u009b31m c\u202eevil\x7f <b>&", "note": "é ok\nline"}
	var out bytes.Buffer
	if err := PrintJSON(&out, in); err != nil {
		t.Fatal(err)
	}
	doc := out.String()
	for _, raw := range []string{"\x1b", "\u009b", "\u202e", "\x7f"} {
		if strings.Contains(doc, raw) {
			t.Errorf("output holds the raw control %q:\n%s", raw, doc)
		}
	}
	for _, want := range []string{`\u001b`, `\u009b`, `\u202e`, `\u007f`, "<b>&", "é ok"} {
		if !strings.Contains(doc, want) {
			t.Errorf("output lacks %q:\n%s", want, doc)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("output does not decode: %v\n%s", err, doc)
	}
	if back["reply"] != in["reply"] || back["note"] != in["note"] {
		t.Fatalf("decoded %q, want %q", back, in)
	}
}
