package mcp

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmkernels/kernels/llm"
)

func TestResultsBecomeWhatTheModelCanRead(t *testing.T) {
	red := newRedactor(Server{Name: "web", URL: "https://a/mcp", Headers: map[string]string{"Authorization": "Bearer t0ken-t0ken"}})
	for _, c := range []struct {
		name string
		res  *mcp.CallToolResult
		want string // the text the model reads
		size int
	}{
		{"empty", &mcp.CallToolResult{}, noContent, 0},
		{"error", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file"}}}, "no such file", 12},
		{"texts", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "one"}, &mcp.TextContent{}, &mcp.TextContent{Text: "two"}}}, "one\ntwo", 6},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, `{"n":1}`, 7},
		{"structured beside text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}, StructuredContent: map[string]any{"n": 1}}, `{"n":1}`, 7},
		{"resource link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///a.txt", Name: "a.txt", Description: "the file"}}}, "resource link: file:///a.txt (a.txt): the file", 26},
		{"embedded text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", Text: "hello\x1b[2J"}}}}, "resource file:///a.txt:\nhello\\x1b[2J", 9},
		{"embedded blob", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}}}}, "[resource file:///a.bin (application/octet-stream, 3 bytes of binary data) was left out: the model reads text and images only]", 3},
		{"an echoed secret", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "token t0ken-t0ken"}}}, "token [redacted]", 17},
		{"a huge image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: padded(pngImage(1, 1), 4<<20)}}}, "[image of type image/png left out: 5592408 bytes in base64, over the 5242880 an image may take]", 4 << 20},
		{"too wide", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: pngImage(2001, 1)}}}, "[image of type image/png left out: 2001x1 pixels, over the 2000 a side the model takes once a conversation holds more than 20 images]", len(pngImage(2001, 1))},
		{"too tall a webp", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/webp", Data: webpImage(10, 9000, 0)}}}, "[image of type image/webp left out: 10x9000 pixels, over the 2000 a side the model takes once a conversation holds more than 20 images]", 30},
		{"not an image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte("<svg/>")}}}, "[image of type image/png left out: its data is not an image of a type the model takes (image/jpeg, image/png, image/gif, image/webp)]", 6},
		{"a PNG cut short", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: pngImage(40, 40)[:60]}}}, "[image of type image/png left out: it does not decode as image/png (cut short or damaged)]", 60},
		{"a broken header", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n-not-really")}}}, "[image of type image/png left out: its header does not read as image/png]", 19},
	} {
		out, size := output(c.res, red, true)
		if out.Content.Blocks != nil || out.Content.Text != c.want || size != c.size || out.IsError != c.res.IsError {
			t.Errorf("%s: got %q (%d bytes, is_error %v), want %q (%d bytes)", c.name, out.Content.String(), size, out.IsError, c.want, c.size)
		}
	}
	// An image the API takes, at its limit, is passed on as one.
	out, _ := output(&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/webp", Data: webpImage(2000, 2000, 3*llm.MaxImageBase64/4)}}}, red, true)
	if b := out.Content.Blocks; len(b) != 1 || b[0].Type != llm.BlockImage || b[0].Source.MediaType != "image/webp" || len(b[0].Source.Data) != llm.MaxImageBase64 {
		t.Errorf("image: %d blocks", len(b))
	}
}

// pngImage is a PNG of w by h pixels.
func pngImage(w, h int) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// padded is data with zeros after it, n bytes in all.
func padded(data []byte, n int) []byte { return append(data, make([]byte, n-len(data))...) }

// webpImage is the header of an extended WebP of w by h pixels, padded to
// n bytes.
func webpImage(w, h, n int) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00")
	b = append(b, byte(w-1), byte((w-1)>>8), byte((w-1)>>16), byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
	return padded(b, max(n, len(b)))
}

// TestImagesOfOneResultShareACap pins the cap on one result's images:
// those that fit pass, the next is left out with a note, and a smaller
// one after it still passes.
func TestImagesOfOneResultShareACap(t *testing.T) {
	big := &mcp.ImageContent{MIMEType: "image/png", Data: padded(pngImage(1, 1), 3<<20)} // 4 MiB in base64
	small := &mcp.ImageContent{MIMEType: "image/png", Data: pngImage(2, 2)}
	out, _ := output(&mcp.CallToolResult{Content: []mcp.Content{big, big, big, small}}, redactor{}, true)
	b := out.Content.Blocks
	if len(b) != 4 || b[0].Type != llm.BlockImage || b[1].Type != llm.BlockImage || b[3].Type != llm.BlockImage ||
		b[2].Text != "[image of type image/png left out: the images of one result may take 10485760 bytes in base64 in all]" {
		t.Fatalf("%d blocks: %+v", len(b), b[2])
	}
}

// TestAnImageIsSentAsWhatItIs pins that an image whose media type names
// another of the API's types goes as the type its data is: the API
// refuses an image that is not what its media_type says.
func TestAnImageIsSentAsWhatItIs(t *testing.T) {
	out, _ := output(&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/jpeg", Data: pngImage(3, 3)}}}, redactor{}, true)
	if b := out.Content.Blocks; len(b) != 1 || b[0].Source.MediaType != "image/png" {
		t.Errorf("%+v", b)
	}
}

// TestWithoutImagesEachImageIsANote pins the text-only caller's result
// (Options.Images off): plain text, each image named in a line.
func TestWithoutImagesEachImageIsANote(t *testing.T) {
	out, _ := output(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a chart:"}, &mcp.ImageContent{MIMEType: "image/png", Data: pngImage(3, 3)}}}, redactor{}, false)
	if want := "a chart:\n[image of type image/png left out: this kernel reads tool results as text]"; out.Content.Blocks != nil || out.Content.Text != want {
		t.Errorf("%q, want %q", out.Content.String(), want)
	}
}
