package anthropic_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/anthropic"
	"github.com/llmkernels/kernels/llm/llmtest"
	"github.com/llmkernels/kernels/llm/script"
)

// BenchmarkTimeToFirstWords streams a 600-character answer (44 events)
// from the strict fake, which waits 10 ms after each event as a model
// generating tokens does, through the SDK and the assembler, and reports
// when the first words reached OnDelta and when the whole answer was
// back. Target: the first words within 10% of the whole answer's time
// plus 100 ms.
//
//	go test ./llm/anthropic -run '^$' -bench TimeToFirstWords
func BenchmarkTimeToFirstWords(b *testing.B) {
	text := strings.Repeat("The answer arrives word by word. ", 19)[:600]
	entry := `{"content":[{"type":"text","text":"` + text + `"}]}`
	s, err := script.Parse([]byte(`{"responses":[` + strings.TrimSuffix(strings.Repeat(entry+",", b.N), ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	srv := llmtest.NewServer(s)
	defer srv.Close()
	srv.SetEventDelay(10 * time.Millisecond)
	p, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	var first, whole time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		var firstAt time.Duration
		req := &llm.Request{Model: model, MaxTokens: 1000, Messages: []llm.Message{llm.UserText("Hi")},
			OnDelta: func(d llm.Delta) {
				if d.Kind == llm.DeltaText && firstAt == 0 {
					firstAt = time.Since(start)
				}
			}}
		resp, err := p.Messages(context.Background(), req)
		if err != nil || resp.Text() != text {
			b.Fatalf("%v", err)
		}
		first += firstAt
		whole += time.Since(start)
	}
	b.StopTimer()
	first, whole = first/time.Duration(b.N), whole/time.Duration(b.N)
	b.ReportMetric(float64(first.Milliseconds()), "first-ms")
	b.ReportMetric(float64(whole.Milliseconds()), "whole-ms")
	if limit := whole/10 + 100*time.Millisecond; first > limit {
		b.Errorf("the first words came after %s of %s: later than %s", first, whole, limit)
	}
}
