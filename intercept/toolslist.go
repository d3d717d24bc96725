package intercept

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// toolFields are the members of a tools/list entry that say what a tool
// is: what the inventory pins, the poisoning scan reads and the model is
// shown.
var toolFields = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "execution", "_meta"}

// CheckToolsResult refuses a tools/list result that different readers
// could read differently, so that what the gateway records (the
// inventory's pin, the descriptions the classifier and the poisoning scan
// read) is what the client is shown:
//   - two members of one object, at any depth, whose names differ only
//     in case ("description" and "Description": Go's encoding/json takes
//     the last of either);
//   - a tool field spelt in another case ("Description" alone);
//   - a tool listed twice, a tool without a name, a tool named "*" (which
//     names every tool to an inventory approval).
//
// Duplicate member names and invalid UTF-8 never reach it: decoding
// refuses them.
func CheckToolsResult(result jsontext.Value) error {
	if result.Kind() != '{' {
		return fmt.Errorf("the result is not an object")
	}
	if a, b, found := foldedDuplicate(result); found {
		return fmt.Errorf("members %q and %q differ only in case", a, b)
	}
	var tools jsontext.Value
	err := eachValidMember(result, func(key string, val jsontext.Value) error {
		if key == "tools" {
			tools = val
		} else if strings.EqualFold(key, "tools") {
			return fmt.Errorf("member %q differs from \"tools\" only in case", key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if tools == nil {
		return nil // no tools: nothing to read two ways
	}
	if tools.Kind() != '[' {
		return fmt.Errorf("tools is not an array")
	}
	seen := map[string]bool{}
	return eachElement(tools, func(tool jsontext.Value) error {
		if tool.Kind() != '{' {
			return fmt.Errorf("a tool is not an object")
		}
		name, named := "", false
		err := eachValidMember(tool, func(key string, val jsontext.Value) error {
			if key == "name" && val.Kind() == '"' {
				name, named = unquote(val), true
				return nil
			}
			if k := foldedMatch(key, toolFields); k != "" && k != key {
				return fmt.Errorf("tool member %q differs from %q only in case", key, k)
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case !named || name == "":
			return fmt.Errorf("a tool has no name")
		case strings.IndexFunc(name, UnprintableName) >= 0:
			return fmt.Errorf("tool %q holds a control or bidirectional character", name)
		case name == "*":
			return fmt.Errorf("a tool is named \"*\", which names every tool to an approval")
		case seen[name]:
			return fmt.Errorf("tool %q is listed twice", name)
		}
		seen[name] = true
		return nil
	})
}

// eachElement calls fn for every element of a validated JSON array.
func eachElement(arr jsontext.Value, fn func(jsontext.Value) error) error {
	p := getDecoder(arr)
	defer p.put()
	if _, err := p.dec.ReadToken(); err != nil {
		return err
	}
	for p.dec.PeekKind() != ']' {
		v, err := p.dec.ReadValue()
		if err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

// CaseVariant reports, in a validated JSON object v, two members at any
// depth whose names differ only in case, or a top-level member spelt like
// one of known in another case: what a reader matching names
// case-insensitively (Go's encoding/json) could take for another member
// than the one the gateway read.
func CaseVariant(v jsontext.Value, known []string) (string, bool) {
	if a, b, found := foldedDuplicate(v); found {
		return fmt.Sprintf("members %q and %q differ only in case", a, b), true
	}
	var why string
	_ = eachValidMember(v, func(key string, _ jsontext.Value) error {
		if k := foldedMatch(key, known); k != "" && k != key && why == "" {
			why = fmt.Sprintf("member %q differs from %q only in case", key, k)
		}
		return nil
	})
	return why, why != ""
}
