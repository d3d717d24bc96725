package policy

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// A path, URL or e-mail address compared literally means something else
// to the upstream: /srv/public/../../etc/shadow starts with /srv/public/,
// https://allowed.example@evil.test/ holds allowed.example. path_clean,
// url_host and email_domain give the form the upstream acts on, and input
// they cannot read fails the condition, which denies.
func TestConditionFunctions(t *testing.T) {
	for _, tc := range []struct {
		fn, in, want string // want "" for an error
	}{
		{"path_clean", "/srv/public/../../etc/shadow", "/etc/shadow"},
		{"path_clean", "/srv/public/./a//b/", "/srv/public/a/b"},
		{"path_clean", `/srv/public\..\..\etc\shadow`, "/etc/shadow"},
		{"path_clean", "../../etc/passwd", "../../etc/passwd"},
		{"path_clean", "/../etc", "/etc"},
		{"path_clean", "/srv/public/a\x00/../../../etc", ""},
		{"path_clean", "", ""},
		{"url_host", "https://allowed.example@evil.test/", "evil.test"},
		{"url_host", "https://allowed.example:pw@evil.test:8443/x", "evil.test"},
		{"url_host", "HTTPS://Allowed.Example./", "allowed.example"},
		{"url_host", "https://evil.test\\@allowed.example/", "evil.test"},
		{"url_host", "  https://evil.test/", "evil.test"},
		{"url_host", "https://%65vil.test/", ""}, // Go refuses escapes in a host; WHATWG decodes them
		{"url_host", "https://ＥＶＩＬ.test/", "evil.test"},
		{"url_host", "https://bücher.example/", "xn--bcher-kva.example"},
		{"url_host", "https://XN--BCHER-KVA.example/", "xn--bcher-kva.example"},
		{"url_host", "http://0x7f.1/", "127.0.0.1"},
		{"url_host", "http://2130706433/", "127.0.0.1"},
		{"url_host", "http://0177.0.0.01/", "127.0.0.1"},
		{"url_host", "http://[0:0::1]:80/", "::1"},
		{"url_host", "http://[::ffff:127.0.0.1]/", "127.0.0.1"},
		{"url_host", "http://[::ffff:7f00:1]/", "127.0.0.1"},
		{"url_host", "http://169.254.169.254/latest", "169.254.169.254"},
		{"url_host", "https://my_host.example/", "my_host.example"},
		{"url_host", "http://1.2.3.4.5/", ""},
		{"url_host", "http://256.256.256.256/", ""},
		{"url_host", "allowed.example/path", ""},
		{"url_host", "mailto:bob@evil.test", ""},
		{"url_host", "https://evil.te\nst/", ""},
		{"url_host", "http://%zz/", ""},
		{"email_domain", "bob@EVIL.test", "evil.test"},
		{"email_domain", `"x@corp.example"@evil.test`, "evil.test"},
		{"email_domain", "Corp <bob@evil.test>", "evil.test"},
		{"email_domain", "bob@corp.example.", ""},
		{"email_domain", "bob@évil.test", "xn--vil-9la.test"},
		{"email_domain", "a@corp.example, b@evil.test", ""},
		{"email_domain", "bob", ""},
		{"email_domain", "", ""},
	} {
		p := atkCompile(t, "default: deny\nrules:\n  - {id: r, when: '"+tc.fn+`(args.s) == args.want', decision: allow}`+"\n")
		d := call("t")
		raw, _ := jsontext.AppendQuote(nil, tc.in)
		want, _ := jsontext.AppendQuote(nil, tc.want)
		d.Parameters = jsontext.Value(`{"s": ` + string(raw) + `, "want": ` + string(want) + `}`)
		got, _ := p.Decide(context.Background(), d)
		switch {
		case tc.want == "" && got.Reason != intercept.ReasonPolicyError:
			t.Errorf("%s(%q): got %s/%s, want an error (policy_error)", tc.fn, tc.in, got.Verdict, got.Reason)
		case tc.want != "" && got.Verdict != intercept.Allow:
			t.Errorf("%s(%q): got %s/%s, want %q", tc.fn, tc.in, got.Verdict, got.Reason, tc.want)
		}
	}
}

// The attacks of TestConditionFunctions against rules written with the
// functions: each is denied, and the calls the rules are meant to let
// through are allowed.
func TestConditionFunctionsInRules(t *testing.T) {
	p := atkCompile(t, `
default: deny
rules:
  - {id: public, match: {match_tool: read_file}, when: 'path_clean(args.path).startsWith("/srv/public/")', decision: allow}
  - {id: fetch, match: {match_tool: fetch}, when: 'url_host(args.url) == "allowed.example" || url_host(args.url).endsWith(".allowed.example")', decision: allow}
  - {id: mail, match: {match_tool: send_email}, when: 'email_domain(args.to) == "corp.example"', decision: allow}
  - {id: no-metadata, match: {match_tool: fetch}, when: 'url_host(args.url) == "169.254.169.254"', decision: deny}
`)
	for _, tc := range []struct {
		tool, args string
		want       intercept.Verdict
	}{
		{"read_file", `{"path": "/srv/public/../../etc/shadow"}`, intercept.Deny},
		{"read_file", `{"path": "/srv/public/..\\..\\etc\\shadow"}`, intercept.Deny},
		{"read_file", `{"path": "/srv/publicity/x"}`, intercept.Deny},
		{"read_file", `{"path": "/srv/public/docs/../a.txt"}`, intercept.Allow},
		{"fetch", `{"url": "https://allowed.example@evil.test/"}`, intercept.Deny},
		{"fetch", `{"url": "https://evil.test\\@allowed.example/"}`, intercept.Deny},
		{"fetch", `{"url": "https://evil-allowed.example/"}`, intercept.Deny},
		{"fetch", `{"url": "https://allowed.example.evil.test/"}`, intercept.Deny},
		{"fetch", `{"url": "http://0xa9.0xfe.0xa9.0xfe/"}`, intercept.Deny},
		{"fetch", `{"url": "HTTPS://Allowed.Example./x"}`, intercept.Allow},
		{"fetch", `{"url": "https://api.allowed.example:8443/v1"}`, intercept.Allow},
		{"send_email", `{"to": "\"x@corp.example\"@evil.test"}`, intercept.Deny},
		{"send_email", `{"to": "bob@corp.example.evil.test"}`, intercept.Deny},
		{"send_email", `{"to": "Bob <bob@CORP.example>"}`, intercept.Allow},
	} {
		d := call(tc.tool)
		d.Parameters = jsontext.Value(tc.args)
		if got, _ := p.Decide(context.Background(), d); got.Verdict != tc.want {
			t.Errorf("%s %s: got %s/%s (rule %q), want %s", tc.tool, tc.args, got.Verdict, got.Reason, got.RuleID, tc.want)
		}
	}
}

// TestURLHostReadsOnlyTheAuthority: url_host failed on a URL whose path
// holds a bare % (https://shop.example/50%-off: browsers and HTTP clients
// send it as it is, Go's url.Parse refuses it), so a rule allowing only
// shop.example denied the call for what follows the host.
func TestURLHostReadsOnlyTheAuthority(t *testing.T) {
	for in, want := range map[string]string{
		"https://shop.example/50%-off":           "shop.example",
		"https://shop.example/a?q=100%":          "shop.example",
		"https://shop.example/#100%":             "shop.example",
		"https://shop.example#@evil.test/":       "shop.example",
		"https://shop.example?@evil.test/":       "shop.example",
		"https://shop.example/@evil.test":        "shop.example",
		"https://evil.test\\50%@shop.example/":   "evil.test",
		"https://shop.example@evil.test/50%-off": "evil.test",
		"https://sh%6Fp.example/":                "",
	} {
		got, err := urlHost(in)
		if want == "" {
			if err == nil {
				t.Errorf("url_host(%q) = %q, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("url_host(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	p := atkCompile(t, `
default: allow
rules:
  - {id: shop-only, match: {match_tool: fetch}, when: 'url_host(args.url) != "shop.example"', decision: deny}
`)
	d := call("fetch")
	d.Parameters = jsontext.Value(`{"url": "https://shop.example/deals/50%-off"}`)
	if got, _ := p.Decide(context.Background(), d); got.Verdict != intercept.Allow {
		t.Errorf("https://shop.example/deals/50%%-off: got %s/%s, want allow", got.Verdict, got.Reason)
	}
}
