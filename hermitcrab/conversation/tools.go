package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/shells"
	"github.com/llmkernels/kernels/hermitcrab/tool"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// The LLM's client tools: each is a definition and a thin adapter that
// decodes the tool's input, calls the kernel's own API (blocks.go,
// memory.go, shells.go, toolset.go) and answers in JSON. Descriptions are
// short on purpose: definitions are sent on every call (the clean-build
// spec budgets about 500 tokens for the boot set), and the capabilities
// and touchstone blocks carry the detail.

const (
	nameProp = `"name":{"type":"string"}`
	pathProp = `"path":{"type":"string","description":"e.g. \"0.12\""}`
	textProp = `"content":{"type":"string"}`
)

// catalogue returns every client tool the kernel can run, by name.
func (c *Caller) catalogue(cs *callState) map[string]llm.ToolHandler {
	h := map[string]llm.ToolHandler{}
	add := func(name, desc string, in json.RawMessage, run llm.ToolFunc) {
		h[name] = llm.ToolHandler{Tool: llm.Tool{Name: name, Description: desc, InputSchema: in}, Run: run}
	}
	add("block_read", "A block whole, or the node at path with its children's texts.",
		tool.Schema(nameProp+","+pathProp, "name"), c.toolBlockRead)
	add("block_write", "Write text at path, creating nodes on the way; a branch keeps its children.",
		tool.Schema(nameProp+","+pathProp+","+textProp, "name", "path", "content"), tool.Func(c.toolBlockWrite))
	add("block_list", "Every block's name and pscale-0 text.", tool.Schema(""), tool.Func(c.toolBlockList))
	add("block_create", "Create a block with its pscale-0 text.",
		tool.Schema(nameProp+`,"pscale0":{"type":"string"},"place":{"type":"integer","minimum":1}`, "name", "pscale0"),
		tool.Func(c.toolBlockCreate))
	add("bsp", BSPDescription,
		tool.Schema(nameProp+`,"spindle":{"type":"string","description":"address, e.g. \"0.12\""},"point":{"type":"integer","description":"a pscale"},"mode":{"type":"string","enum":`+bspModes+`}`, "name"),
		tool.Func(c.toolBSP))
	add("resolve", "Every node's text of a block down to depth (default 3).",
		tool.Schema(nameProp+`,"depth":{"type":"integer","minimum":1}`, "name"), tool.Func(c.toolResolve))
	add("write_entry", "Add an entry to a block: without path as its newest (the block grows as it fills); with path at the next free digit under that node.",
		tool.Schema(nameProp+","+pathProp+","+textProp, "name", "content"), tool.Func(c.toolWriteEntry))
	add("compress", "When digits 1-9 under path are full: the light tier writes their summary or emergence as that node's text (the nine stay). Compressing a block's top (\"0\") grows the block.",
		tool.Schema(nameProp+","+pathProp, "name", "path"), tool.Func(c.toolCompress))
	add("get_source", "The JSX of the shell running now.", tool.Schema(""), c.toolGetSource)
	add("recompile", "Show a new interface: the whole JSX of one React component. Errors come back; success ends your turn.",
		tool.Schema(`"jsx":{"type":"string"}`, "jsx"), func(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
			return c.toolRecompile(ctx, cs, in)
		})
	add("set_tools", "Choose your tools for later calls: names or definitions (capabilities lists them).",
		tool.Schema(`"tools":{"type":"array"}`, "tools"), tool.Func(c.toolSetTools))
	add("call_llm", "Delegate a task to another LLM: one call, no tools. model \"fast\" is the light tier, \"default\" the deep tier.",
		tool.Schema(`"prompt":{"type":"string"},"model":{"type":"string","enum":["fast","default"]},"system":{"type":"string"}`, "prompt"),
		c.toolCallLLM)
	add("get_datetime", "Date, time, timezone, unix time.", tool.Schema(""), tool.Func(c.toolDatetime))
	for _, t := range c.skillTools() {
		h[t.Tool.Name] = t
	}
	for _, t := range c.fetch.Tools() { // another site's text
		add(t.Tool.Name, t.Tool.Description, t.Tool.InputSchema, tool.Inert(t.Run))
	}
	for _, name := range browserTools {
		add(name, browserDescriptions[name], browserSchemas[name], c.browserTool(name))
	}
	// Everything the network tools answer is the beach's or another
	// agent's text (passports, marks, messages, the beach's acknowledgements).
	for _, t := range c.net.Tools() {
		add(t.Tool.Name, t.Tool.Description, t.Tool.InputSchema, tool.Inert(t.Run))
	}
	return h
}

// browserTools are run by the page of an attached browser.
var browserTools = []string{"clipboard_write", "clipboard_read", "speak", "notify", "download", "open_tab", "get_geolocation",
	"listen", "fs_pick_directory", "fs_list", "fs_read", "fs_write", "fs_mkdir", "fs_delete"}

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
	"clipboard_write":   tool.Schema(`"text":{"type":"string"}`, "text"),
	"clipboard_read":    tool.Schema(""),
	"speak":             tool.Schema(`"text":{"type":"string"}`, "text"),
	"notify":            tool.Schema(`"title":{"type":"string"},"body":{"type":"string"}`, "title"),
	"download":          tool.Schema(`"filename":{"type":"string"},"content":{"type":"string"},"mime_type":{"type":"string"}`, "filename", "content"),
	"open_tab":          tool.Schema(`"url":{"type":"string"}`, "url"),
	"get_geolocation":   tool.Schema(""),
	"listen":            tool.Schema(`"lang":{"type":"string","description":"e.g. en-GB"},"seconds":{"type":"integer","minimum":1,"maximum":60}`),
	"fs_pick_directory": tool.Schema(""),
	"fs_list":           tool.Schema(`"path":{"type":"string"}`),
	"fs_read":           tool.Schema(`"path":{"type":"string"}`, "path"),
	"fs_write":          tool.Schema(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content"),
	"fs_mkdir":          tool.Schema(`"path":{"type":"string"}`, "path"),
	"fs_delete":         tool.Schema(`"path":{"type":"string"}`, "path"),
}

// pathArgs name a node: a block and a path (a string or a number, which
// blocks.ParseAddress reads: the tools' edge).
type pathArgs struct {
	Name    string `json:"name"`
	Path    any    `json:"path"`
	Content string `json:"content"`
}

func (c *Caller) toolBlockRead(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
	var args pathArgs
	if err := tool.Decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	if args.Path == nil || args.Path == "" {
		b, err := c.blocks.Raw(ctx, args.Name)
		if err != nil {
			return llm.ToolOutput{}, err
		}
		return llm.TextOutput(string(b.Data)), nil
	}
	addr, err := blocks.ParseAddress("path", args.Path)
	if err != nil {
		return llm.ToolOutput{}, err
	}
	view, err := c.blocks.ReadNode(ctx, args.Name, addr)
	if err != nil {
		return llm.ToolOutput{}, err
	}
	return tool.JSON(view)
}

func (c *Caller) toolBlockWrite(ctx context.Context, args pathArgs) (any, error) {
	addr, err := blocks.ParseAddress("path", args.Path)
	if err != nil {
		return nil, err
	}
	v, err := c.blocks.WriteAt(ctx, args.Name, addr, args.Content)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "block": args.Name, "path": fmt.Sprint(args.Path), "version": v}, nil
}

func (c *Caller) toolBlockList(ctx context.Context, _ struct{}) (any, error) {
	return c.blocks.List(ctx)
}

func (c *Caller) toolBlockCreate(ctx context.Context, args struct {
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
	if err := c.blocks.Create(ctx, args.Name, args.Pscale0, place); err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "block": args.Name}, nil
}

// BSPDescription describes the bsp tool, to the LLM and to MCP clients.
const BSPDescription = "Read a block by mode: block (whole), spindle (texts from the root to an address), point (one of them, by pscale), ring (the address's siblings), dir (it and all below, to point), disc (every node at pscale point), star (the references at its digit 0). Without mode: what you give decides."

// bspModes is the JSON list of BSP's modes, for the bsp tool's schema.
var bspModes = func() string {
	data, _ := json.Marshal(pscale.Modes) // a list of strings always marshals
	return string(data)
}()

func (c *Caller) toolBSP(ctx context.Context, args struct {
	Name    string `json:"name"`
	Spindle any    `json:"spindle"`
	Point   any    `json:"point"`
	Mode    string `json:"mode"`
}) (any, error) {
	q, err := pscale.ParseQuery(args.Mode, args.Spindle, args.Point)
	if err != nil {
		return nil, err
	}
	return c.blocks.BSP(ctx, args.Name, q)
}

func (c *Caller) toolResolve(ctx context.Context, args struct {
	Name  string `json:"name"`
	Depth any    `json:"depth"`
}) (any, error) {
	depth, err := blocks.ParseDepth("depth", args.Depth)
	if err != nil {
		return nil, err
	}
	return c.blocks.Resolve(ctx, args.Name, depth)
}

func (c *Caller) toolWriteEntry(ctx context.Context, args pathArgs) (any, error) {
	var under pscale.Address
	if args.Path != nil && args.Path != "" {
		a, err := blocks.ParseAddress("path", args.Path)
		if err != nil {
			return nil, err
		}
		under = a
	}
	at, err := c.blocks.WriteEntry(ctx, args.Name, under, args.Content)
	var full *pscale.FullError
	switch {
	case errors.As(err, &full):
		return nil, fmt.Errorf("block %q: %w; call compress(%q, %q), then write_entry again", args.Name, full, args.Name, full.Path)
	case errors.Is(err, pscale.ErrFull):
		return nil, fmt.Errorf("block %q path %v: digits 1-9 are all taken: compress(%q, %q) writes their compression as that node's text; add new entries elsewhere (write_entry without a path adds the block's newest)", args.Name, args.Path, args.Name, fmt.Sprint(args.Path))
	case err != nil:
		return nil, err
	}
	return map[string]any{"success": true, "block": args.Name, "path": at}, nil
}

func (c *Caller) toolCompress(ctx context.Context, args pathArgs) (any, error) {
	addr, err := blocks.ParseAddress("path", args.Path)
	if err != nil {
		return nil, err
	}
	comp, err := c.Compress(ctx, args.Name, addr)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "compression": comp}, nil
}

func (c *Caller) toolGetSource(ctx context.Context, _ json.RawMessage) (llm.ToolOutput, error) {
	src, err := c.shells.Source(ctx)
	switch {
	case err != nil:
		return llm.ToolOutput{}, err
	case src == "":
		return llm.TextOutput("(no shell has been built yet: call recompile with your JSX)"), nil
	}
	return llm.TextOutput(src), nil
}

func (c *Caller) toolRecompile(ctx context.Context, cs *callState, in json.RawMessage) (llm.ToolOutput, error) {
	var args struct {
		JSX string `json:"jsx"`
	}
	if err := tool.Decode(in, &args); err != nil {
		return llm.ToolOutput{}, err
	}
	sh, err := c.shells.Recompile(ctx, args.JSX)
	if errors.Is(err, shells.ErrCompile) {
		return llm.ErrorOutput(err.Error()), nil
	}
	if err != nil {
		return llm.ToolOutput{}, err
	}
	cs.shell = &sh
	out := llm.TextOutput(fmt.Sprintf(`{"success":true,"shell":%d}`, sh.ID))
	out.Stop = true
	return out, nil
}

func (c *Caller) toolSetTools(ctx context.Context, args struct {
	Tools []json.RawMessage `json:"tools"`
}) (any, error) {
	tools, err := ParseToolEntries(args.Tools)
	if err != nil {
		return nil, err
	}
	names, err := c.SetTools(ctx, tools)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": true, "tools": names, "note": "takes effect on your next call; set_tools always stays"}, nil
}

func (c *Caller) toolDatetime(context.Context, struct{}) (any, error) {
	now := time.Now()
	zone, _ := now.Zone()
	return map[string]any{
		"iso": now.UTC().Format(time.RFC3339), "unix": now.Unix(),
		"timezone": now.Location().String(), "zone": zone, "local": now.Format("Monday 2 January 2006 15:04:05 MST"),
	}, nil
}

func (c *Caller) browserTool(name string) llm.ToolFunc {
	return func(ctx context.Context, in json.RawMessage) (llm.ToolOutput, error) {
		if c.opts.Browser == nil {
			return llm.ErrorOutput(fmt.Sprintf("%s needs a browser: no web shell page is attached to this kernel (start it with `hermitcrab serve` and open the page)", name)), nil
		}
		return c.opts.Browser.Call(ctx, name, in)
	}
}
