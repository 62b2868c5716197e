package lumen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/lumen/memory"
)

// summaryBatch is how many new memories one summarize call reads at most.
const summaryBatch = 200

// MaintenanceReport says what a maintenance pass did.
type MaintenanceReport struct {
	Decayed    bool  `json:"decayed"`
	Summarized []int `json:"summarized,omitempty"` // years whose summary.md was updated
	Usage      Usage `json:"usage"`
}

func (r *MaintenanceReport) did() bool { return r.Decayed || len(r.Summarized) > 0 }

// Maintain runs the kernel's maintenance when due: a weight decay pass
// every DecayEvery (a kernel memory carrying the decay, which the index
// replays; no memory line is rewritten), and an update of a year's
// summary.md once SummaryEvery new self, goal or external memories
// accumulated in it.
func (in *Instance) Maintain(ctx context.Context) (*MaintenanceReport, error) {
	rep := &MaintenanceReport{}
	if err := in.writable(); err != nil {
		return rep, err
	}
	now := in.opts.Now()
	last, err := in.mem.LastDecay(ctx)
	if err != nil {
		return rep, err
	}
	if last.IsZero() || now.Sub(last) >= in.opts.DecayEvery {
		hours := in.opts.HalfLife.Hours()
		_, err := in.write(memory.Memory{Author: memory.Kernel, Weight: initialWeight(memory.Kernel),
			Step: "maintain", Situation: "maintenance",
			Description: fmt.Sprintf("MAINTAIN: decayed memory weights by idle time (half-life %.0f hours); the memory files are unchanged, current weights live in the index", hours),
			Decay:       &memory.Decay{HalfLifeHours: hours}}, nil)
		if err != nil {
			return rep, err
		}
		rep.Decayed = true
	}
	years, err := in.summaryDue(ctx)
	if err != nil {
		return rep, err
	}
	for year, entries := range years {
		if err := in.summarize(ctx, year, entries, rep); err != nil {
			return rep, in.stepFailed("summarize", err)
		}
		rep.Summarized = append(rep.Summarized, year)
	}
	return rep, nil
}

var summaryHeader = regexp.MustCompile(`^<!-- lumen summary through (\S+) -->\n?`)

// splitSummary separates summary.md's marker (the id of the last memory
// summarized) from its text.
func splitSummary(text string) (through, body string) {
	if m := summaryHeader.FindStringSubmatch(text); m != nil {
		return m[1], text[len(m[0]):]
	}
	return "", text
}

func (in *Instance) summaryPath(year int) string {
	return filepath.Join(in.memoryDir(), fmt.Sprintf("%04d", year), "summary.md")
}

// summaryDue finds the years with enough new memories since their summary.
func (in *Instance) summaryDue(ctx context.Context) (map[int][]memory.Entry, error) {
	years, err := filepath.Glob(filepath.Join(in.memoryDir(), "[0-9][0-9][0-9][0-9]"))
	if err != nil {
		return nil, err
	}
	due := map[int][]memory.Entry{}
	for _, dir := range years {
		year, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		var after int64
		if data, err := os.ReadFile(in.summaryPath(year)); err == nil {
			through, _ := splitSummary(string(data))
			if es, err := in.mem.Get(ctx, through); err == nil && len(es) == 1 {
				after = es[0].Seq
			}
		}
		// Counted, then at most a batch read: a year far behind (an
		// imported instance, summaries that kept failing) costs a count at
		// each cycle, not a read of its whole backlog.
		f := memory.Filter{Authors: []string{memory.Self, memory.Goal, memory.External}, AfterSeq: after,
			SinceDay: fmt.Sprintf("%04d-01-01", year), BeforeDay: fmt.Sprintf("%04d-01-01", year+1)}
		n, err := in.mem.Count(ctx, f)
		if err != nil {
			return nil, err
		}
		if n < in.opts.SummaryEvery {
			continue
		}
		f.Limit, f.Oldest = summaryBatch, true
		if due[year], err = in.mem.List(ctx, f); err != nil {
			return nil, err
		}
	}
	return due, nil
}

type summaryAnswer struct {
	Summary string `json:"summary"`
}

func (in *Instance) summarize(ctx context.Context, year int, entries []memory.Entry, rep *MaintenanceReport) error {
	previous := ""
	if data, err := os.ReadFile(in.summaryPath(year)); err == nil {
		_, body := splitSummary(string(data))
		previous = strings.TrimSpace(body)
	}
	snap, err := in.snapshot()
	if err != nil {
		return err
	}
	vars := snap.vars(in.opts.Now())
	vars["year"] = fmt.Sprint(year)
	vars["previous"] = previous
	vars["memories"] = formatMemories(entries)
	ans, err := ask[summaryAnswer](ctx, in, "summarize", vars, &rep.Usage)
	if err != nil {
		return err
	}
	through := entries[len(entries)-1].ID
	text := fmt.Sprintf("<!-- lumen summary through %s -->\n%s\n", through, strings.TrimSpace(ans.Summary))
	if err := atomicfile.Write(in.summaryPath(year), []byte(text), 0o644); err != nil {
		return err
	}
	_, err = in.remember(memory.Kernel, "summarize", "maintenance",
		fmt.Sprintf("SUMMARIZE: updated data/memory/%04d/summary.md from %d memories (%s to %s)", year, len(entries), entries[0].ID, through),
		map[string]any{"year": year, "memories": len(entries), "through": through})
	return err
}
