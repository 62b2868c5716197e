package memory

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmkernels/kernels/lumen/internal/dayfilestest"
)

// aged describes a generated instance that has lived a long time: chat,
// reflection and kernel memories spread over years, a decay pass every six
// hours, steps that use earlier memories, and planted facts with later
// distractors.
type aged struct {
	memories int       // memories besides the decay passes
	start    time.Time // first memory
	span     time.Duration
	seed     uint64
	facts    bool // plant the labelled facts
}

// fact is a planted memory and the questions that should bring it back.
type fact struct {
	text       string
	lexical    string // shares words with text
	paraphrase string // shares none of its distinctive words
	id         string
}

// plantedFacts are things a user once said, early in the instance's life.
// Each has distractors: later memories that share one of its words.
var plantedFacts = []struct{ text, lexical, paraphrase string }{
	{"my sister Ines lives in Porto and teaches violin", "where does my sister Ines live", "which city is my sibling based in"},
	{"I am allergic to hazelnuts, keep that in mind for recipes", "am I allergic to hazelnuts", "which nut makes me ill"},
	{"our dog Biscuit is a grey whippet who hates thunderstorms", "what breed is Biscuit the whippet", "what kind of hound do we own"},
	{"my passport expires in March, renew it before the Lisbon trip", "when does my passport expire", "when is my travel document no longer valid"},
	{"the wifi password at the cabin is written under the kettle", "where is the cabin wifi password", "where do we keep the network code at the hut"},
	{"I switched from coffee to rooibos because of insomnia", "why did I switch to rooibos", "what do I drink now as I sleep badly"},
	{"grandmother's lentil soup recipe uses smoked paprika and cumin", "what is in grandmother's lentil soup", "how did granny make her pulse broth"},
	{"my bicycle lock combination is the year my daughter was born", "what is my bicycle lock combination", "how do I open the padlock on my bike"},
	{"the landlord Mr Okafor wants the rent transferred by the fifth", "when does Mr Okafor want the rent", "by which day must I pay for the flat"},
	{"I broke my left wrist skiing in Andorra in 2019", "when did I break my wrist skiing", "what injury did I get on the slopes"},
	{"my favourite poet is Wisława Szymborska, especially her late work", "who is my favourite poet Szymborska", "which writer of verse do I love most"},
	{"the plumber said the boiler pressure should stay near 1.5 bar", "what should the boiler pressure be", "what level must the heater gauge show"},
}

// writeAged writes the instance's day files under dir and returns the
// planted facts with their ids.
func writeAged(dir string, a aged) ([]fact, error) {
	r := rand.New(rand.NewPCG(a.seed, a.seed+1))
	words := vocabulary(rand.New(rand.NewPCG(1, 2)))
	files := dayfilestest.New(dir)
	write := func(m Memory) error {
		if m.ID == "" {
			m.ID = NewID(m.Timestamp)
		}
		return files.Write(Day(m.Timestamp), m)
	}
	step := a.span / time.Duration(a.memories)
	nextDecay := a.start.Add(6 * time.Hour)
	var facts []fact
	plantAt := map[int]int{} // memory number → fact
	distract := map[int]int{}
	if a.facts {
		for i := range plantedFacts {
			// Facts in the first fifth of the instance's life; each has
			// thirty distractors in the last twentieth, sharing one or two
			// of its words: the sister, the dog, the boiler come up again
			// lately, and those memories have not faded yet.
			plantAt[r.IntN(a.memories/5)] = i
			for j := 0; j < 30; j++ {
				distract[a.memories*19/20+r.IntN(a.memories/20)] = i
			}
			facts = append(facts, fact{text: plantedFacts[i].text, lexical: plantedFacts[i].lexical, paraphrase: plantedFacts[i].paraphrase})
		}
	}
	authors := []string{Kernel, Kernel, Kernel, Self, Goal, External}
	var recent []string
	ts := a.start
	for i := 0; i < a.memories; i++ {
		ts = ts.Add(step)
		for !nextDecay.After(ts) {
			if err := write(Memory{Timestamp: nextDecay, Author: Kernel, Weight: 0.3, Step: "maintain", Situation: "maintenance",
				Description: "MAINTAIN: decayed memory weights", Decay: &Decay{HalfLifeHours: 168}}); err != nil {
				return nil, err
			}
			nextDecay = nextDecay.Add(6 * time.Hour)
		}
		m := Memory{ID: NewID(ts), Timestamp: ts, Author: authors[r.IntN(len(authors))], Weight: 0.3 + 0.6*r.Float64(),
			Situation: sentence(r, words, 6), Description: sentence(r, words, 15+r.IntN(30))}
		if f, ok := plantAt[i]; ok {
			m.Author, m.Weight, m.Situation, m.Description = External, 0.8, "chat", plantedFacts[f].text
			facts[f].id = m.ID
		} else if f, ok := distract[i]; ok {
			fw := words2(plantedFacts[f].text)
			m.Description = sentence(r, words, 10) + " " + fw[r.IntN(len(fw))] + " " + sentence(r, words, 5) + " " + fw[r.IntN(len(fw))] + " " + sentence(r, words, 5)
		}
		if m.Author == Kernel && r.IntN(3) == 0 && len(recent) > 0 {
			m.Step = "think"
			for j := 0; j < 20; j++ {
				m.Used = append(m.Used, recent[r.IntN(len(recent))])
			}
		}
		if err := write(m); err != nil {
			return nil, err
		}
		recent = append(recent, m.ID)
		if len(recent) > 200 {
			recent = recent[1:]
		}
	}
	if err := files.Close(); err != nil {
		return nil, err
	}
	return facts, nil
}

// words2 are the distinctive words of a planted fact (four letters or more).
func words2(text string) []string {
	var out []string
	for _, w := range words(text, 0) {
		if len(w) >= 4 {
			out = append(out, w)
		}
	}
	return out
}

func (f fact) String() string { return fmt.Sprintf("%q (%s)", f.text, f.id) }
