package script

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"time"

	"github.com/llmkernels/kernels/llm"
)

// promptCache simulates the API's prompt cache, so that the usage the
// fakes estimate shows what caching would read and write (see
// docs/scripts.md#prompt-caching). The rules it keeps:
//
//   - The prompt is a run of blocks in the API's order: each tool, each
//     system block, then each message's content blocks. A prefix ends at a
//     block; it is identified by the model and the JSON value of every
//     block up to it (members in name order: the value, not its spelling),
//     without their cache_control (moving a breakpoint changes no prefix). tool_choice and thinking count before the first
//     message: changing them misses the message prefixes, not tools and
//     system.
//   - A breakpoint is a block with cache_control, or, with the top-level
//     cache_control, the last cacheable block (the last message's last
//     block that is not thinking; else the last system block; else the last
//     tool). A nested block's breakpoint (inside a tool result) counts at
//     its block.
//   - Reading: each breakpoint looks back over at most 20 blocks, itself
//     included, for a prefix cached and not expired; the longest found is
//     read, and its lifetime starts again.
//   - Writing: the prefix at each breakpoint after the one read is written
//     when it is at least the model's minimum (llm.MinCacheTokens; 1,024
//     for a model the table has none for), for the breakpoint's ttl (5
//     minutes, or 1 hour). Shorter prefixes are silently not cached.
//   - Tokens are estimated as everywhere in the fakes: the request is its
//     JSON bytes / 4, rounded up, and a prefix is the JSON bytes of the
//     prompt as sent up to the end of its last block / 4: the blocks with
//     the structure between them (a message's role and the brackets and
//     commas that hold the lists), since the API caches the whole prompt
//     before a breakpoint, not only the content of its blocks. Cache reads
//     are the prefix read, writes the tokens from there to the last prefix
//     written, and input tokens the rest: what follows the last breakpoint
//     (and the request's settings, model and max_tokens).
type promptCache struct {
	entries map[[32]byte]cacheEntry
}

type cacheEntry struct {
	expires time.Time
	ttl     time.Duration
}

// lookback is how many blocks a breakpoint looks back over for a prefix
// already cached, itself included.
const lookback = 20

// defaultMinCacheTokens is the minimum for a model the table gives none.
const defaultMinCacheTokens = 1024

// prefixBlock is one block of a prompt: the identity of the prefix ending
// with it, the prefix's size, and the breakpoint on it, if any.
type prefixBlock struct {
	id         [32]byte
	bytes      int
	breakpoint *llm.CacheControl
}

// use answers req at now: what it reads from the cache, writes to it, and
// leaves as input, out of total estimated input tokens. It records the
// writes and refreshes the prefix read.
func (c *promptCache) use(req *llm.Request, total int, now time.Time) llm.Usage {
	blocks := prompt(req)
	read := -1
	for i, b := range blocks {
		if b.breakpoint == nil {
			continue
		}
		for j := i; j >= 0 && j > i-lookback && j > read; j-- {
			if e, ok := c.entries[blocks[j].id]; ok && now.Before(e.expires) {
				read = j
				break
			}
		}
	}
	var u llm.Usage
	if read >= 0 {
		e := c.entries[blocks[read].id]
		e.expires = now.Add(e.ttl)
		c.entries[blocks[read].id] = e
		u.CacheReadInputTokens = tokens(blocks[read].bytes)
	}
	minimum, ok := llm.MinCacheTokens(req.Model)
	if !ok {
		minimum = defaultMinCacheTokens
	}
	written := u.CacheReadInputTokens
	for i := read + 1; i < len(blocks); i++ {
		b := blocks[i]
		if b.breakpoint == nil || tokens(b.bytes) < minimum {
			continue
		}
		ttl := 5 * time.Minute
		if b.breakpoint.TTL == "1h" {
			ttl = time.Hour
		}
		if c.entries == nil {
			c.entries = map[[32]byte]cacheEntry{}
		}
		c.entries[b.id] = cacheEntry{expires: now.Add(ttl), ttl: ttl}
		n := tokens(b.bytes) - written
		written = tokens(b.bytes)
		u.CacheCreationInputTokens += n
		if ttl == time.Hour {
			u.CacheCreation.Ephemeral1hInputTokens += n
		} else {
			u.CacheCreation.Ephemeral5mInputTokens += n
		}
	}
	u.InputTokens = max(total-written, 0)
	return u
}

func tokens(bytes int) int { return estimateTokens(bytes) }

// prompt is req's blocks in the API's order, with their prefix identities.
func prompt(req *llm.Request) []prefixBlock {
	var blocks []prefixBlock
	id := sha256.Sum256([]byte("model " + req.Model))
	size := 0
	// add appends the block v, sent as sent (its JSON as the request
	// has it, cache_control included) after the structure opening it.
	add := func(kind string, v, sent any, structure string, bp *llm.CacheControl) {
		data := canonical(v)
		h := sha256.New()
		h.Write(id[:])
		h.Write([]byte(kind))
		h.Write(data)
		h.Sum(id[:0])
		size += len(structure) + wireSize(sent)
		blocks = append(blocks, prefixBlock{id: id, bytes: size, breakpoint: bp})
	}
	for i, t := range req.Tools {
		bp, sent := t.CacheControl, t
		t.CacheControl = nil
		add("tool", t, sent, listSeparator(i, `"tools":[`), bp)
	}
	for i, s := range req.System {
		bp, sent := s.CacheControl, s
		s.CacheControl = nil
		add("system", s, sent, listSeparator(i, `"system":[`), bp)
	}
	// What the message prefixes depend on besides the messages.
	settings := struct {
		ToolChoice *llm.ToolChoice `json:"tool_choice"`
		Thinking   *llm.Thinking   `json:"thinking"`
	}{req.ToolChoice, req.Thinking}
	head, _ := json.Marshal(settings) // plain structs always marshal
	for i, m := range req.Messages {
		plain := (&llm.Request{Messages: []llm.Message{m}}).WithoutCache().Messages[0]
		for j, b := range plain.Content {
			kind, structure := "block", ","
			if j == 0 {
				kind = "message " + m.Role
				structure = `]},{"role":` + strconv.Quote(m.Role) + `,"content":[`
				if i == 0 {
					kind = string(head) + kind
					structure = `"messages":[` + structure[3:]
				}
			}
			add(kind, b, m.Content[j], structure, breakpointIn(m.Content[j]))
		}
	}
	if req.CacheControl != nil {
		if last := lastCacheable(req, blocks); last >= 0 && blocks[last].breakpoint == nil {
			blocks[last].breakpoint = req.CacheControl
		}
	}
	return blocks
}

// listSeparator is the JSON before the i-th element of a list: the list's
// opening, or a comma.
func listSeparator(i int, opening string) string {
	if i == 0 {
		return opening
	}
	return ","
}

// wireSize is the size of v's JSON as json.Marshal writes it, the way the
// request's size is measured.
func wireSize(v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}

// canonical is v's JSON with its objects' members in name order and no
// escaping of <, > and &: the same value always gives the same bytes,
// as the API reads a block as its value, not its spelling.
func canonical(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		return []byte(err.Error()) // still a block; it cannot match a real one
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return data
	}
	out, err := llm.MarshalWire(value)
	if err != nil {
		return data
	}
	return out
}

// breakpointIn is the cache_control on b or on a block inside it.
func breakpointIn(b llm.ContentBlock) *llm.CacheControl {
	if b.CacheControl != nil {
		return b.CacheControl
	}
	for _, inner := range b.Content.Blocks {
		if cc := breakpointIn(inner); cc != nil {
			return cc
		}
	}
	return nil
}

// lastCacheable is the index in blocks of the block automatic caching puts
// its breakpoint on, or -1.
func lastCacheable(req *llm.Request, blocks []prefixBlock) int {
	n := len(blocks)
	for i := len(req.Messages) - 1; i >= 0; i-- {
		content := req.Messages[i].Content
		for j := len(content) - 1; j >= 0; j-- {
			n--
			if t := content[j].Type; t != llm.BlockThinking && t != llm.BlockRedactedThinking {
				return n
			}
		}
	}
	return len(req.Tools) + len(req.System) - 1
}
