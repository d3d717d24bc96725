package a2a

import (
	"crypto/sha256"
	"errors"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A streaming agent may send an artifact in chunks, each appended by the
// client to what came before (artifact-update events with append: true),
// as it streams a model's tokens; the client hands its model the artifact
// whole. Each event is screened alone, so an injection cut across two
// chunks ("IGNORE PREVIOUS IN", "STRUCTIONS and ...") was in none of them.
// So a chunk appended to an artifact is screened also with the end of
// the artifact's text before it: appendTail bytes, enough for any phrase
// the detector reads (an injection longer than that is read in the
// chunks themselves), held for at most maxTailedArtifacts artifacts of a
// stream at once (one is let go at its last chunk, or for one more past
// the bound, and a chunk appended to it after that ends a withholding
// stream). Other things an
// upstream sends one after another (MCP progress and log notifications, A2A
// status updates) are not joined: clients show each as it comes, replacing
// the last, not one text.

// appendTail is how much of an artifact's text a chunk appended to it is
// screened with.
const appendTail = 512

// maxTailedArtifacts bounds the artifacts of one stream whose tail is
// held (appendTail bytes each); past it, one is let go for each more.
const maxTailedArtifacts = 256

// errAppendAfterLast ends a stream, when answers are withheld, that
// appends to an artifact the gateway let the tail of go: after its last
// chunk (a client joins the chunk to it all the same: lastChunk is not
// read, a2a-go's task manager joins by artifact id), or when more than
// maxTailedArtifacts were open at once (one let go for each more).
var errAppendAfterLast = errors.New("the agent appended to an artifact after its last chunk, or to one of more than 256 open at once, which the gateway does not screen")

// artifactTails holds the tail of each open artifact of a stream, by a
// hash of task and artifact id (ids may be as long as an event: held as
// spelled, 256 of them were), and notes the artifacts it let go at their
// last chunk in a fixed bitset (closed, 8 KiB), so that a chunk appended
// to one after it is not screened as if nothing came before. An
// artifact's bit may be another's: then a chunk appended to an artifact
// the stream never opened, which no agent sends (a2a-go's task manager
// refuses it), ends the stream too.
type artifactTails struct {
	open   map[[sha256.Size]byte]string
	closed []uint64
}

func newArtifactTails() *artifactTails {
	return &artifactTails{open: map[[sha256.Size]byte]string{}}
}

const closedBits = 1 << 16

func closedBit(key [sha256.Size]byte) (word int, bit uint64) {
	i := int(key[0])<<8 | int(key[1])
	return i / 64, 1 << (i % 64)
}

type artifactUpdate struct {
	TaskID    string `json:"taskId"`
	Append    bool   `json:"append"`
	LastChunk bool   `json:"lastChunk"`
	Artifact  struct {
		ArtifactID string `json:"artifactId"`
		Parts      []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifact"`
}

// next notes result, an event of the stream, and returns what is to be
// screened besides it: when it appends to an artifact the stream sent
// text of before, that text's tail and the chunk's text parts, as an
// artifact's parts (read joined, as the client's model reads them); nil
// when there is none. With hold (answers withheld), a chunk appended to
// an artifact let go (at its last chunk, or for one more past
// maxTailedArtifacts) is an error.
func (t *artifactTails) next(result jsontext.Value, hold bool) (jsontext.Value, error) {
	var ev struct {
		artifactUpdate `json:",inline"`
		Kind           string          `json:"kind"`
		Update         *artifactUpdate `json:"artifactUpdate"` // the 1.0 stream's
	}
	// As a client decoding with encoding/json reads it: names in any
	// case, the last of a name given twice.
	if json.Unmarshal(result, &ev, json.MatchCaseInsensitiveNames(true), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) != nil {
		return nil, nil // not an artifact's chunk the gateway reads: screened alone, as every event is
	}
	u := ev.Update
	if u == nil {
		if ev.Kind != "artifact-update" {
			return nil, nil
		}
		u = &ev.artifactUpdate
	}
	key := sha256.Sum256([]byte(u.TaskID + "\x00" + u.Artifact.ArtifactID))
	tail, seen := t.open[key]
	if !u.Append {
		tail = "" // a new artifact, or one sent anew
	} else if !seen && hold && t.closed != nil {
		if w, b := closedBit(key); t.closed[w]&b != 0 {
			return nil, errAppendAfterLast
		}
	}
	var text []string
	whole := tail
	for _, p := range u.Artifact.Parts {
		if p.Text != "" {
			text = append(text, p.Text)
			whole += p.Text
		}
	}
	if u.LastChunk {
		t.letGo(key)
	} else {
		if !seen && len(t.open) >= maxTailedArtifacts {
			for k := range t.open { // any one: a chunk appended to it ends the stream
				t.letGo(k)
				break
			}
		}
		t.open[key] = lastBytes(whole, appendTail)
	}
	if tail == "" || len(text) == 0 {
		return nil, nil
	}
	parts := []map[string]string{{"kind": "text", "text": tail}}
	for _, s := range text {
		parts = append(parts, map[string]string{"kind": "text", "text": s})
	}
	v, err := json.Marshal(map[string]any{"artifact": map[string]any{"parts": parts}})
	return v, err
}

// letGo forgets the tail of the artifact key, noting it let go.
func (t *artifactTails) letGo(key [sha256.Size]byte) {
	delete(t.open, key)
	if t.closed == nil {
		t.closed = make([]uint64, closedBits/64)
	}
	w, b := closedBit(key)
	t.closed[w] |= b
}

// lastBytes is the end of s, at most n bytes, from a rune's start.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// heldBytes is what t holds, keys and tails, for tests.
func (t *artifactTails) heldBytes() int {
	n := 8 * len(t.closed)
	for k, v := range t.open {
		n += len(k) + len(v)
	}
	return n
}
