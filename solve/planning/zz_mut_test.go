package planning

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

func leaves(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			leaves(vv, path+"."+k, out)
		}
	case []any:
		for i, vv := range x {
			leaves(vv, fmt.Sprintf("%s[%d]", path, i), out)
		}
	default:
		*out = append(*out, path)
	}
}

func mutateAt(v any, path []string, i int) any {
	// path elements: key or [n]
	if i == len(path) {
		switch x := v.(type) {
		case float64:
			return x*1.1 + 1
		case string:
			return x + "x"
		case bool:
			return !x
		case nil:
			return 1.0
		}
		return v
	}
	p := path[i]
	if strings.HasPrefix(p, "[") {
		var n int
		fmt.Sscanf(p, "[%d]", &n)
		a := v.([]any)
		a[n] = mutateAt(a[n], path, i+1)
		return a
	}
	m := v.(map[string]any)
	m[p] = mutateAt(m[p], path, i+1)
	return m
}

func split(path string) []string {
	var out []string
	for _, part := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		for {
			j := strings.Index(part, "[")
			if j < 0 {
				out = append(out, part)
				break
			}
			if j > 0 {
				out = append(out, part[:j])
			}
			k := strings.Index(part, "]")
			out = append(out, part[j:k+1])
			part = part[k+1:]
			if part == "" {
				break
			}
		}
	}
	return out
}

func TestZZMutations(t *testing.T) {
	for _, name := range []string{"document_classification.json", "trading_strategy.json", "second_round.json"} {
		var goal string
		switch name {
		case "swe_agent.json":
			goal = sweGoal
		default:
			goal = os.Getenv("GOAL_" + strings.TrimSuffix(name, ".json"))
		}
		if goal == "" {
			continue
		}
		p, err := Make(context.Background(), openStore(t), scripted(t, name), Request{Goal: goal, Model: "claude-opus-4-6", Retries: 2})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(p)
		var doc any
		json.Unmarshal(data, &doc)
		var ls []string
		leaves(doc, "", &ls)
		sort.Strings(ls)
		var passed []string
		for _, l := range ls {
			var d any
			json.Unmarshal(data, &d)
			d = mutateAt(d, split(l), 0)
			b, _ := json.Marshal(d)
			var q Plan
			if err := json.Unmarshal(b, &q); err != nil {
				continue
			}
			if Failed(Check(context.Background(), &q, CheckOptions{})) == 0 {
				passed = append(passed, l)
			}
		}
		t.Logf("%s: %d leaves, %d mutations pass:\n%s", name, len(ls), len(passed), strings.Join(passed, "\n"))
	}
}
