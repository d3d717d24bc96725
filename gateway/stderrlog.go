package gateway

import (
	"bytes"
	"log/slog"
)

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

func (s stderrLog) Write(p []byte) (int, error) {
	n := len(p)
	// A write not ending in a newline is logged as a line too: the child
	// may exit without ending its last, and nothing says so to a Writer.
	for len(p) > 0 {
		line, rest, _ := bytes.Cut(p, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		s.log.Info("stdio upstream stderr", "upstream", s.upstream, "line", string(line))
		p = rest
	}
	return n, nil
}
