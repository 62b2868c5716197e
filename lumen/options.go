package lumen

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/lumen/memory"
)

// Options configure an open instance. Open gives the fields left zero
// their defaults (DefaultOptions) and refuses the rest as Check does.
type Options struct {
	Client    *llm.Client // required for the loops; views work without it
	Provider  string      // the provider's name, recorded with the model on every memory ("anthropic")
	Model     string      // model for every step
	MaxTokens int         // per LLM call; default 4096

	// Embedder ranks memory relevance by embeddings; nil means full text.
	Embedder *Embedder

	// ReadOnly opens the instance for the views: nothing under it is
	// created or written (a memory index that is missing or behind the
	// files is built in memory), and the loops refuse to run.
	ReadOnly bool

	Python         string        // interpreter for skills' main.py; default python3
	SkillTimeout   time.Duration // per skill run; default 60s
	SkillOutputCap int           // bytes of a skill's stdout; default 64 KiB
	// Unconfined runs skills with the user's rights; SkillLimits are a
	// confined skill's resource limits (zero fields: the defaults of
	// internal/proc). See docs/lumen.md, Skills.
	Unconfined  bool
	SkillLimits proc.Limits

	Recent int // N most recent self, goal and external memories a step loads; default 20
	TopK   int // K most relevant memories a step loads; default 10
	// Conversation is how many exchanges of the current chat THINK sees
	// whole; default 12.
	Conversation int
	// SkillsInFull is how many skills' --help THINK and EXPLORE see whole
	// (the most relevant ones); the rest are listed by name; default 6.
	SkillsInFull int

	ReflectEvery   int     // periodic trigger: action cycles between reflections; default 10
	StaleAfter     int     // a todo/working goal idle this many action cycles is stale; default 20
	DeltaThreshold float64 // a prediction delta above this triggers reflection; default 0.5

	DecayEvery   time.Duration // maintenance decays memory weights this often; default 6h
	HalfLife     time.Duration // an unused memory's weight halves in this time; default 7 days
	SummaryEvery int           // new self/goal/external memories before a year's summary is updated; default 50

	Now    func() time.Time // clock; default time.Now
	Logger *slog.Logger     // default slog.Default()

	// OnProgress is told of each piece of a step's answer as it arrives
	// (the commands show it); OnCall of each model call once answered,
	// with what it cost. Both are called on the goroutine that runs the
	// step and should return quickly.
	OnProgress func(Progress)
	OnCall     func(CallReport)
}

// DefaultOptions are the options Open gives the fields left zero (with no
// model, clock or logger: Open takes time.Now and slog.Default).
func DefaultOptions() Options {
	return Options{MaxTokens: 4096, Python: "python3", SkillTimeout: 60 * time.Second, SkillOutputCap: 64 << 10,
		Recent: 20, TopK: 10, Conversation: 12, SkillsInFull: 6, ReflectEvery: 10, StaleAfter: 20, DeltaThreshold: 0.5,
		DecayEvery: 6 * time.Hour, HalfLife: 7 * 24 * time.Hour, SummaryEvery: 50}
}

// withDefaults fills the zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	set(&o.MaxTokens, d.MaxTokens)
	set(&o.SkillOutputCap, d.SkillOutputCap)
	set(&o.Recent, d.Recent)
	set(&o.TopK, d.TopK)
	set(&o.Conversation, d.Conversation)
	set(&o.SkillsInFull, d.SkillsInFull)
	set(&o.ReflectEvery, d.ReflectEvery)
	set(&o.StaleAfter, d.StaleAfter)
	set(&o.SummaryEvery, d.SummaryEvery)
	setD(&o.SkillTimeout, d.SkillTimeout)
	setD(&o.DecayEvery, d.DecayEvery)
	setD(&o.HalfLife, d.HalfLife)
	if o.Python == "" {
		o.Python = d.Python
	}
	if o.DeltaThreshold == 0 {
		o.DeltaThreshold = d.DeltaThreshold
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Check reports the first option no instance can run with, as an
// *OptionError: a count, size or duration that is not above zero. Open
// checks after it gave the zero fields their defaults; a caller that
// fills in every field (the command line, from DefaultOptions) checks
// first, where a zero is a value someone gave.
func (o Options) Check() error {
	for _, c := range []struct {
		field   string
		bad     bool
		value   any
		problem string
	}{
		{"skill_timeout", o.SkillTimeout <= 0, o.SkillTimeout, "give how long a skill run may take, e.g. 60s"},
		{"skill_output_cap", o.SkillOutputCap <= 0, o.SkillOutputCap, "give how many bytes of output a skill run may write, e.g. 65536"},
		{"reflect_every", o.ReflectEvery <= 0, o.ReflectEvery, "give how many action cycles between reflections, e.g. 10 (a run can turn reflection off instead)"},
		{"python", o.Python == "", `""`, "give the interpreter that runs skills' main.py, e.g. python3"},
		{"max_tokens", o.MaxTokens <= 0, o.MaxTokens, "give the most tokens one answer may take, e.g. 4096"},
		{"recent", o.Recent <= 0, o.Recent, "give how many recent memories a step loads, e.g. 20"},
		{"top_k", o.TopK <= 0, o.TopK, "give how many relevant memories a step loads, e.g. 10"},
		{"conversation", o.Conversation <= 0, o.Conversation, "give how many exchanges of a chat THINK sees, e.g. 12"},
		{"skills_in_full", o.SkillsInFull <= 0, o.SkillsInFull, "give how many skills a step sees described in full, e.g. 6"},
		{"stale_after", o.StaleAfter <= 0, o.StaleAfter, "give how many idle action cycles make a goal stale, e.g. 20"},
		{"delta_threshold", !(o.DeltaThreshold > 0), o.DeltaThreshold, "give the prediction delta above which reflection is triggered, e.g. 0.5"},
		{"decay_every", o.DecayEvery <= 0, o.DecayEvery, "give how often memory weights decay, e.g. 6h"},
		{"half_life", o.HalfLife <= 0, o.HalfLife, "give the time in which an unused memory's weight halves, e.g. 168h"},
		{"summary_every", o.SummaryEvery <= 0, o.SummaryEvery, "give how many new memories update a year's summary, e.g. 50"},
	} {
		if c.bad {
			return option.Errorf(c.field, "%v: %s", c.value, c.problem)
		}
	}
	return nil
}

// Check refuses what no limit can mean: a negative count, duration or
// cap (-1 is not "no limit": 0 is), and a cap that is not a finite number
// up to option.MaxUSD; each
// as an *OptionError naming the field.
func (ro RunOptions) Check() error {
	switch {
	case ro.Cycles < 0:
		return option.Errorf("cycles", "%d: give how many cycles to run, or 0 for no limit", ro.Cycles)
	case ro.Interval < 0:
		return option.Errorf("interval", "%s: give the wait between cycles, e.g. 5m, or 0 to run them back to back", ro.Interval)
	case ro.For < 0:
		return option.Errorf("for", "%s: give how long to run, e.g. 8h, or 0 for no limit", ro.For)
	case ro.Backoff < 0:
		return option.Errorf("backoff", "%s: give the wait after a failed cycle, e.g. 30s", ro.Backoff)
	case ro.MaxBackoff < 0:
		return option.Errorf("max_backoff", "%s: give the longest wait after failed cycles, e.g. 30m", ro.MaxBackoff)
	}
	for _, c := range []struct {
		field string
		usd   float64
	}{{"max_cost", ro.MaxCost}, {"max_cost_day", ro.MaxCostDay}} {
		if err := option.CheckUSD(c.field, c.usd, true, "give a cap in US dollars, e.g. 2, or 0 for no cap"); err != nil {
			return err
		}
	}
	return nil
}

// OptionError is the error for an option a method cannot take: which
// (Field, as the library names it: "top_k", "max_cost") and what is wrong
// with its value (Problem). Only a command turns fields into flag names.
type OptionError = option.Error

// NoInstanceError is Open's error for a directory that holds no instance.
type NoInstanceError struct {
	Dir string // the directory, absolute
}

func (e *NoInstanceError) Error() string {
	return fmt.Sprintf("no lumen instance at %s (data/ is missing): make one there with lumen init first, or open another directory", e.Dir)
}

// Embedder ranks memory relevance by an OpenAI-compatible embeddings
// endpoint: URL (e.g. https://api.openai.com/v1), Model and Key.
type Embedder = memory.Embedder
