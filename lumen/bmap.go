package lumen

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/llmkernels/kernels/lumen/skill"
)

// B=MAP thresholds and constants.
const (
	// MinMotivation: below it the action loop skips and records the skip.
	MinMotivation = 0.2
	// IndirectPrompt is P for a candidate that does not answer the cycle's
	// own trigger; it halves again for every week its goal went unpursued.
	IndirectPrompt = 0.5
	tieEpsilon     = 1e-9
)

// Alignment is the LLM's judgment of which values and goals a candidate
// serves, and whether it answers the cycle's trigger directly.
type Alignment struct {
	Candidate int      `json:"candidate" jsonschema:"minimum=1"`
	Values    []string `json:"values"`
	Goals     []string `json:"goals"`
	Direct    bool     `json:"direct"`
}

// decision is the DECIDE step's answer. The kernel computes the scores.
type decision struct {
	Alignments []Alignment `json:"alignments"`
	Preference []int       `json:"preference"`
	Rationale  string      `json:"rationale"`
}

// Score is one candidate's B = M × A × P, with what went into it.
type Score struct {
	Candidate  int      `json:"candidate"` // from 1
	Action     string   `json:"action"`
	Skill      string   `json:"skill"`
	Values     []string `json:"values"` // aligned active values
	Goals      []string `json:"goals"`  // aligned active goals
	Direct     bool     `json:"direct"`
	ValueMean  float64  `json:"value_mean"`
	GoalWeight float64  `json:"goal_weight"`
	M          float64  `json:"m"`
	A          float64  `json:"a"`
	P          float64  `json:"p"`
	B          float64  `json:"b"`
	// Ignored lists names the LLM gave that are not active values or goals.
	Ignored []string `json:"ignored,omitempty"`
}

func (s Score) String() string {
	return fmt.Sprintf("#%d %q via %s: M=%.2f A=%.0f P=%.2f B=%.3f", s.Candidate, s.Action, s.Skill, s.M, s.A, s.P, s.B)
}

// Outcomes of DECIDE.
const (
	OutcomeAct  = "act"  // the highest-B candidate is carried out
	OutcomeSkip = "skip" // the most motivated candidate has M < 0.2
	OutcomeGap  = "gap"  // the most motivated candidate has no skill (A = 0): a goal to author it is created
)

// Verdict is what DECIDE concluded.
type Verdict struct {
	Scores  []Score `json:"scores"`
	Outcome string  `json:"outcome"`
	Chosen  int     `json:"chosen"` // candidate number acted on or lacking a skill; 0 when skipped
	// Fallback is, on a gap while answering external input, the candidate
	// that acts instead (the highest B among those with M >= 0.2 and
	// A = 1), so the person still gets an answer; 0 when none can.
	Fallback int    `json:"fallback,omitempty"`
	Reason   string `json:"reason"`
}

// scoring holds what B=MAP needs besides the candidates.
type scoring struct {
	values      []Value
	goals       []GoalRecord
	reactive    bool                 // the cycle answers external input
	available   func(string) bool    // whether a skill is ready
	lastPursued map[string]time.Time // lower-cased goal name → when last pursued
	now         time.Time
}

// score computes B = M × A × P for every candidate as the spec defines:
//
//	M = mean(weights of the aligned active values) × goal weight, where the
//	    goal weight is 1.0 for a direct answer to external input and else the
//	    highest weight among the aligned active goals (0 with none). With no
//	    active values at all (a new instance), the value term is 1.0.
//	A = 1 when the skill is ready (its current version's --help passed) or
//	    is the built-in create-skill, else 0.
//	P = 1 for a direct trigger; IndirectPrompt × 0.5^(weeks since its goal
//	    was last pursued) otherwise.
//
// Then: if the most motivated candidate has M < 0.2, skip; if it has A = 0,
// a goal to author its skill is due; else the highest B acts. Ties go to
// the LLM's preference order.
func (s scoring) score(cands []Candidate, d decision) Verdict {
	active := activeValues(s.values)
	goals := activeGoals(s.goals)
	rank := map[int]int{}
	for i, c := range d.Preference {
		if _, seen := rank[c]; !seen {
			rank[c] = i
		}
	}
	order := func(n int) int {
		if r, ok := rank[n]; ok {
			return r
		}
		return len(d.Preference) + n
	}
	align := map[int]Alignment{}
	for _, a := range d.Alignments {
		align[a.Candidate] = a
	}
	var v Verdict
	for i, c := range cands {
		v.Scores = append(v.Scores, s.scoreOne(i+1, c, align[i+1], active, goals))
	}
	s.choose(&v, order)
	return v
}

// scoreOne is candidate n's B = M·A·P from the model's alignment of it.
func (s scoring) scoreOne(n int, c Candidate, a Alignment, active []Value, goals []GoalRecord) Score {
	sc := Score{Candidate: n, Action: c.Action, Skill: c.Skill, Direct: a.Direct}
	var sum float64
	for _, name := range a.Values {
		val, ok := findValue(active, name)
		if !ok {
			sc.Ignored = append(sc.Ignored, "value "+name)
			continue
		}
		sc.Values = append(sc.Values, val.Name)
		sum += val.Weight
	}
	switch {
	case len(active) == 0:
		sc.ValueMean = 1
	case len(sc.Values) > 0:
		sc.ValueMean = sum / float64(len(sc.Values))
	}
	var bestGoal string
	for _, name := range a.Goals {
		g, ok := findGoal(goals, name)
		if !ok {
			sc.Ignored = append(sc.Ignored, "goal "+name)
			continue
		}
		sc.Goals = append(sc.Goals, g.Name)
		if bestGoal == "" || g.Weight > sc.GoalWeight {
			sc.GoalWeight, bestGoal = g.Weight, g.Name
		}
	}
	if s.reactive && a.Direct {
		sc.GoalWeight = 1
	}
	sc.M = sc.ValueMean * sc.GoalWeight
	if c.Skill == skill.BuiltinCreate || s.available(c.Skill) {
		sc.A = 1
	}
	sc.P = 1
	if !a.Direct {
		sc.P = IndirectPrompt
		if t, ok := s.lastPursued[strings.ToLower(bestGoal)]; ok && s.now.After(t) {
			weeks := s.now.Sub(t).Hours() / (24 * 7)
			sc.P = IndirectPrompt * math.Pow(0.5, weeks)
		}
	}
	sc.B = sc.M * sc.A * sc.P
	return sc
}

// choose picks the verdict from the scores: skip, gap or act, ties going
// to the model's preference order.
func (s scoring) choose(v *Verdict, order func(int) int) {
	better := func(x, y Score, key func(Score) float64) bool {
		if math.Abs(key(x)-key(y)) > tieEpsilon {
			return key(x) > key(y)
		}
		return order(x.Candidate) < order(y.Candidate)
	}
	pick := func(key func(Score) float64, ok func(Score) bool) *Score {
		var best *Score
		for i := range v.Scores {
			if ok(v.Scores[i]) && (best == nil || better(v.Scores[i], *best, key)) {
				best = &v.Scores[i]
			}
		}
		return best
	}
	top := pick(func(s Score) float64 { return s.M }, func(Score) bool { return true })
	switch {
	case top == nil:
		v.Outcome, v.Reason = OutcomeSkip, "no candidates"
	case top.M < MinMotivation:
		v.Outcome = OutcomeSkip
		v.Reason = fmt.Sprintf("the most motivated candidate #%d has M=%.2f, below %.1f", top.Candidate, top.M, MinMotivation)
	case top.A == 0:
		v.Outcome, v.Chosen = OutcomeGap, top.Candidate
		v.Reason = fmt.Sprintf("the most motivated candidate #%d (M=%.2f) needs skill %q, which is missing or whose --help has not passed (A=0)", top.Candidate, top.M, top.Skill)
		if s.reactive {
			if fb := pick(func(s Score) float64 { return s.B }, func(s Score) bool { return s.M >= MinMotivation && s.A > 0 }); fb != nil {
				v.Fallback = fb.Candidate
				v.Reason += fmt.Sprintf("; answering the input, #%d (B=%.3f) acts meanwhile", fb.Candidate, fb.B)
			}
		}
	default:
		best := pick(func(s Score) float64 { return s.B }, func(s Score) bool { return s.M >= MinMotivation && s.A > 0 })
		v.Outcome, v.Chosen = OutcomeAct, best.Candidate
		v.Reason = fmt.Sprintf("candidate #%d has the highest B=%.3f", best.Candidate, best.B)
	}
}

func findValue(vs []Value, name string) (Value, bool) {
	for _, v := range vs {
		if sameName(v.Name, name) {
			return v, true
		}
	}
	return Value{}, false
}
