package a2a

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// A message's decided arguments are its text, data and files (arguments):
// what the agent acts on. But the agent gets the whole request, and every
// other member of it is the caller's to fill too: the message's and each
// part's metadata, its extensions, members no version defines, the
// request's metadata and configuration, the envelope, the A2A-Extensions
// header. Left out of the arguments, a rule reading them (CEL on args, the
// classifier's scan), the approval binding a held message to its exact
// arguments and the audit event's arguments would all see a message other
// than the one sent: an approved "summarize the report" went with a secret
// in its metadata. So whatever of the request the arguments do not already
// hold is added to them under "extra":
//
//	{"text": …, "extra": {"message": {"metadata": …}, "parts": {"0": {"metadata": …}},
//	 "params": {"configuration": …}, "envelope": {…}, "extensions": "…"}}
//
// Left out, as no content: the ids the gateway checks, a messageId and a
// JSON-RPC id of up to 64 bytes (SDK clients make them up afresh for
// every message, a retry too; a longer one is bound), a
// standard kind or role, the skill the decision is named after and the
// A2A fields left empty (null, "", {}, []: SDK clients send unset fields
// so; an empty member of another name is bound, its name the caller's
// data). A message without any of the rest keeps its arguments as they
// were.

// messageRead are the members of a message the arguments hold or the
// gateway checks (ids it owns, refused spellings).
var messageRead = map[string]bool{"parts": true, "taskId": true, "contextId": true,
	"referenceTaskIds": true, "reference_task_ids": true}

// maxFreshMessageID is the longest messageId left out of the arguments:
// SDK clients make a UUID or a counter. A longer one is the caller's data
// to the agent, and bound like any.
const maxFreshMessageID = 64

// a2aMembers are the members A2A messages define (the request's, the
// message's, a part's, a 0.3 file's, either version) and the envelope's:
// an empty one is a field left unset, as SDK clients send them.
var a2aMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true,
	"message": true, "configuration": true, "metadata": true, "tenant": true,
	"kind": true, "messageId": true, "role": true, "parts": true, "extensions": true, "referenceTaskIds": true, "contextId": true, "taskId": true,
	"text": true, "raw": true, "url": true, "data": true, "filename": true, "mediaType": true, "file": true,
	"name": true, "mimeType": true, "uri": true, "bytes": true}

// unset reports whether member k is an A2A field left unset (empty: null,
// "", {}, []), which the arguments leave out. An empty member of another
// name is not: its name is bytes of the caller's choosing the agent gets.
func unset(k string, v jsontext.Value) bool { return a2aMembers[k] && intercept.EmptyValue(v) }

// freshID reports whether a JSON-RPC id is of the kind clients make up
// for every request (a number, a UUID, a counter): one left out of the
// arguments. A longer string is data the agent gets, bound like any.
func freshID(id jsontext.Value) bool {
	return id.Kind() == '0' || id.Kind() == '"' && len(id) <= maxFreshMessageID+2
}

// withExtra adds to args what params (whose message is msg), the
// envelope raw and the A2A-Extensions header ext hold beyond them.
func withExtra(args, params, msg jsontext.Value, raw jsontext.Value, ext string, skill string) (jsontext.Value, error) {
	extra := map[string]any{}
	m := map[string]jsontext.Value{}
	err := intercept.EachMember(msg, func(k string, v jsontext.Value) error {
		switch {
		case messageRead[k], unset(k, v):
		case k == "messageId" && v.Kind() == '"' && len(v) <= maxFreshMessageID+2:
		case k == "kind" && stringIs(v, "message"):
		case k == "role" && stringIs(v, "user", "agent", "ROLE_USER", "ROLE_AGENT"):
		case k == "metadata":
			if rest := without(v, func(k string, v jsontext.Value) bool {
				return (k == "skillId" || k == "skill") && stringIs(v, skill)
			}); rest != nil {
				m[k] = rest
			}
		default:
			m[k] = v.Clone()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(m) > 0 {
		extra["message"] = m
	}
	parts := map[string]jsontext.Value{}
	_ = intercept.EachElement(intercept.Member(msg, "parts"), func(i int, part jsontext.Value) error {
		if rest := partExtra(part); rest != nil {
			parts[strconv.Itoa(i)] = rest
		}
		return nil
	})
	if len(parts) > 0 {
		extra["parts"] = parts
	}
	if rest := without(params, func(k string, _ jsontext.Value) bool { return k == "message" }); rest != nil {
		extra["params"] = rest
	}
	if rest := without(raw, func(k string, v jsontext.Value) bool {
		return k == "jsonrpc" || k == "id" && freshID(v) || k == "method" || k == "params"
	}); rest != nil {
		extra["envelope"] = rest
	}
	if ext != "" {
		extra["extensions"] = ext
	}
	if len(extra) == 0 {
		return args, nil
	}
	v, err := json.Marshal(extra, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return intercept.WithMember(args, "extra", v)
}

// partExtra is what of a part the arguments do not hold (arguments read
// it: its text, its data, its file's name, media type, URI and bytes), or
// nil.
func partExtra(part jsontext.Value) jsontext.Value {
	read := map[string]bool{}
	isString := func(obj jsontext.Value, k string) bool {
		v := intercept.ValidMember(obj, k)
		return v != nil && v.Kind() == '"'
	}
	f := intercept.ValidMember(part, "file")
	var fileRead map[string]bool
	switch {
	case intercept.ValidMember(part, "text") != nil:
		read["text"] = true
	case intercept.ValidMember(part, "data") != nil:
		read["data"] = true
	default:
		// As arguments reads a file part: name, media type and URI from
		// the 0.3 file object (or the part) and the 1.0 part, the bytes
		// from the file object's (or the part's) bytes, else raw.
		src, srcRead := part, read
		if f != nil {
			fileRead = map[string]bool{}
			src, srcRead = f, fileRead
		}
		for _, k := range []string{"name", "mimeType", "uri"} {
			if isString(src, k) {
				srcRead[k] = true
			}
		}
		for k, counterpart := range map[string]string{"filename": "name", "mediaType": "mimeType", "url": "uri"} {
			// Concatenated with the file's own: read as a part of it only
			// when that is empty.
			if isString(part, k) && intercept.ValidStringMember(src, counterpart) == "" {
				read[k] = true
			}
		}
		if intercept.ValidMember(src, "bytes") != nil {
			srcRead["bytes"] = true
		} else if intercept.ValidMember(part, "raw") != nil {
			read["raw"] = true
		}
	}
	if v := intercept.ValidMember(part, "kind"); v != nil && stringIs(v, "text", "data", "file") {
		read["kind"] = true
	}
	rest := map[string]jsontext.Value{}
	_ = intercept.EachMember(part, func(k string, v jsontext.Value) error {
		switch {
		case read[k], unset(k, v):
		case k == "file" && fileRead != nil && v.Kind() == '{':
			if fr := without(v, func(k string, _ jsontext.Value) bool { return fileRead[k] }); fr != nil {
				rest[k] = fr
			}
		default:
			rest[k] = v.Clone()
		}
		return nil
	})
	if len(rest) == 0 {
		return nil
	}
	v, err := json.Marshal(rest, json.Deterministic(true))
	if err != nil {
		return part.Clone() // all of it, then
	}
	return v
}

// without is obj without the members drop names and the A2A fields left
// unset, or nil when nothing is left. A value that is not an object is
// itself.
func without(obj jsontext.Value, drop func(k string, v jsontext.Value) bool) jsontext.Value {
	if obj == nil || intercept.EmptyValue(obj) {
		return nil
	}
	if obj.Kind() != '{' {
		return obj.Clone()
	}
	rest := map[string]jsontext.Value{}
	_ = intercept.EachMember(obj, func(k string, v jsontext.Value) error {
		if !drop(k, v) && !unset(k, v) {
			rest[k] = v.Clone()
		}
		return nil
	})
	if len(rest) == 0 {
		return nil
	}
	v, err := json.Marshal(rest, json.Deterministic(true))
	if err != nil {
		return obj.Clone()
	}
	return v
}

// stringIs reports whether v is a JSON string equal to one of ss.
func stringIs(v jsontext.Value, ss ...string) bool {
	if v.Kind() != '"' {
		return false
	}
	s := intercept.ValidString(v)
	for _, x := range ss {
		if s == x {
			return true
		}
	}
	return false
}
