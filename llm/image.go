package llm

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // registers GIF for image.DecodeConfig
	_ "image/jpeg" // registers JPEG
	_ "image/png"  // registers PNG
	"net/http"
	"slices"
	"strings"
)

// ImageTypes are the media types of the images the Anthropic API takes.
var ImageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// Limits of the Anthropic API on one image.
const (
	MaxImageBase64 = 5 << 20 // bytes of base64 data
	MaxImageSide   = 8000    // pixels of width or height
	// In a request of more than ManyImages images, each may have at most
	// MaxImageSideMany pixels a side.
	ManyImages       = 20
	MaxImageSideMany = 2000
)

// ImageType is the media type of the image data holds, read from its first
// bytes (the way the API tells whether an image is what its media_type
// says), or "" when it is none of ImageTypes.
func ImageType(data []byte) string {
	t := http.DetectContentType(data)
	if slices.Contains(ImageTypes, t) {
		return t
	}
	return ""
}

// ImageSize is the width and height of the image data holds, of one of
// ImageTypes, read from its header.
func ImageSize(data []byte) (width, height int, err error) {
	if ImageType(data) == "image/webp" {
		return webpSize(data)
	}
	c, _, err := image.DecodeConfig(bytes.NewReader(data))
	return c.Width, c.Height, err
}

var errWebP = errors.New("not a WebP image header this reads")

// webpSize reads a WebP header's size: the extended (VP8X), lossy (VP8 )
// or lossless (VP8L) form, each at its fixed place after the RIFF header.
func webpSize(b []byte) (int, int, error) {
	if len(b) < 30 {
		return 0, 0, errWebP
	}
	le24 := func(p []byte) int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }
	switch string(b[12:16]) {
	case "VP8X":
		return le24(b[24:27]) + 1, le24(b[27:30]) + 1, nil
	case "VP8 ":
		if !bytes.Equal(b[23:26], []byte{0x9d, 0x01, 0x2a}) {
			return 0, 0, errWebP
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff), nil
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0, errWebP
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, nil
	}
	return 0, 0, errWebP
}

// ImageTokens bounds the input tokens of the images in blocks (and in the
// tool results among them) beyond their base64 bytes: the API counts an
// image at about width × height / 750 tokens (less once it shrinks a large
// one), which for an image that compresses well is far more than its
// bytes. An image whose size cannot be read adds nothing (the API refuses
// it); one by URL or file id is not counted.
func ImageTokens(blocks []ContentBlock) int {
	n := 0
	for _, b := range blocks {
		if src := b.Source; b.Type == BlockImage && src != nil && src.Type == "base64" {
			data, err := base64.StdEncoding.DecodeString(strings.NewReplacer("\r", "", "\n", "").Replace(src.Data))
			if err != nil {
				continue
			}
			if w, h, err := ImageSize(data); err == nil {
				n += max(0, w*h/750+1-len(src.Data))
			}
		}
		n += ImageTokens(b.Content.Blocks)
	}
	return n
}

// checkImage says what the API would refuse in an image block's source,
// or "": a base64 image must be of one of ImageTypes, its data base64 of
// at most MaxImageBase64 bytes, and of the type its media_type says.
func checkImage(src *ImageSource) string {
	switch {
	case src == nil:
		return "source: Field required"
	case src.Type == "url":
		if src.URL == "" {
			return "source.url: Field required"
		}
		return ""
	case src.Type == "file":
		if src.FileID == "" {
			return "source.file_id: Field required"
		}
		return ""
	case src.Type != "base64":
		return fmt.Sprintf("source.type: Input should be 'base64', 'url' or 'file', got %q", src.Type)
	case !slices.Contains(ImageTypes, src.MediaType):
		return fmt.Sprintf("source.base64.media_type: Input should be %s, got %q", "'"+strings.Join(ImageTypes, "', '")+"'", src.MediaType)
	case len(src.Data) > MaxImageBase64:
		return fmt.Sprintf("source.base64: image exceeds 5 MB maximum: %d bytes > %d bytes", len(src.Data), MaxImageBase64)
	}
	// The first bytes are enough to tell the type: decode a prefix only
	// (line breaks, which decoders skip, left out).
	head := strings.NewReplacer("\r", "", "\n", "").Replace(src.Data[:min(len(src.Data), 1024)])
	data, err := base64.StdEncoding.DecodeString(head[:len(head)/4*4])
	if err != nil {
		return "source.base64.data: the image's data is not valid base64"
	}
	if t := ImageType(data); t != src.MediaType {
		return fmt.Sprintf("source.base64.data: Image does not match the provided media type %s", src.MediaType)
	}
	return ""
}

// checkSides says what the API would refuse in a base64 image's size: a
// side over MaxImageSide pixels, or over MaxImageSideMany in a request
// of more than ManyImages images (many). An image whose size cannot be
// read is left to checkImage.
func checkSides(src *ImageSource, many bool) string {
	if src == nil || src.Type != "base64" {
		return ""
	}
	data, err := base64.StdEncoding.DecodeString(strings.NewReplacer("\r", "", "\n", "").Replace(src.Data))
	if err != nil {
		return ""
	}
	w, h, err := ImageSize(data)
	switch {
	case err != nil:
		return ""
	case w > MaxImageSide || h > MaxImageSide:
		return fmt.Sprintf("source.base64.data: At least one of the image dimensions exceed max allowed size: %d pixels", MaxImageSide)
	case many && (w > MaxImageSideMany || h > MaxImageSideMany):
		return fmt.Sprintf("source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: %d pixels", MaxImageSideMany)
	}
	return ""
}
