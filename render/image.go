package render

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/gif"  // data:image/gif
	_ "image/jpeg" // data:image/jpeg
	_ "image/png"  // data:image/png
	"strings"

	_ "golang.org/x/image/webp" // data:image/webp
)

// maxImagePixels bounds the pictures the renderer decodes: a larger one
// (a decompression bomb, say) is drawn as a card.
const maxImagePixels = 40 << 20

// decodeDataImage decodes a data:image/(png|jpeg|gif|webp);base64 URL,
// or returns nil.
func decodeDataImage(href string) image.Image {
	rest, ok := strings.CutPrefix(href, "data:image/")
	if !ok {
		return nil
	}
	mime, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return nil
	}
	switch mime {
	case "png", "jpeg", "jpg", "gif", "webp":
	default:
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(data); err != nil {
			return nil
		}
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > maxImagePixels {
		return nil
	}
	img, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	return img
}
