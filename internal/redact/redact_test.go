package redact

import "testing"

func TestURLHidesPasswordAndQueryValues(t *testing.T) {
	for raw, want := range map[string]string{
		"https://proxy.example/v1":             "https://proxy.example/v1",
		"https://user:pass@proxy.example/v1":   "https://user:xxxxx@proxy.example/v1",
		"https://proxy.example/v1?key=tok&b=2": "https://proxy.example/v1?b=xxxxx&key=xxxxx",
		"http://u:p@h/?token=t":                "http://u:xxxxx@h/?token=xxxxx",
		"http://h/\x1b":                        Hidden,
		"":                                     "",
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
}
