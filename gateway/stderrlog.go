package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
)

// stderrLineMax bounds a line of a stdio upstream's stderr held before it
// is logged: a longer one is logged in pieces of this size.
const stderrLineMax = 4 << 10

// stderrLog is a stdio upstream's stderr: each line it writes becomes a
// record of the gateway's log, attributed to the upstream. Passed to the
// gateway's stderr as it was, an upstream's lines read as the gateway's
// own log records (an "approval granted" it never logged) and reached
// the operator's terminal with their control sequences; as a value of a
// record the log's handler quotes and escapes them.
type stderrLog struct {
	log      *slog.Logger
	upstream string
}

func (s stderrLog) line(l []byte) {
	l = bytes.TrimSuffix(bytes.TrimSuffix(l, []byte{'\n'}), []byte{'\r'})
	s.log.Info("stdio upstream stderr", "upstream", s.upstream, "line", string(l))
}

// ReadFrom logs the lines of r, the child's stderr, to its end: os/exec
// copies the child's stderr with io.Copy, which hands it to ReadFrom. A
// line is logged once its newline comes, however many writes the child
// made it in (an unbuffered stderr writes a line in pieces), and the
// last one at the end of r even if the child did not end it.
func (s stderrLog) ReadFrom(r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, stderrLineMax)
	var n int64
	for {
		l, err := br.ReadSlice('\n')
		n += int64(len(l))
		if len(l) > 0 {
			s.line(l)
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			return n, nil
		default:
			return n, err
		}
	}
}

// Write logs the lines of p, for a writer that does not copy with
// io.Copy; one not ending in a newline is logged as a line too.
func (s stderrLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n') + 1
		if i == 0 {
			i = len(p)
		}
		s.line(p[:i])
		p = p[i:]
	}
	return n, nil
}
