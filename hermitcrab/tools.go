package hermitcrab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// ptcCaller is the code-execution tool version that may call the read-only
// tools (programmatic tool calling).
const ptcCaller = "code_execution_20250825"

// Server tools: run by the provider, declared with their versioned types.
var serverTools = []llm.Tool{
	{Type: "web_search_20260209", Name: "web_search", Options: map[string]json.RawMessage{"max_uses": json.RawMessage("5")}},
	{Type: "web_fetch_20260209", Name: "web_fetch", Options: map[string]json.RawMessage{"max_uses": json.RawMessage("10")}},
	{Type: ptcCaller, Name: "code_execution"},
}

// browserTools are run by the page of an attached browser.
var browserTools = []string{"clipboard_write", "clipboard_read", "speak", "notify", "download", "open_tab", "get_geolocation",
	"listen", "fs_pick_directory", "fs_list", "fs_read", "fs_write", "fs_mkdir", "fs_delete"}

// DefaultTools is the tool set active until the LLM changes it with
// set_tools: block, pscale, self and utility tools. Browser tools are
// added by set_tools when a page is attached.
var DefaultTools = []string{
	"block_read", "block_write", "block_list", "block_create",
	"bsp", "resolve", "write_entry", "compress",
	"get_source", "recompile", "set_tools",
	"call_llm", "get_datetime", "fetch_url",
	"web_search", "web_fetch", "code_execution",
}

// readOnlyTools may be called by code execution when Options.PTC is on.
var readOnlyTools = []string{"block_read", "block_list", "bsp", "resolve", "get_datetime", "get_source"}

// fetchLimit is where fetch_url truncates, as the original proxy did.
const fetchLimit = 50_000

const toolsSetting = "tools"

// schema builds an object schema from property JSON and required names.
func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}

const (
	nameProp  = `"name":{"type":"string","description":"block name"}`
	pathProp  = `"path":{"type":"string","description":"pscale address as a string, e.g. \"0.12\" (digits are steps from the root; dots are only reading marks)"}`
	pathsNote = "Addresses are strings: \"0.10\" walks 0,1,0 where the number 0.10 would lose its last digit."
)

// catalogue returns every client tool the kernel can run, by name.
func (k *Kernel) catalogue(c *callState) map[string]llm.ToolHandler {
	h := map[string]llm.ToolHandler{}
	add := func(name, desc string, in json.RawMessage, run llm.ToolFunc) {
		h[name] = llm.ToolHandler{Tool: llm.Tool{Name: name, Description: desc, InputSchema: in}, Run: run}
	}
	add("block_read", "Read a block: the whole block, or with path the node there and the text of its children. "+pathsNote,
		schema(nameProp+","+pathProp, "name"), k.toolBlockRead)
	add("block_write", "Write text at a path in a block, creating the nodes on the way; an existing branch keeps its children. "+pathsNote,
		schema(nameProp+","+pathProp+`,"content":{"type":"string"}`, "name", "path", "content"), jsonTool(k.toolBlockWrite))
	add("block_list", "List every block's name with its pscale-0 text.", schema(""), jsonTool(k.toolBlockList))
	add("block_create", "Create a new block with its pscale-0 text.",
		schema(nameProp+`,"pscale0":{"type":"string","description":"the block's root text"},"place":{"type":"integer","minimum":1,"description":"digits before the decimal point; default 1"}`, "name", "pscale0"),
		jsonTool(k.toolBlockCreate))
	add("bsp", "Block, spindle, point: the whole block; with spindle the chain of texts from the root to that node; with point the one node at that pscale on the chain.",
		schema(nameProp+`,"spindle":{"type":"string","description":"address, e.g. \"0.12\""},"point":{"type":"integer","description":"pscale level on the spindle, e.g. -1"}`, "name"),
		jsonTool(k.toolBSP))
	add("resolve", "Phrase-level view of a block: every node's text down to depth (default 3).",
		schema(nameProp+`,"depth":{"type":"integer","minimum":1}`, "name"), jsonTool(k.toolResolve))
	add("write_entry", "Add an entry at the next free digit (1-9) under path (default \"0\"). When all nine are taken, call compress first. "+pathsNote,
		schema(nameProp+","+pathProp+`,"content":{"type":"string"}`, "name", "content"), jsonTool(k.toolWriteEntry))
	add("compress", "When digits 1-9 under path are all taken: decide (with the light tier) whether they form a summary or an emergence and write it as that node's own text. The nine entries stay.",
		schema(nameProp+","+pathProp, "name", "path"), jsonTool(k.toolCompress))
	add("get_source", "The JSX source of the current shell.", schema(""), k.toolGetSource)
	add("recompile", "Build your interface: give the whole JSX source of one React component. The kernel stores and compiles it; compile errors come back to you. This ends your turn when it succeeds.",
		schema(`"jsx":{"type":"string","description":"the complete JSX source"}`, "jsx"), func(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
			return k.toolRecompile(ctx, c, in)
		})
	add("set_tools", "Choose your active tools by name for the calls that follow (server tools included). Unknown names are refused with the list of known ones.",
		schema(`"tools":{"type":"array","items":{"type":"string"}}`, "tools"), jsonTool(k.toolSetTools))
	add("call_llm", "Delegate a task to another LLM instance: one call, no tools, a minimal system prompt. model \"fast\" uses the light tier, \"default\" the deep tier.",
		schema(`"prompt":{"type":"string"},"model":{"type":"string","enum":["fast","default"]},"system":{"type":"string"}`, "prompt"),
		k.toolCallLLM)
	add("get_datetime", "Current date, time, timezone and unix timestamp.", schema(""), jsonTool(k.toolDatetime))
	add("fetch_url", "Fetch a URL (GET) when the native web_fetch fails; the text is truncated at 50,000 characters. Loopback and private addresses are refused unless allowed.",
		schema(`"url":{"type":"string"}`, "url"), k.toolFetchURL)
	add("web_request", "Send an HTTP request (any method) from the kernel: POST, PUT, PATCH, DELETE to an API. Loopback and private addresses are refused unless allowed; the answer is truncated at 50,000 characters.",
		schema(`"method":{"type":"string"},"url":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}},"body":{"type":"string"}`, "url"),
		k.toolWebRequest)
	for _, name := range browserTools {
		add(name, browserDescriptions[name], browserSchemas[name], k.browserTool(name))
	}
	if k.opts.PTC {
		for _, name := range readOnlyTools {
			t := h[name]
			t.Tool.AllowedCallers = []string{ptcCaller}
			h[name] = t
		}
	}
	return h
}

var browserDescriptions = map[string]string{
	"clipboard_write":   "Write text to the person's clipboard (needs the web shell page open).",
	"clipboard_read":    "Read text from the person's clipboard (needs the web shell page open and permission).",
	"speak":             "Speak text aloud in the page (Web Speech API).",
	"notify":            "Show a browser notification.",
	"download":          "Offer a file download in the page.",
	"open_tab":          "Open a URL in a new browser tab.",
	"get_geolocation":   "The person's location, if they allow it.",
	"listen":            "Listen through the microphone (speech recognition in the page) and return what the person said.",
	"fs_pick_directory": "Ask the person to pick a local folder (they must click to allow it); the fs_ tools then work inside it.",
	"fs_list":           "List a folder inside the picked directory (path relative to it; \"\" is its root).",
	"fs_read":           "Read a text file inside the picked directory.",
	"fs_write":          "Write a text file inside the picked directory, creating or replacing it.",
	"fs_mkdir":          "Create a folder inside the picked directory.",
	"fs_delete":         "Delete a file or empty folder inside the picked directory.",
}

var browserSchemas = map[string]json.RawMessage{
	"clipboard_write":   schema(`"text":{"type":"string"}`, "text"),
	"clipboard_read":    schema(""),
	"speak":             schema(`"text":{"type":"string"}`, "text"),
	"notify":            schema(`"title":{"type":"string"},"body":{"type":"string"}`, "title"),
	"download":          schema(`"filename":{"type":"string"},"content":{"type":"string"},"mime_type":{"type":"string"}`, "filename", "content"),
	"open_tab":          schema(`"url":{"type":"string"}`, "url"),
	"get_geolocation":   schema(""),
	"listen":            schema(`"lang":{"type":"string","description":"e.g. en-GB"},"seconds":{"type":"integer","minimum":1,"maximum":60}`),
	"fs_pick_directory": schema(""),
	"fs_list":           schema(`"path":{"type":"string"}`),
	"fs_read":           schema(`"path":{"type":"string"}`, "path"),
	"fs_write":          schema(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content"),
	"fs_mkdir":          schema(`"path":{"type":"string"}`, "path"),
	"fs_delete":         schema(`"path":{"type":"string"}`, "path"),
}

// KnownTools lists every tool name set_tools accepts.
func (k *Kernel) KnownTools() []string {
	names := make([]string, 0, 32)
	for name := range k.catalogue(&callState{}) {
		names = append(names, name)
	}
	for _, t := range serverTools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// ActiveTools is the tool set the LLM chose with set_tools, or DefaultTools.
func (k *Kernel) ActiveTools(ctx context.Context) ([]string, error) {
	v, ok, err := k.store.Setting(ctx, toolsSetting)
	if err != nil || !ok {
		return slices.Clone(DefaultTools), err
	}
	var names []string
	if err := json.Unmarshal([]byte(v), &names); err != nil {
		return slices.Clone(DefaultTools), nil
	}
	return names, nil
}

// toolSet returns the handlers and server-tool declarations of the active
// set. Server tools are left out when Options.ServerTools is off.
func (k *Kernel) toolSet(ctx context.Context, c *callState) ([]llm.ToolHandler, []llm.Tool, error) {
	names, err := k.ActiveTools(ctx)
	if err != nil {
		return nil, nil, err
	}
	all := k.catalogue(c)
	var handlers []llm.ToolHandler
	var server []llm.Tool
	for _, name := range names {
		if h, ok := all[name]; ok {
			handlers = append(handlers, h)
			continue
		}
		if !k.opts.ServerTools {
			continue
		}
		for _, t := range serverTools {
			if t.Name == name {
				server = append(server, t)
			}
		}
	}
	return handlers, server, nil
}

// decode reads a tool's input, keeping numbers as written (so an address
// sent as a number keeps what digits JSON kept).
func decode(in json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(in))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("input is not the expected JSON object: %w", err)
	}
	return nil
}

func jsonOutput(v any) (llm.ToolOutput, error) {
	data, err := llm.MarshalWire(v)
	if err != nil {
		return llm.ToolOutput{}, err
	}
	return llm.TextOutput(string(data)), nil
}

// jsonTool adapts a handler that takes its decoded arguments and returns a
// value to answer as JSON.
func jsonTool[A any](run func(context.Context, A) (any, error)) llm.ToolFunc {
	return func(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
		var args A
		if err := decode(in, &args); err != nil {
			return llm.ToolOutput{}, err
		}
		v, err := run(ctx, args)
		if err != nil {
			return llm.ToolOutput{}, err
		}
		return jsonOutput(v)
	}
}

// address reads an address given as a string or a number.
func address(v any, field string) (pscale.Address, error) {
	if v == nil {
		return pscale.Address{}, fmt.Errorf("%s is required, as a string such as \"0.1\"", field)
	}
	a, err := pscale.ParseAddress(v)
	if err != nil {
		return a, fmt.Errorf("%s: %w", field, err)
	}
	return a, nil
}

func (k *Kernel) toolBlockRead(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
	var args struct {
		Name string `json:"name"`
		Path any    `json:"path"`
	}
	if err := decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	if args.Path == nil || args.Path == "" {
		rec, err := k.store.Block(ctx, args.Name)
		if err != nil {
			return llm.ToolOutput{}, err
		}
		return llm.TextOutput(string(rec.Data)), nil
	}
	view, err := k.ReadNode(ctx, args.Name, args.Path)
	if err != nil {
		return llm.ToolOutput{}, err
	}
	return jsonOutput(view)
}

// ReadNode returns the node at path (a string or number address) with the
// text of its children.
func (k *Kernel) ReadNode(ctx context.Context, name string, path any) (pscale.NodeView, error) {
	b, err := k.Block(ctx, name)
	if err != nil {
		return pscale.NodeView{}, err
	}
	addr, err := address(path, "path")
	if err != nil {
		return pscale.NodeView{}, err
	}
	view, err := pscale.Read(b, addr)
	if err != nil {
		return view, fmt.Errorf("block %q: %w", name, err)
	}
	return view, nil
}

// pathArgs name a node: a block and a path (string or number).
type pathArgs struct {
	Name    string `json:"name"`
	Path    any    `json:"path"`
	Content string `json:"content"`
}

func (k *Kernel) toolBlockWrite(ctx context.Context, args pathArgs) (any, error) {
	v, err := k.WriteAt(ctx, args.Name, args.Path, args.Content)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "block": args.Name, "path": fmt.Sprint(args.Path), "version": v}, nil
}

// WriteAt writes text at path (a string or number address) in a block and
// returns the block's new version.
func (k *Kernel) WriteAt(ctx context.Context, name string, path any, text string) (int64, error) {
	addr, err := address(path, "path")
	if err != nil {
		return 0, err
	}
	return k.EditBlock(ctx, name, func(b *pscale.Block) error { return pscale.Write(b, addr, text) })
}

// BlockSummary is a block's name and pscale-0 text.
type BlockSummary struct {
	Name    string `json:"name"`
	Pscale0 string `json:"pscale0"`
}

// ListBlocks lists every block with its pscale-0 text.
func (k *Kernel) ListBlocks(ctx context.Context) ([]BlockSummary, error) {
	recs, err := k.store.Blocks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]BlockSummary, 0, len(recs))
	for _, r := range recs {
		s := BlockSummary{Name: r.Name}
		if b, _, err := pscale.Parse(r.Data); err == nil {
			if root := rootNode(b); root != nil {
				s.Pscale0 = root.Text
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func rootNode(b *pscale.Block) *pscale.Node {
	if b == nil || b.Tree == nil || b.Tree.Leaf {
		return nil
	}
	return b.Tree.Children[0]
}

func (k *Kernel) toolBlockList(ctx context.Context, _ struct{}) (any, error) {
	return k.ListBlocks(ctx)
}

// CreateBlock makes a new block whose root holds pscale0.
func (k *Kernel) CreateBlock(ctx context.Context, name, pscale0 string, place int) error {
	if place < 1 {
		place = 1
	}
	if err := store.ValidName(name); err != nil {
		return err
	}
	b := &pscale.Block{Place: place, Tree: &pscale.Node{HasText: false}}
	b.Tree.Children[0] = &pscale.Node{Leaf: true, Text: pscale0}
	data, err := blockJSON(b)
	if err != nil {
		return err
	}
	_, err = k.store.Put(ctx, name, data, 0)
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("block %q already exists: write into it with block_write or write_entry, or choose another name", name)
	}
	return err
}

func (k *Kernel) toolBlockCreate(ctx context.Context, args struct {
	Name    string      `json:"name"`
	Pscale0 string      `json:"pscale0"`
	Place   json.Number `json:"place"`
}) (any, error) {
	place := 1
	if args.Place != "" {
		p, err := pscale.ParsePscale(args.Place)
		if err != nil || p < 1 {
			return nil, fmt.Errorf("place %s: want a whole number of 1 or more", args.Place)
		}
		place = p
	}
	if err := k.CreateBlock(ctx, args.Name, args.Pscale0, place); err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "block": args.Name}, nil
}

// BSP runs block/spindle/point on a named block. spindle and point may be
// nil (block mode, spindle mode).
func (k *Kernel) BSP(ctx context.Context, name string, spindle, point any) (pscale.Result, error) {
	b, err := k.Block(ctx, name)
	if err != nil {
		return pscale.Result{}, err
	}
	var addr *pscale.Address
	if spindle != nil && spindle != "" {
		a, err := address(spindle, "spindle")
		if err != nil {
			return pscale.Result{}, err
		}
		addr = &a
	}
	var p *int
	if point != nil && point != "" {
		n, err := pscale.ParsePscale(point)
		if err != nil {
			return pscale.Result{}, fmt.Errorf("point: %w", err)
		}
		p = &n
	}
	r, err := pscale.BSP(b, addr, p)
	if err != nil {
		return r, fmt.Errorf("block %q: %w", name, err)
	}
	return r, nil
}

func (k *Kernel) toolBSP(ctx context.Context, args struct {
	Name    string `json:"name"`
	Spindle any    `json:"spindle"`
	Point   any    `json:"point"`
}) (any, error) {
	return k.BSP(ctx, args.Name, args.Spindle, args.Point)
}

func (k *Kernel) toolResolve(ctx context.Context, args struct {
	Name  string `json:"name"`
	Depth any    `json:"depth"`
}) (any, error) {
	return k.Resolve(ctx, args.Name, args.Depth)
}

// Resolve is the phrase-level view of a block down to depth (a number or
// numeric string; nil means the default depth).
func (k *Kernel) Resolve(ctx context.Context, name string, depth any) (pscale.Phrase, error) {
	d := 0
	if depth != nil && depth != "" {
		n, err := pscale.ParsePscale(depth)
		if err != nil {
			return pscale.Phrase{}, fmt.Errorf("depth: %w", err)
		}
		d = n
	}
	b, err := k.Block(ctx, name)
	if err != nil {
		return pscale.Phrase{}, err
	}
	return pscale.Resolve(b, d), nil
}

// WriteEntry adds text at the next free digit under path and returns the
// entry's address. A full node is an error wrapping pscale.ErrFull.
func (k *Kernel) WriteEntry(ctx context.Context, name, path, text string) (string, error) {
	addr, err := pscale.ParseAddress(path)
	if err != nil {
		return "", err
	}
	var entry string
	_, err = k.EditBlock(ctx, name, func(b *pscale.Block) error {
		d, err := pscale.NextDigit(b, addr)
		if err != nil {
			return err
		}
		at, err := pscale.ParseAddress(addr.Digits() + fmt.Sprint(d))
		if err != nil {
			return err
		}
		entry = dotted(at.Digits())
		return pscale.Write(b, at, text)
	})
	return entry, err
}

// dotted writes digits with a dot after the first, as addresses read:
// "0123" → "0.123".
func dotted(digits string) string {
	if len(digits) <= 1 {
		return digits
	}
	return digits[:1] + "." + digits[1:]
}

func (k *Kernel) toolWriteEntry(ctx context.Context, args pathArgs) (any, error) {
	path := "0"
	if args.Path != nil && args.Path != "" {
		a, err := address(args.Path, "path")
		if err != nil {
			return nil, err
		}
		path = a.String()
	}
	at, err := k.WriteEntry(ctx, args.Name, path, args.Content)
	if errors.Is(err, pscale.ErrFull) {
		return nil, fmt.Errorf("block %q path %s: digits 1-9 are all taken: call compress with this name and path first, then write_entry again", args.Name, path)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "block": args.Name, "path": at}, nil
}

func (k *Kernel) toolGetSource(ctx context.Context, _ json.RawMessage) (llm.ToolOutput, error) {
	sh, err := k.store.LatestShell(ctx, "")
	if errors.Is(err, store.ErrNotFound) {
		return llm.TextOutput("(no shell has been built yet: call recompile with your JSX)"), nil
	}
	if err != nil {
		return llm.ToolOutput{}, err
	}
	return llm.TextOutput(sh.Source), nil
}

// ErrShellCompile is wrapped by Recompile's error when the JSX does not compile.
var ErrShellCompile = errors.New("the shell did not compile, so the previous one stays")

// Recompile checks and stores a new shell, and tells Options.OnShell. JSX
// that does not compile is an error wrapping ErrShellCompile that carries
// the compiler's message (line and column) for the LLM.
func (k *Kernel) Recompile(ctx context.Context, jsx string) (store.Shell, error) {
	if strings.TrimSpace(jsx) == "" {
		return store.Shell{}, errors.New("jsx is empty: give the complete source of one React component")
	}
	if k.opts.CompileShell != nil {
		if err := k.opts.CompileShell(ctx, jsx); err != nil {
			return store.Shell{}, fmt.Errorf("%w: %v", ErrShellCompile, err)
		}
	}
	sh, err := k.store.AddShell(ctx, jsx)
	if err != nil {
		return sh, err
	}
	if k.opts.OnShell != nil {
		k.opts.OnShell(sh)
	}
	return sh, nil
}

func (k *Kernel) toolRecompile(ctx context.Context, c *callState, in json.RawMessage) (llm.ToolOutput, error) {
	var args struct {
		JSX string `json:"jsx"`
	}
	if err := decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	sh, err := k.Recompile(ctx, args.JSX)
	if errors.Is(err, ErrShellCompile) {
		return llm.ErrorOutput(err.Error()), nil
	}
	if err != nil {
		return llm.ToolOutput{}, err
	}
	c.shell = &sh
	out := llm.TextOutput(fmt.Sprintf(`{"success":true,"shell":%d}`, sh.ID))
	out.Stop = true
	return out, nil
}

// SetTools sets the active tool set for later calls; unknown names are
// refused with the list of known ones.
func (k *Kernel) SetTools(ctx context.Context, tools []string) ([]string, error) {
	known := k.KnownTools()
	var unknown, names []string
	seen := map[string]bool{}
	for _, n := range tools {
		if !slices.Contains(known, n) {
			unknown = append(unknown, n)
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown tools %s; known: %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	data, _ := json.Marshal(names)
	return names, k.store.SetSetting(ctx, toolsSetting, string(data))
}

func (k *Kernel) toolSetTools(ctx context.Context, args struct {
	Tools []string `json:"tools"`
}) (any, error) {
	names, err := k.SetTools(ctx, args.Tools)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "tools": names, "note": "takes effect on your next call"}, nil
}

func (k *Kernel) toolDatetime(context.Context, struct{}) (any, error) {
	now := time.Now()
	zone, _ := now.Zone()
	return map[string]any{
		"iso": now.UTC().Format(time.RFC3339), "unix": now.Unix(),
		"timezone": now.Location().String(), "zone": zone, "local": now.Format("Monday 2 January 2006 15:04:05 MST"),
	}, nil
}

func (k *Kernel) toolFetchURL(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
	var args struct {
		URL string `json:"url"`
	}
	if err := decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	return k.httpRequest(ctx, http.MethodGet, args.URL, nil, "")
}

func (k *Kernel) browserTool(name string) llm.ToolFunc {
	return func(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
		if k.opts.Browser == nil {
			return llm.ErrorOutput(fmt.Sprintf("%s needs a browser: no web shell page is attached to this kernel (start it with `hermitcrab serve` and open the page)", name)), nil
		}
		return k.opts.Browser.Call(ctx, name, in)
	}
}

var _ prompt.Source = storeSource{}
