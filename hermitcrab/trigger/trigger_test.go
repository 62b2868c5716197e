package trigger

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/pscale"
)

func TestTheWrittenForms(t *testing.T) {
	for line, want := range map[string]Trigger{
		"every 6h tier 1: check stash":                                   {Kind: Every, Every: 6 * time.Hour, Tier: 1, Text: "check stash"},
		"Every 30 minutes: breathe":                                      {Kind: Every, Every: 30 * time.Minute, Tier: 1, Text: "breathe"},
		"every hour tier 3":                                              {Kind: Every, Every: time.Hour, Tier: 3},
		"every 1h30m tier 2:look":                                        {Kind: Every, Every: 90 * time.Minute, Tier: 2, Text: "look"},
		"every 1 day tier 1: reflect":                                    {Kind: Every, Every: 24 * time.Hour, Tier: 1, Text: "reflect"},
		"daily 09:00 tier 2: plan the day":                               {Kind: Daily, Hour: 9, At: "09:00", Tier: 2, Text: "plan the day"},
		"daily 21:30 Europe/Paris tier 1":                                {Kind: Daily, Hour: 21, Min: 30, At: "21:30", Zone: "Europe/Paris", Tier: 1},
		"daily 7:05 UTC: wake: and say hello":                            {Kind: Daily, Hour: 7, Min: 5, At: "07:05", Zone: "UTC", Tier: 1, Text: "wake: and say hello"},
		"stale stash after 3d tier 1: tidy it":                           {Kind: Stale, Block: "stash", Every: 72 * time.Hour, Tier: 1, Text: "tidy it"},
		"inbox tier 1":                                                   {Kind: Inbox, Every: time.Minute, Tier: 1},
		"inbox every 5m tier 2: answer probes":                           {Kind: Inbox, Every: 5 * time.Minute, Tier: 2, Text: "answer probes"},
		"webhook deploy tier 1: check the build":                         {Kind: Webhook, Name: "deploy", Tier: 1, Text: "check the build"},
		"watch https://example.org/a?b=1 every 1h tier 1: what changed?": {Kind: Watch, URL: "https://example.org/a?b=1", Every: time.Hour, Tier: 1, Text: "what changed?"},
		"watch http://example.org:8080/x":                                {Kind: Watch, URL: "http://example.org:8080/x", Every: time.Hour, Tier: 1},
	} {
		got, err := Parse(line)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		got.Line, got.loc = "", nil
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q:\n got  %+v\n want %+v", line, got, want)
		}
	}
}

// Every unreadable line gets an error that says what is wrong and what
// would be right.
func TestUnreadableLinesSayWhy(t *testing.T) {
	for line, want := range map[string]string{
		"evry 6h tier 1":                        "not a trigger",
		"every 6h tier 4":                       "tier",
		"every 10s tier 1":                      "unknown unit",
		"every 0.5m":                            "at least 1m0s",
		"every soon":                            "want a duration",
		"every 6 fortnights":                    "unknown unit",
		"every 2000d":                           "at most a year",
		"daily 25:00":                           "24-hour clock",
		"daily 09:00 Mars/Olympus":              "IANA zone",
		"daily 09:00 ../../etc/passwd":          "IANA zone",
		"daily":                                 "time of day",
		"stale stash 3d":                        "stale BLOCK after",
		"inbox every 10s":                       "unknown unit",
		"inbox every 30m tier 1 extra":          "want a duration",
		"inbox 30m":                             "only",
		"watch ftp://example.org":               "http(s)",
		"watch https://u:pw@example.org":        "no user or password",
		"watch https://example.org every 1m":    "at least 5m0s",
		"webhook ../x":                          "NAME",
		"webhook a b":                           "NAME",
		"every 6h tier":                         "needs a number",
		"every 6h: " + strings.Repeat("x", 600): "at most 500",
		strings.Repeat("every ", 500):           "at most 2000",
	} {
		_, err := Parse(line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: %v; want an error containing %q", line, err, want)
		}
	}
}

func TestCaps(t *testing.T) {
	for line, want := range map[string]Caps{
		"cap 24 wakes a day": {Wakes: 24},
		"cap 3 wakes":        {Wakes: 3},
		"Cap $0.50 a day":    {CostUSD: 0.5},
		"cap 2 usd per day":  {CostUSD: 2},
		"cap $1/day":         {CostUSD: 1},
	} {
		got, ok, err := parseCap(line)
		if !ok || err != nil || got != want {
			t.Errorf("%q: %+v %v %v, want %+v", line, got, ok, err, want)
		}
	}
	for _, line := range []string{"cap 24", "cap $3 wakes", "cap 2.5 wakes", "cap 0 wakes", "cap lots"} {
		if _, ok, err := parseCap(line); !ok || err == nil {
			t.Errorf("%q: ok %v err %v; want an error", line, ok, err)
		}
	}
	if got := (Caps{Wakes: 48, CostUSD: 1}).Lower(Caps{Wakes: 100, CostUSD: 0.25}); got != (Caps{Wakes: 48, CostUSD: 0.25}) {
		t.Errorf("lower: %+v", got)
	}
}

// wakeWith is a source whose wake block has these lines at 0.4 and 0.5.
func wakeWith(t *testing.T, internal, external []string) prompt.Source {
	t.Helper()
	b := &pscale.Block{Place: 1, Tree: &pscale.Node{}}
	must := func(addr, text string) {
		a, err := pscale.ParseAddress(addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := pscale.Write(b, a, text); err != nil {
			t.Fatal(err)
		}
	}
	must("0", "wake")
	must("0.4", "Internal triggers")
	must("0.5", "External triggers")
	for i, l := range internal {
		must(fmt.Sprintf("0.4.%d", i+1), l)
	}
	for i, l := range external {
		must(fmt.Sprintf("0.5.%d", i+1), l)
	}
	return prompt.Blocks{"wake": b}
}

// Read takes every line it can, lists the others with where they are, and
// keeps the lowest of the caps written.
func TestReadKeepsTheGoodLinesAndReportsTheRest(t *testing.T) {
	src := wakeWith(t,
		[]string{"every 6h tier 1: check stash", "evry day", "cap 10 wakes a day", "cap 20 wakes a day", "every 6h tier 1: check stash"},
		[]string{"inbox tier 1", "cap $0.40 a day", "webhook ci tier 2", "cap lots"})
	set, err := Read(src)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, tr := range set.Triggers {
		kinds = append(kinds, tr.Where+" "+string(tr.Kind))
	}
	if got := strings.Join(kinds, ", "); got != "wake 0.4.1 every, wake 0.5.1 inbox, wake 0.5.3 webhook" {
		t.Errorf("triggers: %s", got)
	}
	if set.Caps != (Caps{Wakes: 10, CostUSD: 0.4}) {
		t.Errorf("caps: %+v", set.Caps)
	}
	probs := strings.Join(set.Problems, "\n")
	for _, want := range []string{`wake 0.4.2 "evry day": not a trigger`, `wake 0.4.5`, `says what wake 0.4.1 says`, `wake 0.5.4 "cap lots"`} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems lack %q:\n%s", want, probs)
		}
	}
	if set, err := Read(prompt.Blocks{}); err != nil || len(set.Triggers)+len(set.Problems) != 0 {
		t.Errorf("no wake block: %+v %v", set, err)
	}
}

// A wake block full of garbage: every line is a problem, none a trigger,
// and nothing panics.
func TestAWakeBlockFullOfGarbage(t *testing.T) {
	garbage := []string{"\x00\x01", "every", "every -5h", "every 1e9h", "daily 99:99", "watch", "watch https://", "tier tier tier",
		"::::", "inbox every", "stale after 3d", "cap $", "every 6h tier 1 tier 2 tier 3 tier 9", "webhook " + strings.Repeat("a", 100)}
	src := wakeWith(t, garbage[:7], garbage[7:])
	set, err := Read(src)
	if err != nil {
		t.Fatal(err)
	}
	// Branches hold digits 1-9: seven and seven lines.
	if len(set.Triggers) != 0 || len(set.Problems) != len(garbage) {
		t.Fatalf("%d triggers, %d problems of %d lines:\n%s", len(set.Triggers), len(set.Problems), len(garbage), strings.Join(set.Problems, "\n"))
	}
}

var t0 = time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)

// A rhythm keeps its phase; after the machine slept (or the clock jumped a
// week forward) it is due once, at its first time after now; a clock set
// back never makes it due again before its next time.
func TestNextKeepsThePhaseAndNeverRepeats(t *testing.T) {
	every, _ := Parse("every 6h tier 1")
	if got := every.Next(time.Time{}, t0); !got.Equal(t0.Add(6 * time.Hour)) {
		t.Errorf("first due: %s", got)
	}
	due := t0.Add(6 * time.Hour)
	if got := every.Next(due, due.Add(time.Minute)); !got.Equal(due.Add(6 * time.Hour)) {
		t.Errorf("after firing on time: %s", got)
	}
	week := due.Add(7 * 24 * time.Hour).Add(time.Minute)
	if got := every.Next(due, week); !got.Equal(due.Add(7*24*time.Hour + 6*time.Hour)) {
		t.Errorf("after a week's jump: %s, want the first time after it", got)
	}
	back := due.Add(-time.Hour)
	if got := every.Next(due, back); !got.After(due) {
		t.Errorf("clock set back an hour: next %s is not after the due time fired (%s)", got, due)
	}

	daily, _ := Parse("daily 09:00 UTC tier 2")
	if got := daily.Next(time.Time{}, t0); !got.Equal(time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("daily after noon: %s", got)
	}
	if got := daily.Next(time.Time{}, time.Date(2026, 11, 4, 8, 59, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("daily before nine: %s", got)
	}
	if got := daily.Next(time.Time{}, time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 11, 5, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("daily at nine exactly (just fired): %s", got)
	}
	paris, _ := Parse("daily 09:00 Europe/Paris")
	want := time.Date(2026, 11, 4, 8, 0, 0, 0, time.UTC) // CET is UTC+1 in November
	if got := paris.Next(time.Time{}, t0); !got.Equal(want) {
		t.Errorf("daily in Paris: %s, want %s", got, want)
	}

	stale, _ := Parse("stale stash after 3d")
	changed := t0
	if got := stale.StaleDue(changed, time.Time{}); !got.Equal(t0.Add(72 * time.Hour)) {
		t.Errorf("stale: %s", got)
	}
	fired := t0.Add(72 * time.Hour)
	if got := stale.StaleDue(changed, fired); !got.Equal(fired.Add(72 * time.Hour)) {
		t.Errorf("stale after firing, block unchanged: %s", got)
	}
}

func TestKeysFollowMeaningNotPlace(t *testing.T) {
	a, _ := Parse("every 6h tier 1: check stash")
	b, _ := Parse("EVERY 6 hours tier 1:   check stash")
	c, _ := Parse("every 6h tier 2: check stash")
	if a.Key() != b.Key() || a.Key() == c.Key() {
		t.Errorf("keys: %q %q %q", a.Key(), b.Key(), c.Key())
	}
}

// Any line: Parse answers without panicking, and a trigger it reads is on
// a sane clock: its next due time is after now, within a day and a year
// of it, and stepping on from it moves forward.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"every 6h tier 1: check stash", "daily 09:00 Europe/Paris tier 2", "stale stash after 3d tier 1",
		"inbox every 5m tier 1", "webhook ci tier 1: go", "watch https://example.org every 1h tier 1", "cap $0.50 a day", "every 1m tier 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		tr, err := Parse(line)
		if err != nil {
			return
		}
		switch tr.Kind {
		case Every, Daily, Inbox, Watch:
			next := tr.Next(time.Time{}, t0)
			if !next.After(t0) || next.Sub(t0) > 366*24*time.Hour {
				t.Fatalf("%q: first due %s after %s", line, next, t0)
			}
			if again := tr.Next(next, next); !again.After(next) {
				t.Fatalf("%q: after %s comes %s", line, next, again)
			}
		}
	})
}

// Any line: a cap line is read without panicking, and a cap it reads is
// one bound, above 0 and finite: a whole number of wakes, or dollars.
func FuzzParseCap(f *testing.F) {
	for _, s := range []string{"cap 24 wakes a day", "cap $0.50 a day", "CAP 3 WAKES A DAY", "cap 0.5 usd a day", "cap 1e400 wakes a day",
		"cap $-1 a day", "cap 2.5 wakes a day", "cap $NaN a day", "cap", "cap 24", "every 6h tier 1: check stash"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, ok, err := parseCap(line)
		if !ok || err != nil {
			return
		}
		switch {
		case c.Wakes > 0 && c.CostUSD == 0:
		case c.Wakes == 0 && c.CostUSD > 0 && !math.IsInf(c.CostUSD, 0):
		default:
			t.Fatalf("%q: caps %+v", line, c)
		}
	})
}
