package approval

import (
	"bytes"
	stdjson "encoding/json"

	"github.com/go-json-experiment/json/jsontext"
)

// Shown returns r as the admin API and console show it: its arguments
// and what else the call sends with the values of secret-looking keys
// redacted and credentials inside strings scrubbed, as the audit log
// keeps them (telemetry.Redactor, with Options.SecretKeys). Whoever
// reads the list of held calls learns that a call sends a password, not
// the password. Only the view is redacted: the approval stays bound to
// the call as held (CallHash).
func (s *Store) Shown(r Request) Request {
	r.Arguments, r.Extra = s.shownJSON(r.Arguments), s.shownJSON(r.Extra)
	return r
}

// unshown stands for a value Shown cannot read, so cannot redact: it is
// not shown rather than shown whole.
var unshown = jsontext.Value(`"[not shown: not JSON the gateway can redact]"`)

func (s *Store) shownJSON(v jsontext.Value) jsontext.Value {
	if len(v) == 0 || string(v) == "null" {
		return v
	}
	// As encoding/json decodes it, which is what Redact takes; numbers
	// as written.
	dec := stdjson.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil || dec.More() {
		return unshown
	}
	var out bytes.Buffer
	enc := stdjson.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(s.redact.Redact(x)) != nil {
		return unshown
	}
	return jsontext.Value(bytes.TrimSuffix(out.Bytes(), []byte("\n")))
}
