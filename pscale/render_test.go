package pscale

import (
	"strings"
	"testing"
)

func section(t *testing.T, js, name, addr string, point *int) string {
	t.Helper()
	b := mustParse(t, js)
	var ap *Address
	if addr != "" {
		a := mustAddr(t, addr)
		ap = &a
	}
	r, err := BSP(b, Query{Address: ap, Pscale: point})
	if err != nil {
		t.Fatal(err)
	}
	return RenderSection(name, r)
}

// Pitfall: JSON key order; rendering puts "_" first and digits in numeric
// order whatever order the stored JSON had.
func TestRenderBlockSectionIndentsTreeWithUnderscoreFirstAndDigitsInOrder(t *testing.T) {
	js := `{"place":1,"tree":{"0":{"3":"Third","2":{"1":"Grandchild","_":"Second is a branch"},"_":"Purpose root","1":"First entry"}}}`
	want := strings.Join([]string{
		"[purpose]",
		"0:",
		"  Purpose root",
		"  1: First entry",
		"  2:",
		"    Second is a branch",
		"    1: Grandchild",
		"  3: Third",
	}, "\n")
	if got := section(t, js, "purpose", "", nil); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderBlockSectionShowsOtherKeysAfterDigitsAndSkipsEmptyText(t *testing.T) {
	js := `{"place":1,"tree":{"0":{"_":"","1":"a","stimulus":"user","last":17}}}`
	want := "[concerns]\n0:\n  1: a\n  last: 17\n  stimulus: user"
	if got := section(t, js, "concerns", "", nil); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderSpindleSectionListsPscaleAndText(t *testing.T) {
	want := "[purpose 0.23]\n  [0] Purpose root\n  [-1] Second is a branch\n  [-2] Deep"
	if got := section(t, purposeJSON, "purpose", "0.23", nil); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderSpindleHeaderKeepsTheAddressAsWritten(t *testing.T) {
	js := `{"place":1,"tree":{"0":{"_":"wake","9":{"_":"prompt","4":"light params"}}}}`
	want := "[wake 0.9.4]\n  [0] wake\n  [-1] prompt\n  [-2] light params"
	if got := section(t, js, "wake", "0.9.4", nil); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderPointSectionIsOneLine(t *testing.T) {
	want := "[purpose 0.2 -1] Second is a branch"
	if got := section(t, purposeJSON, "purpose", "0.2", intp(-1)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRenderApertureShowsTheRootText(t *testing.T) {
	tests := []struct{ js, want string }{
		{purposeJSON, "[purpose] Purpose root"},
		{`{"place":1,"tree":{"0":"leaf root"}}`, "[purpose] leaf root"},
		{`{"place":1,"tree":{}}`, "[purpose] "},
		{`{"place":1,"tree":{"0":{"1":"a"}}}`, "[purpose] "}, // no "_": empty, not JSON
	}
	for _, tt := range tests {
		if got := RenderAperture("purpose", mustParse(t, tt.js)); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
