package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/llm"
)

// imageTypes are the image media types the Anthropic API takes.
var imageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// maxImage is the API's limit on one image's base64 data.
const maxImage = 5 << 20

// noContent answers a call whose result held nothing: an empty tool
// result tells the model less than this.
const noContent = "(the tool returned no content)"

// output turns a tool's result into what the model reads, and says how many
// bytes of content the server sent. Text is redacted (a server's secrets,
// should it echo them, never reach the model or a log) and made inert; images the API
// takes are passed on as images; what the model cannot take (audio, a
// binary resource, an image too large or of another type) is replaced by a
// line saying what it was. Long text is left whole: the tool loop cuts it
// to its result limit, with a note, like every tool result.
func output(res *mcp.CallToolResult, red redactor) (llm.ToolOutput, int) {
	var (
		parts  []llm.ContentBlock
		size   int
		images bool
	)
	text := func(s string) {
		if s != "" {
			parts = append(parts, llm.TextBlock(inert(red.apply(s), true)))
		}
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			size += len(c.Text)
			text(c.Text)
		case *mcp.ImageContent:
			size += len(c.Data)
			data := base64.StdEncoding.EncodeToString(c.Data)
			switch {
			case !slices.Contains(imageTypes, c.MIMEType):
				text(fmt.Sprintf("[an image of type %s was left out: the model takes %s]", c.MIMEType, strings.Join(imageTypes, ", ")))
			case len(data) > maxImage:
				text(fmt.Sprintf("[an image of %d bytes was left out: the model takes images of at most %d bytes in base64]", len(data), maxImage))
			default:
				parts = append(parts, llm.ContentBlock{Type: llm.BlockImage, Source: &llm.ImageSource{Type: "base64", MediaType: c.MIMEType, Data: data}})
				images = true
			}
		case *mcp.AudioContent:
			size += len(c.Data)
			text(fmt.Sprintf("[audio of type %s, %d bytes, was left out: the model does not take audio here]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			size += len(c.URI) + len(c.Name) + len(c.Description)
			link := "resource link: " + c.URI
			if c.Name != "" {
				link += " (" + c.Name + ")"
			}
			if c.Description != "" {
				link += ": " + c.Description
			}
			text(link)
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				size += len(r.Text) + len(r.Blob)
				if r.Blob != nil {
					text(fmt.Sprintf("[resource %s (%s, %d bytes of binary data) was left out: the model reads text and images only]", r.URI, r.MIMEType, len(r.Blob)))
				} else {
					text(fmt.Sprintf("resource %s:\n%s", r.URI, r.Text))
				}
			}
		default:
			text(fmt.Sprintf("[content of an unknown kind (%T) was left out]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		// A server should send structured content as text too; when it
		// does not, its JSON is the text.
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			size += len(data)
			text(string(data))
		}
	}
	out := llm.ToolOutput{IsError: res.IsError}
	switch {
	case len(parts) == 0:
		out.Content.Text = noContent
	case images:
		out.Content.Blocks = parts
	default:
		texts := make([]string, len(parts))
		for i, p := range parts {
			texts[i] = p.Text
		}
		out.Content.Text = strings.Join(texts, "\n")
	}
	return out, size
}
