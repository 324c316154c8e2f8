package sandbox

import (
	"errors"
	"io"
)

// readBounded reads r to its end, or until more than limit bytes have
// come: then it stops and reports tooLarge, and data is nil. It reads into
// chunks that double up to 1 MiB and are joined once at the end, so a large
// answer costs no repeated copying of what came before (io.ReadAll grows
// one slice), and a refused one is never joined at all.
func readBounded(r io.Reader, limit int) (data []byte, tooLarge bool, err error) {
	const first, most = 512, 1 << 20
	var chunks [][]byte
	total, size := 0, first
	for {
		buf := make([]byte, size)
		n, err := io.ReadFull(r, buf)
		total += n
		if total > limit {
			return nil, true, nil
		}
		chunks = append(chunks, buf[:n])
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return join(chunks, total), false, nil
		case err != nil:
			return join(chunks, total), false, err
		}
		size = min(2*size, most)
	}
}

// join returns the chunks as one slice of total bytes.
func join(chunks [][]byte, total int) []byte {
	if len(chunks) == 1 {
		return chunks[0]
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out
}
