package transport

import "fmt"

// DefaultMaxMessageBytes is the most a reader in this package takes of one
// message (a stdio line, a WebSocket message, the data of a server-sent
// event, a JSON response body) when its options leave the limit zero.
const DefaultMaxMessageBytes = 16 << 20

// maxMessage returns the limit n configures: n itself, or
// DefaultMaxMessageBytes for zero or less.
func maxMessage(n int64) int64 {
	if n > 0 {
		return n
	}
	return DefaultMaxMessageBytes
}

// A TooLongError ends reading at a message longer than the reader's limit.
// Nothing of the message is returned, and nothing more is read: past it
// the stream's framing cannot be trusted.
type TooLongError struct {
	// What names the message: "stdio message", "websocket message",
	// "server-sent event".
	What string
	// Limit is the most the reader takes of one message, in bytes.
	Limit int64
	// midLine: a stdio line's reader stopped inside it, before its
	// newline.
	midLine bool
}

func (e *TooLongError) Error() string {
	return "transport: " + e.What + " longer than " + sizeString(e.Limit)
}

// sizeString writes n bytes the way a limit is configured: in MiB when it
// is a whole number of them.
func sizeString(n int64) string {
	if n > 0 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
