// Package trigger reads the wake triggers an instance writes for itself
// (architecture spec §9.2 and §14.6): wake 0.4 holds the internal ones
// (rhythms, timers, staleness), wake 0.5 the external ones (inbox,
// webhooks, watched pages), one line per digit 1–9, in a small written
// form the kernel checks mechanically:
//
//	every 6h tier 1: check stash            a rhythm: every 6 hours from when it was written
//	daily 09:00 tier 2: plan the day        a time of day (the machine's zone, or "daily 09:00 Europe/Paris")
//	stale stash after 3d tier 1: tidy it    a block unchanged for 3 days (since its last change or wake)
//	inbox tier 1                            a message on the beach (polled every minute; "inbox every 5m tier 1")
//	webhook deploy tier 1: check the build  a POST to the instance's /hooks/deploy
//	watch https://example.org every 1h tier 1: what changed?   a page whose content changed
//	cap 24 wakes a day                      the daily caps (they can only lower the person's)
//	cap $0.50 a day
//
// "tier N" is optional, tier 1 by default; the text after the first colon
// (one that is not in a URL or a time of day) is the instruction the wake
// carries. A line that cannot be read does not stop the others: it is a
// problem, which the kernel reports inside the instance's next prompt.
// docs/hermitcrab-network.md#wake-triggers has the whole form.
package trigger

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/pscale"
)

// Kind is what a trigger waits for.
type Kind string

// Kinds of triggers.
const (
	Every   Kind = "every"
	Daily   Kind = "daily"
	Stale   Kind = "stale"
	Inbox   Kind = "inbox"
	Webhook Kind = "webhook"
	Watch   Kind = "watch"
)

// Least intervals, so that a line cannot make a storm.
const (
	MinEvery     = time.Minute
	MinInboxPoll = time.Minute
	MinWatch     = 5 * time.Minute
	DefaultPoll  = time.Minute // an inbox without "every"
	DefaultWatch = time.Hour   // a watched page without "every"
	DefaultTier  = 1
	maxTextRunes = 500 // the instruction a line carries
	maxLineRunes = 2000
	maxHookName  = 64
)

// Trigger is one line of wake 0.4 or 0.5, read.
type Trigger struct {
	Where string `json:"where"` // "wake 0.4.1"
	Line  string `json:"line"`  // as written
	Kind  Kind   `json:"kind"`
	Tier  int    `json:"tier"`
	// Every is the rhythm (every), the polling interval (inbox) or the
	// fetching interval (watch); for stale, how long the block must stay
	// unchanged.
	Every time.Duration `json:"every,omitempty"`
	At    string        `json:"at,omitempty"` // daily: "09:00"
	Hour  int           `json:"-"`
	Min   int           `json:"-"`
	Zone  string        `json:"zone,omitempty"` // daily: an IANA zone, "" for the machine's
	Block string        `json:"block,omitempty"`
	Name  string        `json:"name,omitempty"` // webhook
	URL   string        `json:"url,omitempty"`  // watch
	Text  string        `json:"text,omitempty"` // the instruction after the colon
	loc   *time.Location
}

// Key names the trigger in the kernel's records: its meaning, not its
// digit, so moving a line keeps its next due time and changing it (another
// rhythm, another tier) starts afresh.
func (t Trigger) Key() string {
	var b strings.Builder
	b.WriteString(string(t.Kind))
	switch t.Kind {
	case Every, Inbox:
		fmt.Fprintf(&b, " %s", t.Every)
	case Daily:
		fmt.Fprintf(&b, " %02d:%02d %s", t.Hour, t.Min, t.Zone)
	case Stale:
		fmt.Fprintf(&b, " %s %s", t.Block, t.Every)
	case Webhook:
		fmt.Fprintf(&b, " %s", t.Name)
	case Watch:
		fmt.Fprintf(&b, " %s %s", t.URL, t.Every)
	}
	fmt.Fprintf(&b, " tier %d: %s", t.Tier, t.Text)
	return b.String()
}

// Caps are the daily caps on wakes and on their cost; 0 is no cap set.
type Caps struct {
	Wakes   int     `json:"wakes,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Lower returns the lower of each cap, a zero counting as unset.
func (c Caps) Lower(o Caps) Caps {
	if o.Wakes > 0 && (c.Wakes == 0 || o.Wakes < c.Wakes) {
		c.Wakes = o.Wakes
	}
	if o.CostUSD > 0 && (c.CostUSD == 0 || o.CostUSD < c.CostUSD) {
		c.CostUSD = o.CostUSD
	}
	return c
}

// Set is what the wake block says: its triggers, its caps, and the lines
// it could not read.
type Set struct {
	Triggers []Trigger `json:"triggers"`
	Caps     Caps      `json:"caps"`
	Problems []string  `json:"problems,omitempty"`
}

// Branches are the wake block's trigger branches.
var Branches = []string{"0.4", "0.5"}

// Read reads wake 0.4 and 0.5. No wake block, or no such branch, is an
// empty set; only a failing Source is an error.
func Read(src prompt.Source) (Set, error) {
	var set Set
	wake, err := src.Block("wake")
	if errors.Is(err, prompt.ErrNoBlock) {
		return set, nil
	}
	if err != nil {
		return set, err
	}
	seen := map[string]string{}
	for _, branch := range Branches {
		addr, err := pscale.ParseAddress(branch)
		if err != nil {
			return set, err
		}
		view, err := pscale.Read(wake, addr)
		if err != nil {
			continue // no such branch: no triggers there
		}
		digits := make([]string, 0, len(view.Children))
		for d := range view.Children {
			digits = append(digits, d)
		}
		sort.Strings(digits) // single digits 1–9
		for _, d := range digits {
			line := strings.TrimSpace(view.Children[d])
			where := "wake " + branch + "." + d
			if line == "" || line == "(branch)" {
				continue
			}
			if caps, ok, err := parseCap(line); ok {
				if err != nil {
					set.Problems = append(set.Problems, fmt.Sprintf("%s %q: %v", where, clip(line), err))
					continue
				}
				set.Caps = set.Caps.Lower(caps)
				continue
			}
			t, err := Parse(line)
			if err != nil {
				set.Problems = append(set.Problems, fmt.Sprintf("%s %q: %v", where, clip(line), err))
				continue
			}
			t.Where = where
			if other, dup := seen[t.Key()]; dup {
				set.Problems = append(set.Problems, fmt.Sprintf("%s %q says what %s says: it runs once", where, clip(line), other))
				continue
			}
			seen[t.Key()] = where
			set.Triggers = append(set.Triggers, t)
		}
	}
	return set, nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}

// forms is what the error for an unreadable line lists.
const forms = `"every 6h tier 1: …", "daily 09:00 tier 2: …", "stale BLOCK after 3d tier 1: …", "inbox tier 1", "webhook NAME tier 1: …", "watch URL every 1h tier 1: …", "cap 24 wakes a day", "cap $0.50 a day"`

// Parse reads one trigger line (not a cap).
func Parse(line string) (Trigger, error) {
	t := Trigger{Line: line, Tier: DefaultTier}
	if n := len([]rune(line)); n > maxLineRunes {
		return t, fmt.Errorf("%d characters: a trigger line has at most %d", n, maxLineRunes)
	}
	head, text := splitText(line)
	t.Text = strings.TrimSpace(text)
	if n := len([]rune(t.Text)); n > maxTextRunes {
		return t, fmt.Errorf("the instruction after the colon has %d characters, at most %d: keep details in a block and name it here", n, maxTextRunes)
	}
	words := strings.Fields(head)
	if len(words) == 0 {
		return t, fmt.Errorf("empty: write one of %s", forms)
	}
	// "tier N" may stand anywhere after the first word.
	rest := words[:1]
	for i := 1; i < len(words); i++ {
		if strings.EqualFold(words[i], "tier") {
			if i+1 == len(words) {
				return t, errors.New(`"tier" needs a number: 1 (light), 2 (present) or 3 (deep)`)
			}
			n, err := strconv.Atoi(words[i+1])
			if err != nil || n < 1 || n > 3 {
				return t, fmt.Errorf("tier %q: 1 (light), 2 (present) or 3 (deep)", words[i+1])
			}
			t.Tier = n
			i++
			continue
		}
		rest = append(rest, words[i])
	}
	kind, args := strings.ToLower(rest[0]), rest[1:]
	var err error
	switch Kind(kind) {
	case Every:
		t.Kind = Every
		t.Every, err = atLeast(strings.Join(args, " "), "every", MinEvery)
	case Daily:
		t.Kind = Daily
		err = t.daily(args)
	case Stale:
		t.Kind = Stale
		err = t.stale(args)
	case Inbox:
		t.Kind, t.Every = Inbox, DefaultPoll
		err = t.interval(args, MinInboxPoll)
	case Webhook:
		t.Kind = Webhook
		err = t.webhook(args)
	case Watch:
		t.Kind, t.Every = Watch, DefaultWatch
		if len(args) == 0 {
			return t, errors.New(`watch needs a URL: "watch https://example.org every 1h tier 1: …"`)
		}
		if err = t.watchURL(args[0]); err == nil {
			err = t.interval(args[1:], MinWatch)
		}
	default:
		return t, fmt.Errorf("not a trigger: write one of %s", forms)
	}
	return t, err
}

// splitText cuts a line at its first colon that is not inside a URL (a
// word starting http:// or https://) or a time of day ("09:00").
func splitText(line string) (head, text string) {
	inURL := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == ' ' || c == '\t' {
			inURL = false
			continue
		}
		if i == 0 || line[i-1] == ' ' || line[i-1] == '\t' {
			w := strings.ToLower(line[i:])
			inURL = strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://")
		}
		if c != ':' || inURL {
			continue
		}
		if i > 0 && i+1 < len(line) && isDigit(line[i-1]) && isDigit(line[i+1]) {
			continue
		}
		return line[:i], line[i+1:]
	}
	return line, ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (t *Trigger) interval(args []string, least time.Duration) error {
	if len(args) == 0 {
		return nil
	}
	if !strings.EqualFold(args[0], "every") {
		return fmt.Errorf("%q: only \"every DURATION\" may follow (e.g. every 5m)", strings.Join(args, " "))
	}
	d, err := atLeast(strings.Join(args[1:], " "), "every", least)
	t.Every = d
	return err
}

// atLeast reads a duration that must be at least least.
func atLeast(s, word string, least time.Duration) (time.Duration, error) {
	d, err := duration(s, word)
	if err == nil && d < least {
		err = fmt.Errorf("%s %s: at least %s here", word, d, least)
	}
	return d, err
}

var clockRE = regexp.MustCompile(`^([01]?[0-9]|2[0-3])[:.h]([0-5][0-9])$`)

func (t *Trigger) daily(args []string) error {
	if len(args) == 0 {
		return errors.New(`daily needs a time of day: "daily 09:00 tier 2: …"`)
	}
	m := clockRE.FindStringSubmatch(args[0])
	if m == nil {
		return fmt.Errorf("time of day %q: want HH:MM on a 24-hour clock, e.g. 09:00 or 21:30", args[0])
	}
	t.Hour, _ = strconv.Atoi(m[1])
	t.Min, _ = strconv.Atoi(m[2])
	t.At = fmt.Sprintf("%02d:%02d", t.Hour, t.Min)
	t.loc = time.Local
	switch len(args) {
	case 1:
	case 2:
		if strings.EqualFold(args[1], "UTC") {
			t.Zone, t.loc = "UTC", time.UTC
			return nil
		}
		loc, err := time.LoadLocation(args[1])
		if err != nil || strings.HasPrefix(args[1], "/") || strings.Contains(args[1], "..") {
			return fmt.Errorf("zone %q: want an IANA zone such as Europe/Paris, or UTC, or none for this machine's", args[1])
		}
		t.Zone, t.loc = args[1], loc
	default:
		return fmt.Errorf("%q: after the time only a zone may follow", strings.Join(args[1:], " "))
	}
	return nil
}

func (t *Trigger) stale(args []string) error {
	if len(args) < 3 || !strings.EqualFold(args[1], "after") {
		return errors.New(`want "stale BLOCK after DURATION", e.g. "stale stash after 3d tier 1: tidy it"`)
	}
	t.Block = args[0]
	var err error
	t.Every, err = atLeast(strings.Join(args[2:], " "), "after", MinEvery)
	return err
}

var hookName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (t *Trigger) webhook(args []string) error {
	if len(args) != 1 || !hookName.MatchString(args[0]) || len(args[0]) > maxHookName {
		return fmt.Errorf(`want "webhook NAME", NAME 1-%d of A-Z a-z 0-9 _ - (it is the path /hooks/NAME)`, maxHookName)
	}
	t.Name = args[0]
	return nil
}

func (t *Trigger) watchURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("URL %q: want an absolute http(s) URL", raw)
	}
	if u.User != nil {
		return fmt.Errorf("URL %q: no user or password in a watched URL (the wake block is not a place for secrets)", u.Redacted())
	}
	t.URL = u.String()
	return nil
}

// units maps a duration unit to its length.
var units = map[string]time.Duration{
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

var durationPart = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([a-z]+)`)

// duration reads "6h", "1h30m", "6 hours", "1 day", "hour", "day".
func duration(s, after string) (time.Duration, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if d, ok := units[s]; ok && s != "m" && s != "h" && s != "d" && s != "w" {
		return d, nil // "every hour", "every day"
	}
	var total time.Duration
	rest := s
	for rest != "" {
		m := durationPart.FindStringSubmatch(rest)
		if m == nil {
			break
		}
		unit, ok := units[m[2]]
		if !ok {
			return 0, fmt.Errorf("%s %q: unknown unit %q (m, h, d, w)", after, s, m[2])
		}
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil || n > 1e6 {
			return 0, fmt.Errorf("%s %q: not a number", after, s)
		}
		total += time.Duration(n * float64(unit))
		rest = strings.TrimSpace(rest[len(m[0]):])
	}
	if rest != "" || total <= 0 {
		return 0, fmt.Errorf("%s %q: want a duration such as 30m, 6h, 1d or 2w", after, s)
	}
	if total > 366*24*time.Hour {
		return 0, fmt.Errorf("%s %s: at most a year", after, s)
	}
	return total.Round(time.Second), nil
}

var capRE = regexp.MustCompile(`^cap\s+(\$?)(\d+(?:\.\d+)?)\s*(\$|usd|dollars?)?\s*(wakes?)?\s*((?:a|per)\s+day|/\s*day|daily)?$`)

// parseCap reads "cap 24 wakes a day" or "cap $0.50 a day"; ok is false
// for a line that is not a cap at all.
func parseCap(line string) (Caps, bool, error) {
	l := strings.ToLower(strings.TrimSpace(line))
	if !strings.HasPrefix(l, "cap ") && l != "cap" {
		return Caps{}, false, nil
	}
	m := capRE.FindStringSubmatch(l)
	if m == nil {
		return Caps{}, true, errors.New(`want "cap N wakes a day" or "cap $X a day"`)
	}
	money, wakes := m[1] == "$" || m[3] != "", m[4] != ""
	n, err := strconv.ParseFloat(m[2], 64)
	switch {
	case err != nil || n <= 0:
		return Caps{}, true, errors.New("a cap is above 0")
	case money == wakes:
		return Caps{}, true, errors.New(`say which: "cap N wakes a day" or "cap $X a day"`)
	case wakes && n != float64(int(n)):
		return Caps{}, true, errors.New("a number of wakes is whole")
	case wakes:
		return Caps{Wakes: int(n)}, true, nil
	}
	return Caps{CostUSD: n}, true, nil
}

// Next is when the trigger is next due after now, for the triggers that
// run on the clock (every, daily; inbox and watch on their interval).
// prev is the due time it last fired for (zero when it never did): a
// rhythm keeps its phase, so after the machine slept through several due
// times it is due once, at the first of its times after now. Stale is not
// on the clock (see StaleDue); webhook has no due time.
func (t Trigger) Next(prev, now time.Time) time.Time {
	switch t.Kind {
	case Daily:
		loc := t.loc
		if loc == nil {
			loc = time.Local
			if t.Zone != "" {
				if l, err := time.LoadLocation(t.Zone); err == nil {
					loc = l
				}
			}
		}
		n := now.In(loc)
		at := time.Date(n.Year(), n.Month(), n.Day(), t.Hour, t.Min, 0, 0, loc)
		for !at.After(now) {
			n = n.AddDate(0, 0, 1)
			at = time.Date(n.Year(), n.Month(), n.Day(), t.Hour, t.Min, 0, 0, loc)
		}
		return at
	case Every, Inbox, Watch:
		if prev.IsZero() || prev.After(now) {
			return now.Add(t.Every)
		}
		missed := now.Sub(prev)/t.Every + 1
		return prev.Add(missed * t.Every)
	}
	return time.Time{}
}

// Rebase answers a stored due time later than any the trigger could have
// been given by now (the clock was set back after it fired: a clock that
// ran fast, corrected): the due time it has at now instead, the first
// after now, a rhythm in its phase. ok is false when next is one the
// trigger could have (it then stands).
func (t Trigger) Rebase(next, now time.Time) (at time.Time, ok bool) {
	switch t.Kind {
	case Daily:
		if at = t.Next(now, now); next.After(at) {
			return at, true
		}
	case Every, Inbox, Watch:
		if t.Every > 0 && next.After(now.Add(t.Every)) {
			back := (next.Sub(now) - 1) / t.Every
			return next.Add(-back * t.Every), true
		}
	}
	return next, false
}

// StaleDue is when a stale trigger is due: its block unchanged for Every
// since it last changed, or since the trigger last fired, whichever is
// later.
func (t Trigger) StaleDue(changed, lastFired time.Time) time.Time {
	from := changed
	if lastFired.After(from) {
		from = lastFired
	}
	return from.Add(t.Every)
}

// Describe says the trigger's rule in words, for the wake message.
func (t Trigger) Describe() string {
	switch t.Kind {
	case Every:
		return "every " + human(t.Every)
	case Daily:
		z := t.Zone
		if z == "" {
			z = "this machine's time"
		}
		return fmt.Sprintf("daily at %02d:%02d (%s)", t.Hour, t.Min, z)
	case Stale:
		return fmt.Sprintf("block %s unchanged for %s", t.Block, human(t.Every))
	case Inbox:
		return "a new message on the beach"
	case Webhook:
		return "a POST to /hooks/" + t.Name
	case Watch:
		return fmt.Sprintf("the page %s changed (checked every %s)", t.URL, human(t.Every))
	}
	return string(t.Kind)
}

// human writes a duration the way the lines do: 6h, 1d, 1h30m.
func human(d time.Duration) string {
	switch {
	case d%(7*24*time.Hour) == 0:
		return fmt.Sprintf("%dw", d/(7*24*time.Hour))
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}
