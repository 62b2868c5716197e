package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/lumen/memory"
)

// The three loops, as the write-permission table names them.
const (
	LoopAction     = "action"
	LoopExplore    = "explore"
	LoopReflection = "reflection"
)

// Rows of the spec's write-permission table.
const (
	rowSoul          = "soul.md"
	rowValues        = "values.json"
	rowGoalStatus    = "goals (status: todo/working/done)"
	rowGoalPerpetual = "goals (status: perpetual)"
	rowGoalWeight    = "goals (weight/existence)"
)

// mayWrite is the spec's write-permission table. The kernel consults it
// for every change a loop asks for; the LLM is never asked to obey it.
func mayWrite(loop, row string) bool {
	switch row {
	case rowGoalStatus:
		return loop == LoopAction || loop == LoopReflection
	case rowSoul, rowValues, rowGoalPerpetual, rowGoalWeight:
		return loop == LoopReflection
	}
	return false
}

// Change is a write to values, goals or soul.md that a loop step asks for.
type Change struct {
	Target string   `json:"target" jsonschema:"enum=value,enum=goal,enum=soul"`
	Op     string   `json:"op" jsonschema:"enum=add,enum=set_weight,enum=set_status,enum=remove,enum=rewrite"`
	Name   string   `json:"name,omitempty"`
	Weight *float64 `json:"weight,omitempty" jsonschema:"minimum=0,maximum=1"`
	Status string   `json:"status,omitempty"`
	Text   string   `json:"text,omitempty"`
}

func (c Change) String() string {
	switch {
	case c.Target == "soul":
		return "rewrite soul.md"
	case c.Op == "set_weight" && c.Weight != nil:
		return fmt.Sprintf("set %s %q weight to %.2f", c.Target, c.Name, *c.Weight)
	case c.Op == "set_status":
		return fmt.Sprintf("set %s %q status to %s", c.Target, c.Name, c.Status)
	case c.Op == "add":
		return fmt.Sprintf("add %s %q", c.Target, c.Name)
	}
	return fmt.Sprintf("%s %s %q", c.Op, c.Target, c.Name)
}

// AppliedChange is a change the kernel made, with the state before and
// after (a value or goal as JSON, null when absent; soul.md as a JSON string).
type AppliedChange struct {
	Change Change          `json:"change"`
	File   string          `json:"file"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// RefusedError is a change the permission table does not allow the loop.
type RefusedError struct {
	Loop   string
	Row    string
	Change Change
}

func (e *RefusedError) Error() string {
	allowed := "only the reflection loop may"
	if e.Row == rowGoalStatus {
		allowed = "only the action and reflection loops may"
	}
	return fmt.Sprintf("refused: the %s loop may not write %s (asked to %s); %s", e.Loop, e.Row, e.Change, allowed)
}

func jsonOf(v any) json.RawMessage {
	data, _ := json.Marshal(v)
	return data
}

// apply checks c against the permission table for loop and makes it. A
// refusal is written as a kernel memory and returned as *RefusedError.
func (in *Instance) apply(ctx context.Context, loop, step string, c Change) (*AppliedChange, error) {
	unlock, err := in.lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()
	c.Name = strings.TrimSpace(c.Name)
	switch c.Target {
	case "soul":
		return in.applySoul(ctx, loop, step, c)
	case "value":
		return in.applyValue(ctx, loop, step, c)
	case "goal":
		return in.applyGoal(ctx, loop, step, c)
	}
	return nil, fmt.Errorf("change target %q: use value, goal or soul", c.Target)
}

func (in *Instance) refuse(loop, step, row string, c Change) error {
	e := &RefusedError{Loop: loop, Row: row, Change: c}
	_, err := in.remember(memory.Kernel, step, "permission check", e.Error(),
		map[string]any{"refused": true, "loop": loop, "file": row, "change": c})
	if err != nil {
		return err
	}
	return e
}

func (in *Instance) applySoul(ctx context.Context, loop, step string, c Change) (*AppliedChange, error) {
	if !mayWrite(loop, rowSoul) {
		return nil, in.refuse(loop, step, rowSoul, c)
	}
	if c.Op != "rewrite" || strings.TrimSpace(c.Text) == "" {
		return nil, fmt.Errorf("soul change: op %q with %d characters of text; soul.md changes are op rewrite with the whole new text", c.Op, len(c.Text))
	}
	before, err := in.Soul()
	if err != nil {
		return nil, err
	}
	text := strings.TrimRight(c.Text, "\n") + "\n"
	if err := atomicfile.Write(in.soulPath(), []byte(text), 0o644); err != nil {
		return nil, err
	}
	return &AppliedChange{Change: c, File: "data/soul.md", Before: jsonOf(before), After: jsonOf(text)}, nil
}

func (in *Instance) applyValue(ctx context.Context, loop, step string, c Change) (*AppliedChange, error) {
	if !mayWrite(loop, rowValues) {
		return nil, in.refuse(loop, step, rowValues, c)
	}
	vs, err := in.Values()
	if err != nil {
		return nil, err
	}
	idx := -1
	for i, v := range vs {
		if sameName(v.Name, c.Name) {
			idx = i
		}
	}
	if c.Name == "" {
		return nil, fmt.Errorf("value change %s: no value name given", c.Op)
	}
	var before any
	if idx >= 0 {
		before = vs[idx]
	}
	switch c.Op {
	case "add":
		if idx >= 0 {
			return nil, fmt.Errorf("value %q already exists (weight %.2f, %s): use set_weight or set_status", c.Name, vs[idx].Weight, vs[idx].Status)
		}
		w := 0.5
		if c.Weight != nil {
			w = *c.Weight
		}
		vs = append(vs, Value{Name: c.Name, Weight: w, Status: ValueActive})
		idx = len(vs) - 1
	case "set_weight", "set_status":
		if idx < 0 {
			return nil, fmt.Errorf("value %q does not exist (values: %s): add it first", c.Name, valueNames(vs))
		}
		if c.Op == "set_weight" {
			if c.Weight == nil {
				return nil, fmt.Errorf("value %q: set_weight without a weight", c.Name)
			}
			vs[idx].Weight = *c.Weight
		} else {
			if c.Status != ValueActive && c.Status != ValueDeprecated {
				return nil, fmt.Errorf("value %q: status %q; values are active or deprecated", c.Name, c.Status)
			}
			vs[idx].Status = c.Status
		}
	default:
		return nil, fmt.Errorf("value change op %q: use add, set_weight or set_status (values are deprecated, not removed)", c.Op)
	}
	if w := vs[idx].Weight; w < 0 || w > 1 {
		return nil, fmt.Errorf("value %q: weight %v outside 0..1", c.Name, w)
	}
	if err := in.writeValues(vs); err != nil {
		return nil, err
	}
	return &AppliedChange{Change: c, File: "data/values.json", Before: jsonOf(before), After: jsonOf(vs[idx])}, nil
}

func valueNames(vs []Value) string {
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (in *Instance) applyGoal(ctx context.Context, loop, step string, c Change) (*AppliedChange, error) {
	if c.Name == "" {
		return nil, fmt.Errorf("goal change %s: no goal name given", c.Op)
	}
	goals, err := in.Goals()
	if err != nil {
		return nil, err
	}
	current, exists := findGoal(goals, c.Name)
	row := rowGoalWeight
	if c.Op == "set_status" {
		row = rowGoalStatus
		if c.Status == GoalPerpetual || (exists && current.Status == GoalPerpetual) {
			row = rowGoalPerpetual
		}
	}
	if !mayWrite(loop, row) {
		return nil, in.refuse(loop, step, row, c)
	}
	var before any
	year := in.opts.Now().UTC().Year()
	if exists {
		before = current.Goal
		year = current.Year
	}
	gs, err := in.readGoalYear(year)
	if err != nil {
		return nil, err
	}
	idx := -1
	for i, g := range gs {
		if sameName(g.Name, c.Name) {
			idx = i
		}
	}
	var after any
	switch c.Op {
	case "add":
		if exists {
			return nil, fmt.Errorf("goal %q already exists in %d (weight %.2f, %s): use set_weight or set_status", c.Name, current.Year, current.Weight, current.Status)
		}
		g := Goal{Name: c.Name, Weight: 0.5, Status: GoalTodo}
		if c.Weight != nil {
			g.Weight = *c.Weight
		}
		if c.Status != "" {
			g.Status = c.Status
		}
		if g.Status != GoalTodo && g.Status != GoalPerpetual {
			return nil, fmt.Errorf("new goal %q: status %q; a new goal is todo or perpetual", c.Name, g.Status)
		}
		gs = append(gs, g)
		after = g
	case "set_weight", "set_status", "remove":
		if !exists || idx < 0 {
			return nil, fmt.Errorf("goal %q does not exist (goals: %s)", c.Name, goalNames(goals))
		}
		switch c.Op {
		case "set_weight":
			if c.Weight == nil {
				return nil, fmt.Errorf("goal %q: set_weight without a weight", c.Name)
			}
			gs[idx].Weight = *c.Weight
			after = gs[idx]
		case "set_status":
			if !validGoalStatus(c.Status) {
				return nil, fmt.Errorf("goal %q: status %q; goals are todo, working, done or perpetual", c.Name, c.Status)
			}
			gs[idx].Status = c.Status
			after = gs[idx]
		case "remove":
			gs = append(gs[:idx], gs[idx+1:]...)
		}
	default:
		return nil, fmt.Errorf("goal change op %q: use add, set_weight, set_status or remove", c.Op)
	}
	if g, ok := after.(Goal); ok && (g.Weight < 0 || g.Weight > 1) {
		return nil, fmt.Errorf("goal %q: weight %v outside 0..1", c.Name, g.Weight)
	}
	if err := in.writeGoalYear(year, gs); err != nil {
		return nil, err
	}
	return &AppliedChange{Change: c, File: fmt.Sprintf("data/goals/%04d.json", year), Before: jsonOf(before), After: jsonOf(after)}, nil
}

func goalNames(goals []GoalRecord) string {
	var names []string
	for _, g := range goals {
		names = append(names, fmt.Sprintf("%q", g.Name))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
