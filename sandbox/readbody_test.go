package sandbox

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadBounded(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 5000, 1 << 20, 3<<20 + 7} {
		body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		data, tooLarge, err := readBounded(iotest.HalfReader(bytes.NewReader(body)), n)
		if err != nil || tooLarge || !bytes.Equal(data, body) {
			t.Errorf("%d bytes, limit %d: %d bytes, tooLarge %v, err %v", n, n, len(data), tooLarge, err)
		}
		if n == 0 {
			continue
		}
		data, tooLarge, err = readBounded(bytes.NewReader(body), n-1)
		if err != nil || !tooLarge || data != nil {
			t.Errorf("%d bytes, limit %d: %d bytes, tooLarge %v, err %v", n, n-1, len(data), tooLarge, err)
		}
	}
	boom := errors.New("boom")
	data, tooLarge, err := readBounded(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 10)
	if !errors.Is(err, boom) || tooLarge || string(data) != "abc" {
		t.Errorf("failing reader: %q, %v, %v", data, tooLarge, err)
	}
}

// BenchmarkReadBounded reads a 32 MiB answer, the largest the SDK takes,
// against io.ReadAll over a LimitReader, which it replaced.
func BenchmarkReadBounded(b *testing.B) {
	body := bytes.Repeat([]byte("a"), 32<<20)
	b.Run("readBounded", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, tooLarge, err := readBounded(bytes.NewReader(body), len(body)); err != nil || tooLarge {
				b.Fatal(err, tooLarge)
			}
		}
	})
	b.Run("ReadAll", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := io.ReadAll(io.LimitReader(bytes.NewReader(body), int64(len(body)+1))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
