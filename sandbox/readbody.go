package sandbox

import (
	"bytes"
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
			return bytes.Join(chunks, nil), false, nil
		case err != nil:
			return bytes.Join(chunks, nil), false, err
		}
		size = min(2*size, most)
	}
}
