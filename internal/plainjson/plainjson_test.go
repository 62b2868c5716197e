package plainjson

import (
	"encoding/json"
	"testing"
)

type raw struct {
	JSX  string          `json:"jsx"`
	Wire json.RawMessage `json:"wire"`
}

func TestMarshalKeepsAngleBracketsAndAmpersands(t *testing.T) {
	v := raw{JSX: `<div a="1">x && y</div>`, Wire: json.RawMessage(`{"t": "<b>&"}`)}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsx":"<div a=\"1\">x && y</div>","wire":{"t":"<b>&"}}`
	if string(got) != want {
		t.Fatalf("Marshal = %s\nwant      %s", got, want)
	}
	std, _ := json.Marshal(v)
	var a, b raw
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(std, &b); err != nil || a.JSX != b.JSX || string(a.Wire) != `{"t":"<b>&"}` {
		t.Fatalf("not the same value as json.Marshal's: %+v vs %+v (%v)", a, b, err)
	}
}

func TestMarshalIndentIndentsWithoutATrailingNewline(t *testing.T) {
	got, err := MarshalIndent(map[string]any{"b": []int{1}, "a": "<"}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": \"<\",\n  \"b\": [\n    1\n  ]\n}"
	if string(got) != want {
		t.Fatalf("MarshalIndent = %q, want %q", got, want)
	}
}

func TestMarshalReportsWhatCannotBeEncoded(t *testing.T) {
	if _, err := Marshal(map[string]any{"f": func() {}}); err == nil {
		t.Fatal("a func was encoded")
	}
}

func TestListWritesNothingAsAnEmptyList(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{{nil, "[]"}, {[]string{}, "[]"}, {[]string{"a"}, `["a"]`}} {
		if got, err := Marshal(List(c.in)); err != nil || string(got) != c.want {
			t.Errorf("List(%#v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}
