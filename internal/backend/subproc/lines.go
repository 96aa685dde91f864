package subproc

import (
	"bufio"
	"errors"
	"io"
)

// readLines reads r line by line, calling each with a line (without its
// newline) of at most limit bytes. A longer line is cut at limit, cut says so,
// and the rest of it is read and discarded: the reader keeps draining, so
// a writer is never left blocked on a full pipe. more reports that further
// output is already buffered. It returns the error that ended the reading,
// nil at EOF.
func readLines(r io.Reader, limit int, each func(line []byte, cut, more bool)) error {
	br := bufio.NewReaderSize(r, 16<<10)
	var buf []byte
	n := 0 // the line's bytes so far, its newline included
	for {
		chunk, err := br.ReadSlice('\n')
		n += len(chunk)
		if room := limit - len(buf); room > 0 {
			take := chunk[:min(len(chunk), room)]
			if len(buf)+len(take) > cap(buf) {
				// Doubling, not append's gentler growth for large
				// slices: a long line costs about twice its size in all.
				grown := make([]byte, len(buf), min(limit, max(2*cap(buf), len(buf)+len(take), 32<<10)))
				copy(grown, buf)
				buf = grown
			}
			buf = append(buf, take...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		size := n
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			size--
		}
		if n > 0 {
			each(buf[:min(len(buf), size)], size > limit, br.Buffered() > 0)
		}
		buf, n = buf[:0], 0
		if cap(buf) > 1<<20 {
			buf = nil // a rare huge line should not pin its buffer
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
