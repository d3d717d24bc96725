package intercept

import (
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Pages of a list: an upstream pages its tools/list with nextCursor, and
// a client asks for the next page by sending that cursor back. The answer
// does not say which page it is; the request does. So every transport
// tells ObserveToolsPage and ObserveListedPage the cursor of the request
// an answer belongs to (ListCursor), and a page joins a listing only
// under the cursor that listing's last page gave: a later page asked for
// alone (with a cursor given in another listing, or one of the client's
// making) is not taken for the whole list, which would have the tools of
// the pages before it blocked as removed for every client, nor does it
// make its client count as having listed the tools (unlisted.go).

// oddCursor is what ListCursor returns for a cursor spelt otherwise
// than as a string member named cursor: no upstream gives it, so it
// continues no listing.
const oddCursor = "\x00odd cursor"

// ListCursor returns the cursor m, a list request, asks for a page of:
// "" when its params have no member named cursor in any case (the first
// page); the string when they have one named cursor exactly and it is a
// non-empty string; otherwise (Cursor, which a server binding a Go
// struct reads as the cursor, a cursor that is not a string, or empty) a
// value that no upstream gives as a nextCursor: the upstream may take it
// for a cursor, so the page answering it is no first page, and it
// continues no listing.
func ListCursor(m *Message) string {
	if m == nil || m.Params.Kind() != '{' {
		return ""
	}
	cursor := ""
	_ = eachValidRaw(m.Params, func(name, val jsontext.Value) error {
		key := memberName(name)
		switch {
		case !strings.EqualFold(key, "cursor"):
		case cursor == "" && key == "cursor" && val.Kind() == '"' && stringOf(val) != "":
			cursor = stringOf(val)
		default:
			cursor = oddCursor
		}
		return nil
	})
	return cursor
}

// A ToolsPageObserver is a ToolsObserver told which page each tools/list
// result answers: cursor is the cursor of the request (ListCursor), ""
// for the first page. It is used in place of ObserveTools when the
// Observer implements it; the same rules apply.
type ToolsPageObserver interface {
	ObserveToolsPage(upstream string, result jsontext.Value, cursor string)
}

// A ToolsCapsObserver is a ToolsPageObserver told the capabilities the
// client that asked declared (CallContext.ClientCapabilities; nil when none
// or unknown): servers list tools according to them (an elicitation tool
// only to a client that declares elicitation). It is used in place of
// ObserveToolsPage when the Observer implements it.
type ToolsCapsObserver interface {
	ObserveToolsPageWith(upstream string, result jsontext.Value, cursor string, clientCaps jsontext.Value)
}
