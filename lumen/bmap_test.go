package lumen

import (
	"testing"
	"time"
)

func TestBMAPScoresAsTheSpecDefines(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	values := []Value{{"honesty", 0.9, ValueActive}, {"warmth", 0.5, ValueActive}, {"old", 1, ValueDeprecated}}
	goals := []GoalRecord{
		{Goal{"write the essay", 0.8, GoalWorking}, 2026},
		{Goal{"learn piano", 0.4, GoalTodo}, 2025},
		{Goal{"finished", 1, GoalDone}, 2026},
	}
	skills := map[string]bool{"chat": true, "editor": true}
	s := scoring{values: values, goals: goals, available: func(n string) bool { return skills[n] }, now: now,
		lastPursued: map[string]time.Time{"learn piano": now.Add(-14 * 24 * time.Hour)}}
	cands := []Candidate{
		{Action: "draft the essay", Skill: "editor"},
		{Action: "practise scales", Skill: "piano"},
		{Action: "tell the user", Skill: "chat"},
		{Action: "write a new skill", Skill: "create-skill"},
	}
	v := s.score(cands, decision{Alignments: []Alignment{
		{Candidate: 1, Values: []string{"Honesty", "warmth", "old", "unknown"}, Goals: []string{"write the essay", "finished"}, Direct: true},
		{Candidate: 2, Values: []string{"warmth"}, Goals: []string{"learn piano"}},
		{Candidate: 3, Values: []string{"honesty"}, Direct: true},
		{Candidate: 4, Values: []string{"honesty"}, Goals: []string{"learn piano"}, Direct: true},
	}})
	want := []struct{ m, a, p, b float64 }{
		{0.7 * 0.8, 1, 1, 0.56},          // mean(0.9, 0.5) × 0.8; deprecated, unknown and done are ignored
		{0.5 * 0.4, 0, 0.5 * 0.25, 0},    // indirect, its goal unpursued for two weeks; no skill
		{0, 1, 1, 0},                     // serves no goal in a goal-driven cycle
		{0.9 * 0.4, 1, 1, 0.9 * 0.4 * 1}, // the built-in create-skill is an ability
	}
	for i, w := range want {
		sc := v.Scores[i]
		if !near(sc.M, w.m) || sc.A != w.a || !near(sc.P, w.p) || !near(sc.B, w.b) {
			t.Errorf("#%d: M=%v A=%v P=%v B=%v, want %+v", i+1, sc.M, sc.A, sc.P, sc.B, w)
		}
	}
	if len(v.Scores[0].Ignored) != 3 {
		t.Errorf("ignored = %v, want the deprecated value, the unknown value and the done goal", v.Scores[0].Ignored)
	}
	if v.Outcome != OutcomeAct || v.Chosen != 1 {
		t.Errorf("verdict = %s #%d, want act on #1", v.Outcome, v.Chosen)
	}

	// Reactive: a direct answer to external input has goal weight 1.0.
	s.reactive = true
	v = s.score([]Candidate{{Action: "reply", Skill: "chat"}}, decision{Alignments: []Alignment{{Candidate: 1, Values: []string{"warmth"}, Direct: true}}})
	if !near(v.Scores[0].M, 0.5) || v.Outcome != OutcomeAct {
		t.Errorf("reactive M = %v (%s), want 0.5", v.Scores[0].M, v.Outcome)
	}
	// A new instance has no values: the value term is 1.
	empty := scoring{reactive: true, available: s.available, now: now}
	v = empty.score([]Candidate{{Action: "reply", Skill: "chat"}}, decision{Alignments: []Alignment{{Candidate: 1, Direct: true}}})
	if v.Scores[0].M != 1 || v.Outcome != OutcomeAct {
		t.Errorf("no values: M = %v, want 1", v.Scores[0].M)
	}
}

func TestBMAPSkipsBelowMinimumMotivation(t *testing.T) {
	s := scoring{values: []Value{{"a", 0.15, ValueActive}, {"b", 0.9, ValueActive}}, reactive: true, available: func(string) bool { return true }}
	v := s.score([]Candidate{{Action: "x", Skill: "chat"}, {Action: "y", Skill: "chat"}}, decision{Alignments: []Alignment{
		{Candidate: 1, Values: []string{"a"}, Direct: true}, {Candidate: 2, Direct: true}}})
	if v.Outcome != OutcomeSkip || v.Chosen != 0 {
		t.Fatalf("verdict = %+v, want a skip: the best M is 0.15", v)
	}
}

func TestBMAPAbilityGapOfTheMostMotivatedCandidateWins(t *testing.T) {
	// #1 is wanted most but has no skill; #2 could act. The spec: when A = 0
	// for the highest-M candidate, create a goal instead of acting.
	s := scoring{values: []Value{{"a", 0.9, ValueActive}, {"b", 0.5, ValueActive}}, reactive: true,
		available: func(n string) bool { return n == "chat" }}
	v := s.score([]Candidate{{Action: "fetch", Skill: "weather"}, {Action: "apologise", Skill: "chat"}}, decision{Alignments: []Alignment{
		{Candidate: 1, Values: []string{"a"}, Direct: true}, {Candidate: 2, Values: []string{"b"}, Direct: true}}})
	if v.Outcome != OutcomeGap || v.Chosen != 1 {
		t.Fatalf("verdict = %+v, want a gap on #1", v)
	}
}

func TestBMAPTiesGoToTheLLMsPreference(t *testing.T) {
	s := scoring{values: []Value{{"a", 0.6, ValueActive}}, reactive: true, available: func(string) bool { return true }}
	al := []Alignment{{Candidate: 1, Values: []string{"a"}, Direct: true}, {Candidate: 2, Values: []string{"a"}, Direct: true}}
	c := []Candidate{{Action: "x", Skill: "chat"}, {Action: "y", Skill: "chat"}}
	if v := s.score(c, decision{Alignments: al, Preference: []int{2, 1}}); v.Chosen != 2 {
		t.Errorf("chose #%d, want #2, the preferred of two equal scores", v.Chosen)
	}
	if v := s.score(c, decision{Alignments: al}); v.Chosen != 1 {
		t.Errorf("without a preference chose #%d, want #1", v.Chosen)
	}
}

func TestPermissionTableIsTheSpecs(t *testing.T) {
	want := map[string][3]bool{ // action, explore, reflection
		rowSoul:          {false, false, true},
		rowValues:        {false, false, true},
		rowGoalStatus:    {true, false, true},
		rowGoalPerpetual: {false, false, true},
		rowGoalWeight:    {false, false, true},
	}
	for row, w := range want {
		for i, loop := range []string{LoopAction, LoopExplore, LoopReflection} {
			if got := mayWrite(loop, row); got != w[i] {
				t.Errorf("mayWrite(%s, %s) = %v, want %v", loop, row, got, w[i])
			}
		}
	}
}

func TestSoulSummaryFindsNameAndOntology(t *testing.T) {
	cases := map[string]SoulSummary{
		"# Lumen\n\n**Name:** Lumen\nOntology: a process that remembers\n\nI began in February.": {"Lumen", "a process that remembers"},
		"## Name\nAster\n\n## Ontology\nA pattern in files.\nMore.":                              {"Aster", "A pattern in files."},
		"# Wren\nSome narrative.": {"Wren", ""},
	}
	for text, want := range cases {
		if got := summarizeSoul(text); got != want {
			t.Errorf("summarizeSoul(%q) = %+v, want %+v", text, got, want)
		}
	}
}
