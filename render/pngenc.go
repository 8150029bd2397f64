package render

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"image"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
)

// encodePNG writes img as a PNG quickly: rows unfiltered (a canvas is mostly
// flat colour, which deflate packs well as it is), compressed at deflate's
// fastest level in bands of rows on every core, each band ending on a byte
// boundary (a sync flush) so the bands join into one zlib stream. It
// writes RGB when every pixel is opaque, else RGBA. Deflate is
// klauspost/compress's (about twice as fast as compress/flate at its
// fastest level, the same format). For the pictures the renderer makes
// this is several times as fast as image/png at BestSpeed, at a similar
// size.
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
	bpp := 4
	if opaque {
		bpp = 3
	}
	rowLen := 1 + bpp*width
	bandRows := max(16, (1<<20)/rowLen) // about a MiB of raw rows a band
	bands := (height + bandRows - 1) / bandRows
	type band struct {
		data  []byte
		adler uint32
		raw   int
		err   error
	}
	out := make([]band, bands)
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), bands) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			zw, _ := flate.NewWriter(&buf, flate.BestSpeed)
			raw := make([]byte, 0, rowLen*bandRows)
			for b := range work {
				y0, y1 := b*bandRows, min(height, (b+1)*bandRows)
				raw = raw[:0]
				for y := y0; y < y1; y++ {
					raw = append(raw, 0) // filter: none
					src := img.Pix[y*img.Stride : y*img.Stride+4*width]
					raw = appendRow(raw, src, opaque)
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
				out[b] = band{data: bytes.Clone(buf.Bytes()), adler: adler32.Checksum(raw), raw: len(raw), err: err}
			}
		}()
	}
	for b := range bands {
		work <- b
	}
	close(work)
	wg.Wait()

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
	for _, b := range out {
		if b.err != nil {
			return b.err
		}
		if err := writeChunk(w, "IDAT", b.data); err != nil {
			return err
		}
		sum = adler32Combine(sum, b.adler, b.raw)
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
