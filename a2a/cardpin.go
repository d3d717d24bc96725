package a2a

import (
	"fmt"
	"maps"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// A card carries more than its name, description and skills' text that
// clients act on: where to send credentials (security schemes, their
// OAuth and OpenID Connect URLs, the requirements naming them), the
// provider, documentation and icon URLs, the extensions a client may
// activate (and their descriptions, which its model reads), and the
// input and output modes. These are pinned with the card ("send"'s tool
// text in the inventory), a skill's modes and requirements with the
// skill: a change is drift, blocking messages until approved, and
// withholdDrifted leaves the changed members out of the card served.
//
// The pin reads them as either version's readers do (0.3's OpenAPI-style
// schemes with a "type", 1.0's with one member naming the kind, all of an
// OAuth scheme's flows, snake_case spellings), so a 0.3 and a 1.0 reading
// of one card pin the same text.

// cardPin is the pinned text of card c's members beside its name,
// description and skills, or "" when it has none.
func cardPin(c map[string]any) string {
	p := map[string]any{}
	for _, k := range []string{"documentationUrl", "iconUrl", "defaultInputModes", "defaultOutputModes"} {
		if v, ok := member(c, k); ok {
			p[k] = v
		}
	}
	if v, ok := member(c, "provider"); ok {
		p["provider"] = pinRead(v, "AgentProvider")
	}
	if caps, ok := member(c, "capabilities"); ok {
		if m, ok := caps.(map[string]any); ok {
			if v, ok := member(m, "extensions"); ok {
				p["extensions"] = pinRead(v, "[]AgentExtension")
			}
		} else {
			p["capabilities"] = caps
		}
	}
	if v, ok := member(c, "securitySchemes"); ok {
		p["securitySchemes"] = pinSchemes(v)
	}
	p["security"] = pinRequirements(c)
	return pinText(p)
}

// skillPin is the pinned text of skill s's members beside its id, name,
// description, tags and examples, or "".
func skillPin(s map[string]any) string {
	p := map[string]any{"security": pinRequirements(s)}
	for _, k := range []string{"inputModes", "outputModes"} {
		if v, ok := member(s, k); ok {
			p[k] = v
		}
	}
	return pinText(p)
}

func pinText(p map[string]any) string {
	c := cleanEmpty(p)
	if c == nil {
		return ""
	}
	b, err := json.Marshal(c, json.Deterministic(true))
	if err != nil {
		return fmt.Sprint(c)
	}
	return string(b)
}

// pinRead is normalize, reading every member of a one-of (all of an OAuth
// scheme's flows, as 0.3 readers do), and a list of type t for "[]t"; a
// value it cannot read as t is pinned as it is.
func pinRead(v any, t string) any {
	if et, ok := cutList(t); ok {
		xs, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, 0, len(xs))
		for _, x := range xs {
			out = append(out, pinRead(x, et))
		}
		return out
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	if alts, ok := cardOneofs[t]; ok {
		for _, alt := range alts {
			// Every reading of the kind is pinned: a reader by member
			// name reads the member, one of ts-proto's in-memory form
			// (which @a2a-js/sdk's server serves as the 1.0 card:
			// {"scheme": {"$case": kind, "value": …}}) reads the $case
			// one, so a copy of the pinned value in one form must not
			// stand for a changed one in the other.
			reads := map[string]any{}
			read := func(v any) {
				r := pinRead(v, alt[1])
				reads[pinText(map[string]any{"r": r})] = r
			}
			if x, ok := member(m, alt[0]); ok {
				read(x)
			}
			for _, x := range m {
				if o, ok := x.(map[string]any); ok && o["$case"] == alt[0] {
					if v, ok := o["value"]; ok {
						read(v)
					}
				}
			}
			switch len(reads) {
			case 0:
			case 1:
				for _, r := range reads {
					out[alt[0]] = r
				}
			default:
				// Sorted by their text: pinned alike whatever order
				// the card's members come in.
				keys := slices.Sorted(maps.Keys(reads))
				all := make([]any, 0, len(keys))
				for _, k := range keys {
					all = append(all, reads[k])
				}
				out[alt[0]] = all
			}
		}
		return out
	}
	for name, f := range cardSchema[t] {
		x, ok := member(m, name)
		if !ok || name == "pkceRequired" {
			// pkceRequired: a flag 0.3's shape has no member for, not
			// where credentials go; pinned, a 0.3 and a 1.0 reading of
			// one card would differ.
			continue
		}
		switch f.kind {
		case fBool:
			if b, ok := x.(bool); !ok || b {
				out[name] = x // false is the default, left out or not
			}
		case fObjects:
			out[name] = pinRead(x, "[]"+f.t)
		case fObject:
			out[name] = pinRead(x, f.t)
		case fMap:
			xm, ok := x.(map[string]any)
			if !ok || f.t == "" {
				out[name] = x
				continue
			}
			mm := map[string]any{}
			for k, e := range xm {
				mm[k] = pinRead(e, f.t)
			}
			out[name] = mm
		default:
			out[name] = x
		}
	}
	return out
}

func cutList(t string) (string, bool) {
	if len(t) > 2 && t[:2] == "[]" {
		return t[2:], true
	}
	return t, false
}

// pinSchemes reads security schemes in the 1.0 shape, each one as 0.3
// readers read it (by its "type") and as 1.0 readers do (by the member
// naming its kind); a scheme both read differently is pinned as both.
func pinSchemes(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for name, x := range m {
		s, ok := x.(map[string]any)
		if !ok {
			out[name] = x
			continue
		}
		var reads []any
		if _, ok := member(s, "type"); ok {
			reads = append(reads, cleanEmpty(pinRead(schemeV10(s), "SecurityScheme")))
		}
		if r := cleanEmpty(pinRead(s, "SecurityScheme")); r != nil || len(reads) == 0 {
			reads = append(reads, r)
		}
		if len(reads) == 2 && pinText(map[string]any{"x": reads[0]}) == pinText(map[string]any{"x": reads[1]}) {
			reads = reads[:1]
		}
		if len(reads) == 1 {
			out[name] = reads[0]
		} else {
			out[name] = reads
		}
		if out[name] == nil {
			out[name] = x // read as neither: pinned as it is
		}
	}
	return out
}

// schemeV10 spells a 0.3 security scheme (OpenAPI's, with a "type") in
// the 1.0 shape; schemesV03 is its inverse.
func schemeV10(s map[string]any) map[string]any {
	typ, _ := s["type"].(string)
	b := map[string]any{}
	take := func(names ...string) {
		for _, k := range names {
			if v, ok := member(s, k); ok {
				b[k] = v
			}
		}
	}
	take("description")
	kind := ""
	switch typ {
	case "apiKey":
		kind = "apiKeySecurityScheme"
		take("name")
		if v, ok := member(s, "in"); ok {
			b["location"] = v
		}
	case "http":
		kind = "httpAuthSecurityScheme"
		take("scheme", "bearerFormat")
	case "oauth2":
		kind = "oauth2SecurityScheme"
		take("flows", "oauth2MetadataUrl")
	case "openIdConnect":
		kind = "openIdConnectSecurityScheme"
		take("openIdConnectUrl")
	case "mutualTLS":
		kind = "mtlsSecurityScheme"
	default:
		// A type no reader knows: pinned as written.
		return map[string]any{"unknown": s}
	}
	return map[string]any{kind: b}
}

// pinRequirements is the security requirements of obj (a card or a
// skill) in 0.3's shape ({scheme: scopes}), from 0.3's "security" and
// 1.0's "securityRequirements" both, each once, sorted.
func pinRequirements(obj map[string]any) any {
	var all []any
	if v, ok := member(obj, "security"); ok {
		xs, ok := v.([]any)
		if !ok {
			return v
		}
		all = append(all, xs...)
	}
	if v, ok := member(obj, "securityRequirements"); ok {
		xs, ok := v.([]any)
		if !ok {
			return v
		}
		all = append(all, requirementsV03(pinRead(xs, "[]SecurityRequirement"))...)
	}
	seen := map[string]any{}
	for _, r := range all {
		seen[pinText(map[string]any{"r": r})] = r
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		out = append(out, seen[k])
	}
	return out
}

// pinnedFields are the names of the members pinned inside the card's
// pinned members: one spelt in another case or in snake case is refused
// (pinnedVariant), as a reader matching names so would read what the pin
// did not.
var pinnedFields = func() []string {
	names := []string{"type", "in", "security"}
	for _, fields := range cardSchema {
		for k := range fields {
			names = append(names, k)
		}
	}
	for _, alts := range cardOneofs {
		for _, alt := range alts {
			names = append(names, alt[0])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}()

// pinnedVariant reports a member spelt otherwise (spellingVariant) of
// pinnedFields in any object inside the card's pinned members and its
// skills'.
//
// The names of some objects there are not members but of another's
// choosing (named, below): the schemes' (securitySchemes, a
// requirement's), an OAuth flow's scopes. An extension's params are its
// own, whose names no reader takes for the card's. Neither is refused
// for a name that looks like a member's ("token_url", "Password"): a
// card serving them is pinned, not refused.
func pinnedVariant(card jsontext.Value) (string, bool) {
	var why string
	var walk func(v jsontext.Value, named bool)
	walk = func(v jsontext.Value, named bool) {
		switch v.Kind() {
		case '{':
			if w, bad := spellingVariant(v, pinnedFields); bad && why == "" && !named {
				why = w
			}
			eachMember(v, func(k string, x jsontext.Value) {
				switch {
				case named:
					walk(x, false)
				case k == "params":
				default:
					walk(x, k == "scopes" || k == "schemes")
				}
			})
		case '[':
			eachElement(v, func(x jsontext.Value) { walk(x, named) })
		}
	}
	check := func(obj jsontext.Value, names []string) {
		eachMember(obj, func(k string, x jsontext.Value) {
			if slices.Contains(names, k) {
				walk(x, k == "securitySchemes" || k == "security")
			}
		})
	}
	check(card, []string{"provider", "capabilities", "securitySchemes", "security", "securityRequirements"})
	eachMember(card, func(k string, x jsontext.Value) {
		if k == "skills" {
			eachElement(x, func(s jsontext.Value) { check(s, []string{"security", "securityRequirements"}) })
		}
	})
	return why, why != ""
}

func eachMember(obj jsontext.Value, fn func(k string, v jsontext.Value)) {
	_ = intercept.EachMember(obj, func(k string, v jsontext.Value) error { fn(k, v); return nil })
}

func eachElement(arr jsontext.Value, fn func(v jsontext.Value)) {
	_ = intercept.EachElement(arr, func(_ int, v jsontext.Value) error { fn(v); return nil })
}

// cardPinned and skillPinned are the members cardPin and skillPin pin
// (the card's extensions, inside its capabilities, aside).
var (
	cardPinned  = []string{"provider", "documentationUrl", "iconUrl", "securitySchemes", "security", "securityRequirements", "defaultInputModes", "defaultOutputModes"}
	skillPinned = []string{"security", "securityRequirements", "inputModes", "outputModes"}
)

// withholdPinned leaves the pinned members out of c, a drifted card or
// skill; those in required (lists 0.3 readers need) are served empty.
func withholdPinned(c map[string]any, pinned, required []string) {
	for _, k := range pinned {
		if _, ok := c[k]; !ok {
			continue
		}
		if slices.Contains(required, k) {
			c[k] = []any{}
		} else {
			delete(c, k)
		}
	}
}
