package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

const (
	// stderrLineMax bounds a line of a stdio upstream's stderr that is
	// logged: the rest of a longer one is read and not logged, the
	// record saying how many bytes it cut.
	stderrLineMax = 4 << 10
	// stderrBurst and stderrPerSecond bound the rate of an upstream's
	// stderr lines logged, over its children: a burst of stderrBurst,
	// then stderrPerSecond lines a second. The lines over it are counted
	// and the count logged.
	stderrBurst     = 100
	stderrPerSecond = 10
	// stderrQueue bounds the lines read and not yet logged: a log's sink
	// slower than the child's stderr does not hold up the child, which
	// would block on its full pipe and stop answering; the lines that do
	// not fit are counted as dropped.
	stderrQueue = 64
	// stderrReportEvery is how often a count of the lines dropped since
	// the last is logged; the rest is logged as the child's stderr ends.
	stderrReportEvery = 10 * time.Second
	// stderrFlushWait bounds how long the end of a child's stderr waits
	// for its last lines to be logged.
	stderrFlushWait = time.Second
)

// stderrLog is a stdio upstream's stderr: each line it writes becomes a
// record of the gateway's log, attributed to the upstream. Passed to the
// gateway's stderr as it was, an upstream's lines read as the gateway's
// own log records (an "approval granted" it never logged) and reached
// the operator's terminal with their control sequences; as a value of a
// record the log's handler quotes and escapes them.
//
// A line is scrubbed (telemetry.Scrub) as other recorded text is, its
// length bounded, and lines are logged at a bounded rate: a server that
// logs the requests it makes, or one an agent steers to print its
// arguments, does not put credentials into the gateway's log nor flood
// it. The child's stderr is read whatever the log does, and a line not
// logged is counted: a record "stdio upstream stderr lines dropped"
// gives the count, and so does the metric sluice.stdio.stderr_dropped.
//
// One stderrLog serves every child of an upstream (a crashed child is
// restarted): their lines go through one queue, logged by at most one
// goroutine at a time, which ends when no child's stderr is being read
// and the queue is empty. A log sink that stalls holds that one
// goroutine and the queue's lines, however often the child restarts.
type stderrLog struct {
	log      *slog.Logger
	upstream string
	metrics  stderrMetrics   // nil: none
	q        chan stderrLine // lines read and not yet logged
	wake     chan struct{}   // tells the logger a reader ended

	mu       sync.Mutex
	tokens   float64
	refilled time.Time
	dropped  int64 // lines not logged since the last count logged
	readers  int   // ReadFroms running
	logging  bool  // a logger goroutine is running
}

// stderrMetrics is what a telemetry.Metrics may also record about
// stdio upstreams' stderr.
type stderrMetrics interface {
	StderrDropped(upstream string, n int)
}

func newStderrLog(log *slog.Logger, upstream string, metrics stderrMetrics) *stderrLog {
	return &stderrLog{log: log, upstream: upstream, metrics: metrics,
		q: make(chan stderrLine, stderrQueue), wake: make(chan struct{}, 1),
		tokens: stderrBurst, refilled: time.Now()}
}

// stderrLine is a line to log and the bytes cut from its end; or, with
// flushed set, a mark the logger closes flushed at, once the lines
// queued before it are logged.
type stderrLine struct {
	text    string
	cut     int64
	open    int // how deep in a secret key's array it starts (telemetry.SecretArrayDepth)
	flushed chan struct{}
}

// allow reports whether the rate allows one more line to be logged, and
// counts it dropped if not.
func (s *stderrLog) allow() bool {
	s.mu.Lock()
	now := time.Now()
	s.tokens = min(stderrBurst, s.tokens+now.Sub(s.refilled).Seconds()*stderrPerSecond)
	s.refilled = now
	ok := s.tokens >= 1
	if ok {
		s.tokens--
	}
	s.mu.Unlock()
	if !ok {
		s.drop()
	}
	return ok
}

// drop counts one line not logged.
func (s *stderrLog) drop() {
	s.mu.Lock()
	s.dropped++
	s.mu.Unlock()
	if s.metrics != nil {
		s.metrics.StderrDropped(s.upstream, 1)
	}
}

// report logs the count of lines dropped since the last, if any.
func (s *stderrLog) report() {
	s.mu.Lock()
	n := s.dropped
	s.dropped = 0
	s.mu.Unlock()
	if n > 0 {
		s.log.Warn("stdio upstream stderr lines dropped", "upstream", s.upstream, "dropped", n)
	}
}

func (s *stderrLog) line(l stderrLine) {
	args := []any{"upstream", s.upstream, "line", telemetry.ScrubLine(l.text, l.open)}
	if l.cut > 0 {
		args = append(args, "cut_bytes", l.cut)
	}
	s.log.Info("stdio upstream stderr", args...)
}

// logLines logs the queued lines, and the counts of lines dropped every
// stderrReportEvery and as a child's stderr ends, until no reader is left
// and the queue is empty.
func (s *stderrLog) logLines() {
	tick := time.NewTicker(stderrReportEvery)
	defer tick.Stop()
	for {
		select {
		case l := <-s.q:
			if l.flushed != nil {
				s.report()
				close(l.flushed)
			} else {
				s.line(l)
			}
		case <-tick.C:
			s.report()
		case <-s.wake:
		}
		s.mu.Lock()
		if s.readers == 0 && len(s.q) == 0 {
			s.logging = false
			s.mu.Unlock()
			s.report()
			return
		}
		s.mu.Unlock()
	}
}

// ReadFrom logs the lines of r, the child's stderr, to its end: os/exec
// copies the child's stderr with io.Copy, which hands it to ReadFrom. A
// line is logged once its newline comes, however many writes the child
// made it in (an unbuffered stderr writes a line in pieces), and the
// last one at the end of r even if the child did not end it. Lines are
// logged from another goroutine, so that reading r never waits for the
// log; at the end of r, ReadFrom waits up to stderrFlushWait for its
// lines to be logged.
func (s *stderrLog) ReadFrom(r io.Reader) (int64, error) {
	s.mu.Lock()
	s.readers++
	if !s.logging {
		s.logging = true
		go s.logLines()
	}
	s.mu.Unlock()
	defer s.flush()
	br := bufio.NewReaderSize(r, stderrLineMax)
	var n int64
	// How deep in a secret key's JSON array the next line starts: a
	// server logging indented JSON writes its elements a line each,
	// after the key's (TestAttackStderrSecretArrayAcrossLines). Followed
	// over every line, those the rate drops too.
	open := 0
	for {
		l, err := br.ReadSlice('\n')
		n += int64(len(l))
		var line stderrLine
		if errors.Is(err, bufio.ErrBufferFull) {
			line.text = string(cutLastWord(l))
			var skipped int64
			skipped, err = skipLine(br)
			n += skipped
			line.cut = int64(len(l)-len(line.text)) + skipped
		} else {
			line.text = string(bytes.TrimSuffix(bytes.TrimSuffix(l, []byte{'\n'}), []byte{'\r'}))
		}
		line.open = open
		open = telemetry.SecretArrayDepth(line.text, open)
		if len(l) > 0 && s.allow() {
			select {
			case s.q <- line:
			default:
				s.drop()
			}
		}
		switch {
		case err == nil:
		case err == io.EOF:
			return n, nil
		default:
			return n, err
		}
	}
}

// flush ends a ReadFrom: it waits up to stderrFlushWait for the lines
// queued so far to be logged, then lets the logger end if it was the
// last reader.
func (s *stderrLog) flush() {
	t := time.NewTimer(stderrFlushWait)
	defer t.Stop()
	mark := make(chan struct{})
	select {
	case s.q <- stderrLine{flushed: mark}:
		select {
		case <-mark:
		case <-t.C:
		}
	case <-t.C:
	}
	s.mu.Lock()
	s.readers--
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// cutLastWord returns the start of a line cut at its bound, up to its
// last byte that cannot be in a token (a space, a quote, a comma, an
// ampersand): the word the bound cut through (a token whose end is not
// read) is not logged, where the scrubber would not know it for one. Cut
// at the last space alone, a line with none (compact JSON, a query
// string) was logged to the bound, the start of a token with it.
func cutLastWord(l []byte) []byte {
	if i := bytes.LastIndexFunc(l, func(r rune) bool { return !tokenRune(r) }); i >= 0 {
		return l[:i]
	}
	return l
}

// tokenRune reports whether r may be in a credential: base64, base64url,
// hex, a JWT's dots, percent-encoding, a bot token's colon.
func tokenRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_.~+/=:%", r)
}

// skipLine reads br to the end of the line, returning the bytes read and
// nil, or the error that ended it first.
func skipLine(br *bufio.Reader) (int64, error) {
	var n int64
	for {
		l, err := br.ReadSlice('\n')
		n += int64(len(l))
		if !errors.Is(err, bufio.ErrBufferFull) {
			return n, err
		}
	}
}

// Write logs the lines of p, for a writer that does not copy with
// io.Copy; one not ending in a newline is logged as a line too.
func (s *stderrLog) Write(p []byte) (int, error) {
	_, err := s.ReadFrom(bytes.NewReader(p))
	return len(p), err
}
