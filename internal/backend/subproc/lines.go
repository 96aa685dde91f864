package subproc

import (
	"bufio"
	"errors"
	"io"
)

// readLines reads r line by line, calling each with a line (without its
// newline) of at most limit bytes. A longer line is cut at limit, cut says
// so, and the rest of it is read and discarded: the reader keeps draining,
// so a writer is never left blocked on a full pipe. more reports that
// further output is already buffered. The line is only valid during the
// call. size is the reader's buffer: a line that fits it costs no copy. It
// returns the error that ended the reading, nil at EOF.
func readLines(r io.Reader, size, limit int, each func(line []byte, cut, more bool)) error {
	br := bufio.NewReaderSize(r, size)
	var long []byte // a line longer than the buffer, up to limit
	n := 0          // such a line's bytes so far, its newline included
	for {
		chunk, err := br.ReadSlice('\n')
		if n == 0 && !errors.Is(err, bufio.ErrBufferFull) {
			// The common case: the whole line is in the buffer.
			line := chunk
			if len(line) > 0 && line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			if len(chunk) > 0 {
				each(line[:min(len(line), limit)], len(line) > limit, br.Buffered() > 0)
			}
		} else {
			n += len(chunk)
			if room := limit - len(long); room > 0 {
				take := chunk[:min(len(chunk), room)]
				if len(long)+len(take) > cap(long) {
					// Doubling, not append's gentler growth for large
					// slices: a long line costs about twice its size in
					// all.
					grown := make([]byte, len(long), min(limit, max(2*cap(long), len(long)+len(take))))
					copy(grown, long)
					long = grown
				}
				long = append(long, take...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			lineLen := n
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				lineLen--
			}
			each(long[:min(len(long), lineLen)], lineLen > limit, br.Buffered() > 0)
			long, n = nil, 0 // a rare long line does not pin its buffer
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
