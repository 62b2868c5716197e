package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif"  // registers GIF for image.Decode
	_ "image/jpeg" // registers JPEG
	_ "image/png"  // registers PNG
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/llm"
)

// maxResultImages is the most base64 data of images one result passes
// on: two images at the API's limit of 5 MB each, so that a result leaves
// most of the API's 32 MB a request to the rest of the conversation.
const maxResultImages = 10 << 20

// noContent answers a call whose result held nothing: an empty tool
// result tells the model less than this.
const noContent = "(the tool returned no content)"

// imageBlock is an image of a result as the model takes it, or why it is left
// out: without withImages (a caller that reads results as text), of a
// type the API does not take (read from its data: a media type that
// names another of the API's types is corrected, since the API refuses an
// image that is not what its media_type says), over the API's limits on
// size or sides (2,000 pixels, the API's limit in a request of many
// images), or over room, the base64 bytes left of the result's
// share.
func imageBlock(c *mcp.ImageContent, withImages bool, room int) (llm.ContentBlock, string) {
	if !withImages {
		return llm.ContentBlock{}, "this kernel reads tool results as text"
	}
	typ := llm.ImageType(c.Data)
	if typ == "" {
		return llm.ContentBlock{}, fmt.Sprintf("its data is not an image of a type the model takes (%s)", strings.Join(llm.ImageTypes, ", "))
	}
	n := base64.StdEncoding.EncodedLen(len(c.Data))
	switch w, h, err := llm.ImageSize(c.Data); {
	case n > llm.MaxImageBase64:
		return llm.ContentBlock{}, fmt.Sprintf("%d bytes in base64, over the %d an image may take", n, llm.MaxImageBase64)
	case n > room:
		return llm.ContentBlock{}, fmt.Sprintf("the images of one result may take %d bytes in base64 in all", maxResultImages)
	case err != nil:
		return llm.ContentBlock{}, fmt.Sprintf("its header does not read as %s", typ)
	case typ != "image/webp" && !decodes(c.Data):
		// The API refuses an image it cannot decode, and a conversation
		// that keeps one is refused on every later turn. (WebP has no
		// decoder here: its header is all that is checked.)
		return llm.ContentBlock{}, fmt.Sprintf("it does not decode as %s (cut short or damaged)", typ)
	case w > llm.MaxImageSideMany || h > llm.MaxImageSideMany:
		// The API takes up to 8,000 a side, but only 2,000 in a request
		// of more than 20 images: a larger image would have every later
		// request of a conversation that gathers images refused.
		return llm.ContentBlock{}, fmt.Sprintf("%dx%d pixels, over the %d a side the model takes once a conversation holds more than %d images", w, h, llm.MaxImageSideMany, llm.ManyImages)
	}
	data := base64.StdEncoding.EncodeToString(c.Data)
	return llm.ContentBlock{Type: llm.BlockImage, Source: &llm.ImageSource{Type: "base64", MediaType: typ, Data: data}}, ""
}

// decodes reports whether data decodes whole as a JPEG, PNG or GIF.
func decodes(data []byte) bool {
	_, _, err := image.Decode(bytes.NewReader(data))
	return err == nil
}

// output turns a tool's result into what the model reads, and says how many
// bytes of content the server sent. Text is redacted (a server's secrets,
// should it echo them, never reach the model or a log) and made inert; with
// withImages, images the API takes are passed on as images (imageBlock); what
// the model cannot take (audio, a binary resource, an image imageBlock leaves
// out) is replaced by a line saying what it was. Long text is left whole: the tool loop cuts it
// to its result limit, with a note, like every tool result.
func output(res *mcp.CallToolResult, red redactor, withImages bool) (llm.ToolOutput, int) {
	var (
		parts     []llm.ContentBlock
		size      int
		images    bool
		imageData int // base64 bytes of the images passed on
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
			img, why := imageBlock(c, withImages, maxResultImages-imageData)
			if why != "" {
				text(fmt.Sprintf("[image of type %s left out: %s]", c.MIMEType, why))
				continue
			}
			parts = append(parts, img)
			imageData += len(img.Source.Data)
			images = true
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
