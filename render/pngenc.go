package render

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"image"
	"io"
	"runtime"
	"sync/atomic"

	"github.com/klauspost/compress/flate"
)

// encodePNG writes img as a PNG (see writeBandedPNG): RGB when every pixel
// is opaque, else RGBA.
func encodePNG(w io.Writer, img *image.RGBA) error {
	width, height := img.Rect.Dx(), img.Rect.Dy()
	opaque := true
	for y := 0; y < height && opaque; y++ {
		row := img.Pix[y*img.Stride : y*img.Stride+4*width]
		for i := 3; i < len(row); i += 4 {
			if row[i] != 0xff {
				opaque = false
				break
			}
		}
	}
	copyRows := func() paintBand {
		return func(dst *image.RGBA) {
			for y := dst.Rect.Min.Y; y < dst.Rect.Max.Y; y++ {
				copy(dst.Pix[dst.PixOffset(0, y):][:4*width], img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y):][:4*width])
			}
		}
	}
	return writeBandedPNG(w, width, height, opaque, bandRowsFor(width, height), copyRows)
}

// paintBand draws the rows dst.Rect covers (x from 0) into dst.
type paintBand func(dst *image.RGBA)

// bandRowsFor is how many rows of a width×height picture a band holds:
// about bandBytes of pixels (a band is drawn and compressed while it is in
// the processor's cache), at least 16 rows, and small enough that a small
// picture still has a band for every core to work on.
func bandRowsFor(width, height int) int {
	rows := bandBytes / (4 * max(1, width))
	rows = min(rows, (height+4*runtime.GOMAXPROCS(0)-1)/(4*runtime.GOMAXPROCS(0)))
	return max(16, rows)
}

// bandBytes is the size of a band's pixels (see bandRowsFor).
const bandBytes = 512 << 10

// writeBandedPNG writes a width×height PNG whose pixels (premultiplied
// RGBA) are drawn in bands of bandRows rows: on every core, each worker
// gets its painter from newPainter and, band after band, paints a band,
// turns it into PNG rows and compresses them, so the whole picture is never
// held in memory. Rows are unfiltered (a canvas is mostly flat colour,
// which deflate packs well as it is) and compressed at deflate's fastest
// level, each band ending on a byte boundary (a sync flush) so the bands
// join into one zlib stream, written in order as they are done. It writes
// RGB when opaque (the painters then paint only opaque pixels), else RGBA.
// Deflate is klauspost/compress's (about twice as fast as compress/flate
// at its fastest level, the same format); for the pictures the renderer
// makes this is several times as fast as image/png at BestSpeed, at a
// similar size.
func writeBandedPNG(w io.Writer, width, height int, opaque bool, bandRows int, newPainter func() paintBand) error {
	bpp := 4
	if opaque {
		bpp = 3
	}
	rowLen := 1 + bpp*width
	bands := (height + bandRows - 1) / bandRows
	type band struct {
		data  []byte
		adler uint32
		raw   int
		err   error
		done  chan struct{}
	}
	out := make([]band, bands)
	for b := range out {
		out[b].done = make(chan struct{})
	}
	var next atomic.Int64
	var stop atomic.Bool
	for range min(runtime.GOMAXPROCS(0), bands) {
		go func() {
			paint := newPainter()
			var buf bytes.Buffer
			zw, _ := flate.NewWriter(&buf, flate.BestSpeed)
			pix := make([]byte, 4*width*bandRows)
			raw := make([]byte, 0, rowLen*bandRows)
			for {
				b := int(next.Add(1) - 1)
				if b >= bands {
					return
				}
				if stop.Load() {
					close(out[b].done)
					continue
				}
				y0, y1 := b*bandRows, min(height, (b+1)*bandRows)
				img := &image.RGBA{Pix: pix[:4*width*(y1-y0)], Stride: 4 * width, Rect: image.Rect(0, y0, width, y1)}
				paint(img)
				raw = raw[:0]
				for y := y0; y < y1; y++ {
					raw = append(raw, 0) // filter: none
					raw = appendRow(raw, img.Pix[img.PixOffset(0, y):][:4*width], opaque)
				}
				buf.Reset()
				zw.Reset(&buf)
				_, err := zw.Write(raw)
				if err == nil {
					if b == bands-1 {
						err = zw.Close()
					} else {
						err = zw.Flush()
					}
				}
				out[b].data, out[b].adler, out[b].raw, out[b].err = bytes.Clone(buf.Bytes()), adler32.Checksum(raw), len(raw), err
				close(out[b].done)
			}
		}()
	}
	err := writeBandsInOrder(w, width, height, opaque, bands, func(b int) ([]byte, uint32, int, error) {
		<-out[b].done
		data := out[b].data
		out[b].data = nil
		return data, out[b].adler, out[b].raw, out[b].err
	})
	if err != nil {
		stop.Store(true)
		for b := range out { // let the workers finish before their painters' state goes
			<-out[b].done
		}
	}
	return err
}

// writeBandsInOrder writes the PNG's chunks, taking each band's compressed
// data, Adler-32 and raw length from band in order.
func writeBandsInOrder(w io.Writer, width, height int, opaque bool, bands int, band func(b int) (data []byte, adler uint32, raw int, err error)) error {
	var hdr [13]byte
	binary.BigEndian.PutUint32(hdr[0:], uint32(width))
	binary.BigEndian.PutUint32(hdr[4:], uint32(height))
	hdr[8] = 8 // bits per sample
	hdr[9] = 6 // RGBA
	if opaque {
		hdr[9] = 2 // RGB
	}
	if _, err := w.Write([]byte("\x89PNG\r\n\x1a\n")); err != nil {
		return err
	}
	if err := writeChunk(w, "IHDR", hdr[:]); err != nil {
		return err
	}
	if err := writeChunk(w, "IDAT", []byte{0x78, 0x01}); err != nil { // zlib header: deflate, fastest
		return err
	}
	sum := uint32(1)
	for b := range bands {
		data, adler, raw, err := band(b)
		if err != nil {
			return err
		}
		if err := writeChunk(w, "IDAT", data); err != nil {
			return err
		}
		sum = adler32Combine(sum, adler, raw)
	}
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], sum)
	if err := writeChunk(w, "IDAT", tail[:]); err != nil {
		return err
	}
	return writeChunk(w, "IEND", nil)
}

// appendRow appends a row of premultiplied RGBA pixels as PNG samples: RGB
// when opaque, else RGBA with the alpha divided out.
func appendRow(dst, src []byte, opaque bool) []byte {
	if opaque {
		for i := 0; i < len(src); i += 4 {
			dst = append(dst, src[i], src[i+1], src[i+2])
		}
		return dst
	}
	for i := 0; i < len(src); i += 4 {
		a := uint32(src[i+3])
		switch a {
		case 0:
			dst = append(dst, 0, 0, 0, 0)
		case 0xff:
			dst = append(dst, src[i], src[i+1], src[i+2], 0xff)
		default:
			dst = append(dst, uint8(uint32(src[i])*0xff/a), uint8(uint32(src[i+1])*0xff/a), uint8(uint32(src[i+2])*0xff/a), uint8(a))
		}
	}
	return dst
}

func writeChunk(w io.Writer, kind string, data []byte) error {
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], kind)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, b := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// adler32Combine is the Adler-32 of A followed by B, from the sums of each
// and B's length (as zlib's adler32_combine).
func adler32Combine(a, b uint32, lenB int) uint32 {
	const mod = 65521
	rem := uint64(lenB % mod)
	a1, a2 := uint64(a&0xffff), uint64(a>>16)
	b1, b2 := uint64(b&0xffff), uint64(b>>16)
	sum1 := (a1 + b1 + mod - 1) % mod
	sum2 := (rem*a1%mod + a2 + b2 + mod - rem) % mod
	return uint32(sum2<<16 | sum1)
}
