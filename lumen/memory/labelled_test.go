package memory

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// agedEnd is when the generated aged instances' lives end: two years of
// memories with a decay pass every six hours before it.
var (
	agedStart = time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC)
	agedSpan  = 2 * 365 * 24 * time.Hour
	agedEnd   = agedStart.Add(agedSpan)
)

func TestEveryPlantedFactComesBackFromTwoYearsOfDecayByALexicalQuery(t *testing.T) {
	dir := t.TempDir()
	n := 20_000
	if raceEnabled {
		n = 5_000 // the race detector slows indexing ten times
	}
	facts, err := writeAged(dir, aged{memories: n, start: agedStart, span: agedSpan, seed: 11, facts: true})
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, Options{})
	ctx := context.Background()
	found := 0
	for _, f := range facts {
		got, err := s.Get(ctx, f.id)
		if err != nil || len(got) != 1 {
			t.Fatalf("planted fact %s not indexed: %v", f, err)
		}
		if got[0].Current > 0.02 {
			t.Fatalf("planted fact %s has weight %v after two years: the instance is not aged", f, got[0].Current)
		}
		r, err := s.Retrieve(ctx, Query{Text: f.lexical, Recent: 20, TopK: 10, Now: agedEnd})
		if err != nil {
			t.Fatal(err)
		}
		rank := -1
		for i, sc := range r.Relevant {
			if sc.ID == f.id {
				rank = i
			}
		}
		if rank < 0 {
			t.Errorf("query %q did not bring back %s; got:", f.lexical, f)
			for _, sc := range r.Relevant {
				t.Logf("  %.2f (rec %.2f imp %.2f rel %.2f) %s", sc.Score, sc.Recency, sc.Importance, sc.Relevance, sc.Description)
			}
			continue
		}
		found++
	}
	t.Logf("%d of %d planted facts retrieved among the top 10", found, len(facts))
}

// conceptEmbedder is a fake embeddings endpoint that knows synonyms: words
// of one concept map to one dimension, every other word to a hashed one.
// Paraphrases of a planted fact share its concept and none of its words.
var concepts = [][]string{
	{"sister", "sibling", "porto", "city", "based", "live", "lives"},
	{"hazelnuts", "nut", "allergic", "ill"},
	{"whippet", "biscuit", "hound", "dog", "breed"},
	{"passport", "travel", "document", "expires", "expire", "valid"},
	{"wifi", "password", "network", "code", "cabin", "hut"},
	{"rooibos", "coffee", "insomnia", "sleep", "drink"},
	{"lentil", "soup", "granny", "grandmother", "pulse", "broth"},
	{"bicycle", "bike", "padlock", "lock", "combination"},
	{"landlord", "okafor", "rent", "flat", "pay"},
	{"wrist", "skiing", "slopes", "injury", "broke"},
	{"poet", "szymborska", "verse", "writer"},
	{"plumber", "boiler", "pressure", "heater", "gauge"},
}

func conceptVector(text string) []float64 {
	v := make([]float64, 64)
	for _, w := range words(text, 0) {
		hit := false
		for i, c := range concepts {
			for _, cw := range c {
				if w == cw {
					v[i] += 3
					hit = true
				}
			}
		}
		if !hit {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[len(concepts)+int(h.Sum32()%uint32(64-len(concepts)))] += 1
		}
	}
	return v
}

func conceptServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, in := range req.Input {
			data = append(data, item{i, conceptVector(in)})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWithEmbeddingsParaphrasesOfPlantedFactsComeBack(t *testing.T) {
	dir := t.TempDir()
	n := 4_000
	if raceEnabled {
		n = 1_500
	}
	facts, err := writeAged(dir, aged{memories: n, start: agedStart, span: agedSpan, seed: 12, facts: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := conceptServer(t)
	ctx := context.Background()
	lexical := openStore(t, dir, Options{})
	s := openStore(t, dir, Options{Embedder: &Embedder{URL: srv.URL, Model: "concepts", Batch: 256}})
	embedEverything(t, s)
	byWords := 0
	for _, f := range facts {
		for _, w := range words2(f.text) {
			if containsWord(words(f.paraphrase, 0), w) {
				t.Fatalf("paraphrase %q shares %q with the fact: not a paraphrase", f.paraphrase, w)
			}
		}
		r, err := s.Retrieve(ctx, Query{Text: f.paraphrase, TopK: 10, Now: agedEnd})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r.Mode, ModeEmbeddings) {
			t.Fatalf("mode %q, want embeddings", r.Mode)
		}
		if !containsID(r.Relevant, f.id) {
			t.Errorf("paraphrase %q did not bring back %s", f.paraphrase, f)
		}
		if r, _ := lexical.Retrieve(ctx, Query{Text: f.paraphrase, TopK: 10, Now: agedEnd}); containsID(r.Relevant, f.id) {
			byWords++
		}
	}
	if byWords == len(facts) {
		t.Errorf("full text alone brought back every paraphrase: the test does not show what embeddings add")
	}
}

func containsWord(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

func containsID(ss []Scored, id string) bool {
	for _, s := range ss {
		if s.ID == id {
			return true
		}
	}
	return false
}

// embedEverything starts the background embedding of s's memories (a
// retrieval does, when more are without a vector than it embeds itself)
// and waits for it to end.
func embedEverything(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.Retrieve(context.Background(), Query{Text: "anything", TopK: 1}); err != nil {
		t.Fatal(err)
	}
	s.background.mu.Lock()
	done := s.background.done
	s.background.mu.Unlock()
	if done != nil {
		<-done
	}
	if p := s.embeddingProgress(); p != nil {
		t.Fatalf("the background embedding still runs: %s", p)
	}
}
