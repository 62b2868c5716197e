package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/llmkernels/kernels/lumen/memory"
)

// CycleReport is what one cycle of lumen run did.
type CycleReport struct {
	N           int                `json:"n"`
	Loop        string             `json:"loop"` // action or explore
	Idle        string             `json:"idle,omitempty"`
	Action      *ActionReport      `json:"action,omitempty"`
	Explore     *ExploreReport     `json:"explore,omitempty"`
	Maintenance *MaintenanceReport `json:"maintenance,omitempty"`
}

// RunOptions control lumen run.
type RunOptions struct {
	Cycles   int           // cycles to run; 0 runs until ctx is cancelled
	Interval time.Duration // wait between cycles
	OnCycle  func(*CycleReport)
}

// Run runs the internal loop: each cycle is an action loop (pursue the
// highest-weight active goal) or an explore loop, alternating (the first
// cycle continues the alternation recorded in memory); the reflection
// trigger is checked after every action loop, and maintenance runs after
// every cycle when due. When ctx is cancelled (Ctrl-C), the step under way
// finishes and Run returns nil.
func (in *Instance) Run(ctx context.Context, ro RunOptions) error {
	for n := 1; ro.Cycles <= 0 || n <= ro.Cycles; n++ {
		if ctx.Err() != nil {
			return nil
		}
		if n > 1 && ro.Interval > 0 {
			t := time.NewTimer(ro.Interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		rep, err := in.cycle(ctx, n)
		if ro.OnCycle != nil && rep != nil {
			ro.OnCycle(rep)
		}
		if err != nil && rep == nil {
			return fmt.Errorf("cycle %d: %w", n, err)
		}
		if err != nil {
			return fmt.Errorf("cycle %d (%s loop): %w", n, rep.Loop, err)
		}
	}
	return nil
}

func (in *Instance) cycle(ctx context.Context, n int) (*CycleReport, error) {
	step := context.WithoutCancel(ctx)
	kind, err := in.nextLoop(step)
	if err != nil {
		return nil, err
	}
	rep := &CycleReport{N: n, Loop: kind}
	if _, err := in.remember(memory.Kernel, "cycle", "lumen run", fmt.Sprintf("CYCLE: %s loop (cycle %d of this run)", kind, n),
		map[string]any{"loop": kind, "n": n}); err != nil {
		return rep, err
	}
	if kind == LoopExplore {
		rep.Explore, err = in.Explore(ctx)
	} else {
		rep.Action, rep.Idle, err = in.pursueGoal(ctx)
	}
	if err != nil || ctx.Err() != nil {
		return rep, err
	}
	m, err := in.Maintain(step)
	if m.did() {
		rep.Maintenance = m
	}
	return rep, err
}

// nextLoop continues the action/explore alternation from the last cycle
// recorded in memory, so separate `lumen run` invocations alternate too.
func (in *Instance) nextLoop(ctx context.Context) (string, error) {
	last, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: "cycle", Limit: 1})
	if err != nil || len(last) == 0 {
		return LoopAction, err
	}
	var d struct {
		Loop string `json:"loop"`
	}
	if err := json.Unmarshal(last[0].Data, &d); err != nil {
		return LoopAction, nil // a hand-edited cycle record only restarts the alternation
	}
	if d.Loop == LoopAction {
		return LoopExplore, nil
	}
	return LoopAction, nil
}

// pursueGoal selects the highest-weight active goal, logs the selection
// (a goal memory), moves a todo goal to working, and runs the action loop
// on it. With no active goal the cycle idles, and says so.
func (in *Instance) pursueGoal(ctx context.Context) (*ActionReport, string, error) {
	goals, err := in.Goals()
	if err != nil {
		return nil, "", err
	}
	active := activeGoals(goals)
	if len(active) == 0 {
		idle := "no active goal to pursue (reflection creates goals; chat works without them)"
		_, err := in.remember(memory.Kernel, "select", "action loop", "SELECT: "+idle, map[string]any{"loop": LoopAction})
		return nil, idle, err
	}
	g := active[0]
	if _, err := in.remember(memory.Goal, "select", "action loop",
		fmt.Sprintf("Selected goal %q (weight %.2f, %s) to pursue: the highest-weight active goal.", g.Name, g.Weight, g.Status),
		map[string]any{"goal": g.Name, "weight": g.Weight, "status": g.Status}); err != nil {
		return nil, "", err
	}
	var moved *AppliedChange
	if g.Status == GoalTodo {
		// A refusal only leaves the goal as it was; the loop pursues it anyway.
		var err error
		if moved, _, err = in.applyLogged(context.WithoutCancel(ctx), LoopAction, "select", Change{Target: "goal", Op: "set_status", Name: g.Name, Status: GoalWorking}); err != nil {
			return nil, "", err
		}
		if moved != nil {
			g.Status = GoalWorking
		}
	}
	rep, err := in.actionLoop(ctx, trigger{goal: &g})
	if moved != nil {
		rep.Applied = append([]AppliedChange{*moved}, rep.Applied...)
	}
	return rep, "", err
}

// Chat runs one chat turn: the input is stored as an external memory, the
// action loop runs on it, and whatever the chosen skill shows the user
// (the chat skill's reply) is in the report's Skill.Display.
func (in *Instance) Chat(ctx context.Context, input string) (*ActionReport, error) {
	input = strings.TrimSpace(input)
	if input == "" {
		return nil, fmt.Errorf("chat: empty input: type something to say")
	}
	if _, err := in.remember(memory.External, "chat", "chat", input, nil); err != nil {
		return nil, err
	}
	return in.actionLoop(ctx, trigger{external: input})
}
