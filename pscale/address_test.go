package pscale

import (
	"encoding/json"
	"strings"
	"testing"
)

func mustAddr(t testing.TB, v any) Address {
	t.Helper()
	a, err := ParseAddress(v)
	if err != nil {
		t.Fatalf("ParseAddress(%#v): %v", v, err)
	}
	return a
}

func TestParseAddressWalksEveryDigitAndIgnoresDots(t *testing.T) {
	tests := []struct {
		in, digits, text string
	}{
		{"0.12", "012", "0.12"},
		{"0.1.2", "012", "0.1.2"},
		{"012", "012", "012"},
		{"23.41", "2341", "23.41"},
		{".0.1.", "01", ".0.1."},
		{"0..9", "09", "0..9"},
		{"  0.12\n", "012", "0.12"}, // surrounding space trimmed
		{"0", "0", "0"},
	}
	for _, tt := range tests {
		a := mustAddr(t, tt.in)
		if a.Digits() != tt.digits || a.String() != tt.text {
			t.Errorf("ParseAddress(%q) = digits %q text %q, want %q %q", tt.in, a.Digits(), a.String(), tt.digits, tt.text)
		}
	}
}

func TestParseAddressRejectsOtherCharactersByName(t *testing.T) {
	tests := []struct {
		in   string
		name string // the quoted character the error must name
	}{
		{"0.1a", `'a'`},
		{"0,12", `','`},
		{"-0.1", `'-'`},
		{"0.1 2", `' '`},
		{"1e-05", `'e'`},
		{"0.١", `'١'`}, // a non-ASCII digit is not a tree key
		{"0/1", `'/'`},
	}
	for _, tt := range tests {
		_, err := ParseAddress(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("ParseAddress(%q) error = %v, want one naming %s", tt.in, err, tt.name)
		}
	}
}

func TestParseAddressRejectsAddressesWithNoDigits(t *testing.T) {
	for _, in := range []string{"", "   ", ".", "..."} {
		if _, err := ParseAddress(in); err == nil || !strings.Contains(err.Error(), "no digits") {
			t.Errorf("ParseAddress(%q) error = %v, want a no-digits error", in, err)
		}
	}
	for _, in := range []any{nil, true, []string{"0.1"}} {
		if _, err := ParseAddress(in); err == nil {
			t.Errorf("ParseAddress(%#v) succeeded, want an error", in)
		}
	}
}

func TestParseAddressFormatsNumbersWithoutExponent(t *testing.T) {
	tests := []struct {
		in   any
		text string
	}{
		{0.12, "0.12"},
		{1e-7, "0.0000001"},
		{1e21, "1000000000000000000000"},
		{23, "23"},
		{int64(2341), "2341"},
		{float32(0.5), "0.5"},
		{json.Number("1e-3"), "0.001"},
		{json.Number("23.41"), "23.41"},
	}
	for _, tt := range tests {
		if a := mustAddr(t, tt.in); a.String() != tt.text {
			t.Errorf("ParseAddress(%#v) text = %q, want %q", tt.in, a.String(), tt.text)
		}
	}
	if _, err := ParseAddress(-0.5); err == nil || !strings.Contains(err.Error(), `'-'`) {
		t.Errorf("ParseAddress(-0.5) error = %v, want one naming '-'", err)
	}
}

// Pitfall: numeric addresses lose trailing zeros (0.10 became 0.1).
func TestNumericAddressLosesTrailingZerosButStringsKeepThem(t *testing.T) {
	var f float64
	if err := json.Unmarshal([]byte(`0.10`), &f); err != nil {
		t.Fatal(err)
	}
	if got := mustAddr(t, f).Digits(); got != "01" {
		t.Errorf("float64 0.10 walks %q, want 01 (the zero is gone before we see it)", got)
	}
	if got := mustAddr(t, "0.10").Digits(); got != "010" {
		t.Errorf(`string "0.10" walks %q, want 010`, got)
	}
	if got := mustAddr(t, json.Number("0.10")).Digits(); got != "010" {
		t.Errorf(`json.Number 0.10 walks %q, want 010`, got)
	}
}

// Pitfall: models write multi-dot paths (0.9.4), which a float parser cut to 0.9.
func TestMultiDotAddressIsNotCutShort(t *testing.T) {
	b := mustParse(t, `{"place":1,"tree":{"0":{"_":"wake","9":{"_":"prompt","4":{"_":"light params","1":"model claude-haiku-4-5-20251001"}}}}}`)
	a := mustAddr(t, "0.9.4")
	if a.Digits() != "094" {
		t.Fatalf("0.9.4 walks %q, want 094", a.Digits())
	}
	r, err := BSP(b, Query{Address: &a})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != 3 || r.Nodes[2].Text != "light params" {
		t.Errorf("BSP 0.9.4 = %+v, want three nodes ending at light params", r.Nodes)
	}
}

func TestAddressUnmarshalJSONAcceptsStringOrNumber(t *testing.T) {
	var in struct {
		Path Address `json:"path"`
	}
	tests := []struct{ js, digits, text string }{
		{`{"path":"0.9.4"}`, "094", "0.9.4"},
		{`{"path":0.10}`, "010", "0.10"}, // the number's text as written
		{`{"path":2341}`, "2341", "2341"},
	}
	for _, tt := range tests {
		if err := json.Unmarshal([]byte(tt.js), &in); err != nil {
			t.Fatalf("%s: %v", tt.js, err)
		}
		if in.Path.Digits() != tt.digits || in.Path.String() != tt.text {
			t.Errorf("%s: got %q/%q, want %q/%q", tt.js, in.Path.Digits(), in.Path.String(), tt.digits, tt.text)
		}
	}
	for _, js := range []string{`{"path":true}`, `{"path":"0.x"}`, `{"path":{}}`} {
		if err := json.Unmarshal([]byte(js), &in); err == nil {
			t.Errorf("%s: no error", js)
		}
	}
	out, _ := json.Marshal(mustAddr(t, "0.9.4"))
	if string(out) != `"0.9.4"` {
		t.Errorf("Marshal = %s, want \"0.9.4\"", out)
	}
}

// Pitfall: the model sometimes sends numbers as strings ("-3").
func TestParsePscaleCoercesNumbersSentAsStrings(t *testing.T) {
	good := []struct {
		in   any
		want int
	}{
		{"-3", -3}, {" -3 ", -3}, {"+2", 2}, {"-3.0", -3}, {-3.0, -3}, {2, 2},
		{json.Number("-3"), -3}, {json.Number("-3e0"), -3}, {int64(4), 4},
	}
	for _, tt := range good {
		got, err := ParsePscale(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParsePscale(%#v) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []any{"1.5", "abc", "", "0x10", "NaN", "Inf", -1.5, true, nil, json.Number("1.5")} {
		if got, err := ParsePscale(in); err == nil {
			t.Errorf("ParsePscale(%#v) = %d, want an error", in, got)
		}
	}
}
