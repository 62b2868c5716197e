package lumen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/lumen/internal/dayfilestest"
	"github.com/llmkernels/kernels/lumen/memory"
)

// plantedFact is something the person told the agent once, early in a
// long life, and the question they ask about it much later, in their own
// words: it shares words with the fact, and those words come up again and
// again in later chatter.
type plantedFact struct {
	told, asked string
}

var plantedChat = []plantedFact{
	{"I play chess with my uncle every Sunday morning at the library", "what do I play with my uncle every Sunday?"},
	{"my sister's name is Priya and she teaches maths in Leeds", "what is my sister's name?"},
	{"my favourite food is my mother's mushroom risotto", "what is my favourite food?"},
	{"my first car was a yellow Fiat Panda that broke down every winter", "what was my first car?"},
	{"the dog we had when I was a kid was a collie called Pepper", "what was the dog we had when I was a kid called?"},
	{"my mother's birthday is on the ninth of October", "when is my mother's birthday?"},
	{"I am learning the cello and practise scales after work", "what am I learning to play after work?"},
	{"the book that changed my life was Middlemarch, read on a train to Glasgow", "which book changed my life?"},
	{"I am afraid of deep water since I nearly drowned at the lake as a child", "what am I afraid of since I was a child?"},
	{"my best friend from school is Tomasz, he moved to Gdansk", "who is my best friend from school?"},
	{"my allergy is to penicillin, the doctor wrote it on my card", "what is my allergy?"},
	{"the password hint for the home router is our old street name", "what is the password hint for the home router?"},
}

// Chatter is what the person says the rest of the time, often quoting
// Jordan, a friend: the same people, days and words as the facts, in
// other combinations.
var (
	chatSubjects = []string{"I", "my sister", "my brother", "my uncle", "my mother", "my best friend", "Jordan", "the kids", "my boss",
		"our neighbour", "the dog", "my friend from work"}
	chatDoings = []string{"played football", "had dinner with us", "went for a walk by the lake", "watched a film about a car", "cooked pasta",
		"read a book about the war", "learned a new song on the guitar", "talked about work", "fixed the old car", "called the doctor",
		"changed the password on the laptop", "lost the card again", "bought a birthday present", "swam in the sea", "moved to a new flat",
		"named the new cat Mango", "was afraid of the thunder", "ate too much food", "asked about school", "played a game of cards",
		"took the train to town", "painted the street door", "forgot the name of the film", "tried a new recipe for dinner"}
	chatTimes = []string{"every Sunday", "on Saturday morning", "this morning", "last winter", "after work", "at school", "at the library",
		"yesterday evening", "for the first time", "every week", "at home", "when I was a kid", "on my birthday", "in the morning"}
	chatTails = []string{"", "", "and it was fun", "which was my favourite part", "and I was tired", "and the kids loved it",
		"but the weather was bad", "and we laughed a lot", "and nobody noticed", "and I told Jordan about it"}
)

// chatVerbs and chatThings make the long tail of chatter: most of what a
// person says is about things they mention once or twice.
var (
	chatVerbs  = strings.Fields("found fixed bought lost painted sold cleaned borrowed moved opened tried liked")
	chatThings = func() []string {
		r := rand.New(rand.NewPCG(9, 9))
		out := make([]string, 3000)
		for i := range out {
			b := make([]byte, 4+r.IntN(6))
			for j := range b {
				b[j] = byte('a' + r.IntN(26))
			}
			out[i] = string(b)
		}
		return out
	}()
)

// chatLine makes one line of chatter.
func chatLine(r *rand.Rand) string {
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	doing := pick(chatVerbs) + " the " + pick(chatThings)
	if r.IntN(3) == 0 {
		doing = pick(chatDoings)
	}
	when := ""
	if r.IntN(2) == 0 {
		when = pick(chatTimes)
	}
	s := strings.Join(strings.Fields(pick(chatSubjects)+" "+doing+" "+when+" "+pick(chatTails)), " ")
	if r.IntN(3) == 0 {
		return "Jordan says: " + s
	}
	return s
}

// chatInstance describes a generated instance shaped like a long-lived
// one: chat turns as the action loop writes them (the input, then THINK,
// DECIDE, the goal pursued, ACT, RECORD, TRIGGER quoting it), goal cycles,
// explore findings and a decay pass every six hours.
type chatInstance struct {
	memories int // about this many lines
	seed     uint64
}

// writeChatInstance writes the day files of root's instance (and a value
// too light to act on, idleness) and returns the ids of the planted
// facts' memories, in plantedChat's order.
func writeChatInstance(root string, c chatInstance) ([]string, error) {
	values, _ := json.Marshal([]Value{{"idleness", 0.1, ValueActive}})
	if err := os.WriteFile(filepath.Join(root, "data", "values.json"), values, 0o644); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(c.seed, c.seed+1))
	files := dayfilestest.New(filepath.Join(root, "data", "memory"))
	count := 0
	write := func(m memory.Memory) (string, error) {
		m.ID = memory.NewID(m.Timestamp)
		count++
		return m.ID, files.Write(memory.Day(m.Timestamp), m)
	}
	turns := c.memories / 7
	step := 365 * 24 * time.Hour / time.Duration(turns)
	ts := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	nextDecay := ts.Add(6 * time.Hour)
	// Each fact is told at the first chat turn from a random one in the
	// first quarter of the instance's life on.
	plantAt := make([]int, len(plantedChat))
	for i := range plantAt {
		plantAt[i] = turns/20 + r.IntN(turns/5)
	}
	facts := make([]string, len(plantedChat))
	due := func(turn int) (int, bool) {
		for f, t := range plantAt {
			if t <= turn && facts[f] == "" {
				return f, true
			}
		}
		return 0, false
	}
	var recent []string
	goals := []string{"learn to bake bread", "read more novels", "keep a diary of the garden"}
	for turn := 0; count < c.memories; turn++ {
		ts = ts.Add(step)
		for !nextDecay.After(ts) {
			if _, err := write(memory.Memory{Timestamp: nextDecay, Author: memory.Kernel, Weight: 0.3, Step: "maintain", Situation: "maintenance",
				Description: "MAINTAIN: decayed memory weights", Decay: &memory.Decay{HalfLifeHours: 168}}); err != nil {
				return nil, err
			}
			nextDecay = nextDecay.Add(6 * time.Hour)
		}
		at := func(k int) time.Time { return ts.Add(time.Duration(k) * time.Second) }
		var used []string
		for j := 0; j < 3 && len(recent) > 0; j++ {
			used = append(used, recent[r.IntN(len(recent))])
		}
		switch kind := r.IntN(10); {
		case kind < 6: // a chat turn
			input := chatLine(r)
			weight := 0.3 + 0.6*r.Float64()
			if strings.HasPrefix(input, "Jordan says") {
				weight = 0.9
			}
			f, planted := due(turn)
			if planted {
				input, weight = plantedChat[f].told, 0.7
			}
			id, err := write(memory.Memory{Timestamp: at(0), Author: memory.External, Weight: weight, Step: "chat", Situation: "chat", Description: input})
			if err != nil {
				return nil, err
			}
			if planted {
				facts[f] = id
			}
			recent = append(recent, id)
			sit := "action loop: external input: " + input
			reply := "I hear you: " + chatLine(r)
			for k, m := range []memory.Memory{
				{Author: memory.Kernel, Weight: 0.3, Step: "think", Situation: sit, Used: used,
					Description: "THINK: loaded soul.md, 4 values, 3 goals, 30 memories. Situation: the person talks about their day. Candidates: #1 reply (skill chat) → predicted: they feel heard"},
				{Author: memory.Kernel, Weight: 0.3, Step: "decide", Situation: sit, Description: "DECIDE: chose #1 \"reply\" via chat; B=0.720"},
				{Author: memory.Goal, Weight: 0.6, Step: "decide", Situation: sit, Description: "Pursuing goal \"get to know the person\" by reply (B=0.720)."},
				{Author: memory.Kernel, Weight: 0.3, Step: "act", Situation: sit, Description: "ACT: invoked skill chat; shown to the user: " + reply},
				{Author: memory.Kernel, Weight: 0.3, Step: "record", Situation: sit, Description: "RECORD: did \"reply\" via chat. Outcome: shown. Delta 0.10"},
				{Author: memory.Kernel, Weight: 0.3, Step: "trigger", Situation: "reflection trigger after the action loop", Description: "TRIGGER: none fired; next cycle"},
			} {
				m.Timestamp = at(k + 1)
				if _, err := write(m); err != nil {
					return nil, err
				}
			}
		case kind < 9: // a goal cycle
			g := goals[r.IntN(len(goals))]
			sit := fmt.Sprintf("action loop: pursue goal %q (weight 0.70, working)", g)
			id, err := write(memory.Memory{Timestamp: at(0), Author: memory.Goal, Weight: 0.7, Step: "select", Situation: "action loop",
				Description: fmt.Sprintf("Selected goal %q (weight 0.70, working) to pursue: the highest-weight active goal.", g)})
			if err != nil {
				return nil, err
			}
			recent = append(recent, id)
			for k, m := range []memory.Memory{
				{Author: memory.Kernel, Weight: 0.3, Step: "think", Situation: sit, Used: used, Description: "THINK: loaded soul.md. Candidates: #1 note progress (skill notes)"},
				{Author: memory.Kernel, Weight: 0.3, Step: "decide", Situation: sit, Description: "DECIDE: chose #1 \"note progress\" via notes; B=0.500"},
				{Author: memory.Kernel, Weight: 0.3, Step: "record", Situation: sit, Description: "RECORD: did \"note progress\". Outcome: noted. Delta 0.20"},
			} {
				m.Timestamp = at(k + 1)
				if _, err := write(m); err != nil {
					return nil, err
				}
			}
		default: // an explore cycle
			id, err := write(memory.Memory{Timestamp: at(0), Author: memory.Self, Weight: 0.5 + 0.4*r.Float64(), Step: "explore", Situation: "explore: what do people enjoy",
				Description: "EXPLORE found: " + chatLine(r)})
			if err != nil {
				return nil, err
			}
			recent = append(recent, id)
		}
		if len(recent) > 300 {
			recent = recent[len(recent)-300:]
		}
	}
	if err := files.Close(); err != nil {
		return nil, err
	}
	return facts, nil
}

// recallScript answers n chat turns: THINK proposes a reply, DECIDE aligns
// it with a value too light to act on (M < 0.2: no skill runs), TRIGGER
// finds nothing.
func recallScript(t testing.TB, n int) *script.Provider {
	text := func(step string, v any) map[string]any {
		data, _ := json.Marshal(v)
		return map[string]any{"match": map[string]string{"system_contains": "step: " + step},
			"response": map[string]any{"content": []map[string]any{{"type": "text", "text": string(data)}}}}
	}
	importance := 0.9
	var entries []any
	for i := 0; i < n; i++ {
		entries = append(entries,
			text("think", thought{Situation: "the person asks about something they told me", InputImportance: &importance,
				Candidates: []Candidate{{Action: "answer from memory", Skill: "chat", Input: json.RawMessage(`{"message":"Let me remember."}`),
					Predicted: "they get their answer", Counterfactual: "they would have to tell me again"}}}),
			text("decide", decision{Alignments: []Alignment{{Candidate: 1, Values: []string{"idleness"}, Goals: []string{}, Direct: true}}, Preference: []int{1}}),
			text("trigger", triggerAnswer{TensionValues: []string{}}))
	}
	data, _ := json.Marshal(map[string]any{"responses": entries})
	s, err := script.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return script.New(s)
}

// openRecall opens the generated instance at root for n scripted chat
// turns, its clock a day after the last memory.
func openRecall(t testing.TB, root string, n int) *Instance {
	in, err := Open(root, Options{Client: &llm.Client{Provider: recallScript(t, n)}, Model: "scripted", ReflectEvery: 1 << 30,
		Now: func() time.Time { return time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC) }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// askPlanted asks the planted question i in a chat turn and reports
// whether THINK got the memory holding its fact among the relevant ones.
func askPlanted(ctx context.Context, in *Instance, i int, facts []string) (bool, error) {
	rep, err := in.Chat(ctx, plantedChat[i].asked)
	if err != nil {
		return false, err
	}
	if rep.Verdict == nil || rep.Verdict.Outcome != OutcomeSkip {
		return false, fmt.Errorf("turn %d: %+v, want DECIDE to skip", i, rep)
	}
	think, err := in.mem.List(ctx, memory.Filter{Authors: []string{memory.Kernel}, Step: "think", Limit: 1})
	if err != nil || len(think) != 1 {
		return false, fmt.Errorf("the turn's THINK memory: %v", err)
	}
	var d struct {
		Relevant []string `json:"relevant"`
	}
	if err := json.Unmarshal(think[0].Data, &d); err != nil {
		return false, err
	}
	return slices.Contains(d.Relevant, facts[i]), nil
}

func TestPlantedFactsComeBackWhenThePersonAsksInTheirOwnWords(t *testing.T) {
	n := 20_000
	if raceEnabled {
		n = 5_000
	}
	root := t.TempDir()
	if _, err := Init(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	facts, err := writeChatInstance(root, chatInstance{memories: n, seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	in := openRecall(t, root, len(plantedChat))
	defer in.Close()
	ctx := context.Background()
	for i, f := range plantedChat {
		ok, err := askPlanted(ctx, in, i, facts)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("asked %q: THINK did not get %q among the relevant memories", f.asked, f.told)
		}
	}
}

// chatFixture is a generated instance of 100,000 memories shaped like a
// long-lived one (writeChatInstance), written once per test binary.
var chatFixture struct {
	once  sync.Once
	root  string
	facts []string
	err   error
}

func buildChat100k(b *testing.B) (string, []string) {
	chatFixture.once.Do(func() {
		chatFixture.root, chatFixture.err = os.MkdirTemp("", "lumen-chat-")
		if chatFixture.err == nil {
			_, chatFixture.err = Init(context.Background(), chatFixture.root)
		}
		if chatFixture.err == nil {
			chatFixture.facts, chatFixture.err = writeChatInstance(chatFixture.root, chatInstance{memories: 100_000, seed: 5})
		}
	})
	if chatFixture.err != nil {
		b.Fatal(chatFixture.err)
	}
	return chatFixture.root, chatFixture.facts
}
