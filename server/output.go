package server

import (
	"strconv"
	"unicode/utf8"
)

// headTail is an io.Writer that keeps at most limit bytes of a stream: the
// first half and the last half. When more arrives the middle is cut and
// replaced by a marker saying how many bytes were cut (EXEC-3). It costs
// O(limit) memory whatever the stream's length.
type headTail struct {
	limit int
	head  []byte
	tail  []byte // ring of the last tailCap bytes once the head is full
	start int    // oldest byte of tail when full
	full  bool   // tail has wrapped
	total int64
}

func newHeadTail(limit int) *headTail {
	if limit < 64 {
		limit = 64
	}
	return &headTail{limit: limit}
}

func (w *headTail) headCap() int { return w.limit / 2 }
func (w *headTail) tailCap() int { return w.limit - w.limit/2 }

// Write never fails.
func (w *headTail) Write(p []byte) (int, error) {
	n := len(p)
	w.total += int64(n)
	if room := w.headCap() - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	tc := w.tailCap()
	for len(p) > 0 {
		if !w.full {
			k := min(tc-len(w.tail), len(p))
			w.tail = append(w.tail, p[:k]...)
			p = p[k:]
			if len(w.tail) == tc {
				w.full = true
				w.start = 0
			}
			continue
		}
		if len(p) >= tc {
			copy(w.tail, p[len(p)-tc:])
			w.start = 0
			return n, nil
		}
		k := copy(w.tail[w.start:], p)
		if k < len(p) {
			copy(w.tail, p[k:])
		}
		w.start = (w.start + len(p)) % tc
		p = nil
	}
	return n, nil
}

// truncated reports whether bytes were cut.
func (w *headTail) truncated() bool { return w.total > int64(w.limit) }

// String returns what was kept: all of it when it fits, else the head, a
// marker and the tail, in at most limit bytes, cut at UTF-8 boundaries.
func (w *headTail) String() string {
	var tail []byte
	if w.full {
		tail = append(append([]byte(nil), w.tail[w.start:]...), w.tail[:w.start]...)
	} else {
		tail = w.tail
	}
	if !w.truncated() {
		return string(w.head) + string(tail)
	}
	head := trimIncompleteRuneEnd(w.head)
	// The marker eats into the tail so that the whole fits in limit; its
	// length is bounded by the one it would have with every byte cut.
	maxMarker := len(truncMarker(w.total))
	if drop := len(head) + maxMarker + len(tail) - w.limit; drop > 0 {
		tail = tail[min(drop, len(tail)):]
	}
	tail = trimIncompleteRuneStart(tail)
	return string(head) + truncMarker(w.total-int64(len(head))-int64(len(tail))) + string(tail)
}

// truncMarker replaces the middle of a cut stream.
func truncMarker(cut int64) string {
	return "\n[... " + strconv.FormatInt(cut, 10) + " bytes truncated ...]\n"
}

// trimIncompleteRuneEnd drops a partial UTF-8 sequence at the end of b.
func trimIncompleteRuneEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// trimIncompleteRuneStart drops continuation bytes at the start of b.
func trimIncompleteRuneStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
