package telemetry

import (
	"strings"
	"testing"
)

// TestAttackScrubSecretArray: of a secret key's JSON array only the first
// element was scrubbed: {"tokens":["a","SECRET2"]} kept SECRET2, and every
// element after it, in JSON, in JSON escaped inside a string and in a
// Python repr. Each string of the array is scrubbed, an object's keys in
// it kept, and the array's end ends it.
func TestAttackScrubSecretArray(t *testing.T) {
	for _, tt := range []struct{ text, kept string }{
		{`{"tokens":["a","SECRET2"]}`, `"]}`},
		{`{"tokens":["a","SECRET2 cut off`, `{"tokens":["`},
		{`{"tokens":["a\\","SECRET2"],"n":1}`, `"n":1`},
		{`{"api_keys": ["k1-first", "SECRET2", "SECRET3"], "user": "alice"}`, `"user": "alice"`},
		{`{"passwords":[["x","SECRET2"],"SECRET3"],"n":1}`, `"n":1`},
		{`{"secrets":[{"name":"db","value":"SECRET2"}],"ok":true}`, `"name":`},
		{`{"msg":"{\"tokens\":[\"a\",\"SECRET2\"],\"next\":\"kept\"}"}`, `\"next\":\"kept\"`},
		{`{'credentials': ['a', 'SECRET2'], 'region': 'eu'}`, `'region': 'eu'`},
		{`tokens=["a","SEC\"RET2"] after`, ` after`},
	} {
		once := Scrub(tt.text)
		if strings.Contains(once, "SECRET") || strings.Contains(once, "RET2") || !strings.Contains(once, tt.kept) {
			t.Errorf("Scrub(%q) = %q: want every element gone and %q kept", tt.text, once, tt.kept)
		}
		if twice := Scrub(once); twice != once {
			t.Errorf("Scrub not stable: %q, then %q", once, twice)
		}
	}
}

// TestScrubArrayNotSecret: an array under a key that is not secret, and
// one whose strings are secret words, not a key's, are kept.
func TestScrubArrayNotSecret(t *testing.T) {
	for _, text := range []string{
		`{"labels":["bug","p1"],"assignees":["alice","bob"]}`,
		`["password", "token", "secret"]`,
		`{"args":["git","push"]}`,
	} {
		if got := Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
}

// TestAttackScrubTokenInURLPath: a bot or webhook token that is a URL's
// path, not its query, was kept: Telegram's bot API and Discord's
// webhooks (Slack's webhooks were scrubbed already).
func TestAttackScrubTokenInURLPath(t *testing.T) {
	for _, tt := range []struct{ text, secret, kept string }{
		{`POST https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage: 401`, "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "/sendMessage: 401"},
		{`GET https://api.telegram.org/file/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/photos/a.jpg`, "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "/photos/a.jpg"},
		{`{"url":"https://discord.com/api/webhooks/123456789012345678/abcDEFghiJKLmnoPQRstuVWXyz0123456789-_abcdefghijklmnopq"}`, "abcDEFghiJKL", `"}`},
		{`https://discordapp.com/api/webhooks/123456789012345678/abcDEFghiJKLmnoPQRstuVWXyz0123456789 failed`, "abcDEFghiJKL", " failed"},
		{`https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX sent`, "XXXXXXXX", " sent"},
		// Teams' incoming webhooks: the path after webhookb2/ is the key.
		{`POST https://acme.webhook.office.com/webhookb2/3f1c2a9e-1b2c-4d5e-8f90-a1b2c3d4e5f6@72f988bf-86f1-41af-91ab-2d7cd011db47/IncomingWebhook/9a8b7c6d5e4f40312a1b2c3d4e5f6a7b/0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6 410 Gone`, "9a8b7c6d5e4f4031", " 410 Gone"},
		{`https://prod-12.westus.logic.azure.com:443/workflows/abc123/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=Qm7vX2pLr9TzK4wYb8NcJd3FhGs6 ok`, "Qm7vX2pLr9TzK4wYb8Nc", " ok"},
	} {
		once := Scrub(tt.text)
		if strings.Contains(once, tt.secret) || !strings.Contains(once, tt.kept) {
			t.Errorf("Scrub(%q) = %q: want %q gone and %q kept", tt.text, once, tt.secret, tt.kept)
		}
		if twice := Scrub(once); twice != once {
			t.Errorf("Scrub not stable: %q, then %q", once, twice)
		}
	}
	for _, text := range []string{
		"https://core.telegram.org/bots/api#sendmessage",
		"https://discord.com/developers/docs/resources/webhook",
		"https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook",
	} {
		if got := Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
}

// TestAttackScrubNestedSecretArrays: secret keys' arrays nested in each
// other are each scanned to their end; scanned one by one, text of
// {"tokens":[{"tokens":[… 8,000 deep cost the square of its length. An
// array inside one already scrubbed is not scanned again: the bytes
// stepped over are counted, not timed, so a loaded machine cannot fail it.
func TestAttackScrubNestedSecretArrays(t *testing.T) {
	const depth = 8000
	deep := strings.Repeat(`{"tokens":[`, depth) + `"SECRET"` + strings.Repeat("]}", depth)
	out, stepped, _ := scanArrays(deep, secretArray)
	if strings.Contains(out, "SECRET") {
		t.Errorf("the string %d arrays deep was kept", depth)
	}
	if stepped > len(deep) {
		t.Errorf("scrubbing arrays %d deep stepped over %d bytes of %d: want each at most once", depth, stepped, len(deep))
	}
	if strings.Contains(Scrub(deep), "SECRET") {
		t.Errorf("Scrub kept the string %d arrays deep", depth)
	}
}

// TestAttackScrubSecretArrayIndented: a secret key's array was scrubbed
// to its line's end, so in indented JSON (JSON.stringify(v, null, 2),
// json.dumps(v, indent=2), MarshalIndent), one element a line, every
// element after the first was kept. An array runs to its closing bracket
// across lines; escaped JSON inside a string has no line ends in it.
func TestAttackScrubSecretArrayIndented(t *testing.T) {
	for _, tt := range []struct{ text, kept string }{
		{"{\n  \"tokens\": [\n    \"SECRET1abc\",\n    \"SECRET2abc\"\n  ],\n  \"user\": \"alice\"\n}", "\"user\": \"alice\""},
		{"{\n  \"api_keys\": [\"SECRET1abc\",\n    \"SECRET2abc\"],\n  \"n\": \"1\"\n}", "\"n\": \"1\""},
		{"{\n\t\"passwords\": [\n\t\t[\n\t\t\t\"SECRET1abc\",\n\t\t\t\"SECRET2abc\"\n\t\t]\n\t],\n\t\"next\": \"kept\"\n}", "\"next\": \"kept\""},
	} {
		once := Scrub(tt.text)
		if strings.Contains(once, "SECRET") || !strings.Contains(once, tt.kept) {
			t.Errorf("Scrub(%q) = %q: want every element gone and %q kept", tt.text, once, tt.kept)
		}
		if twice := Scrub(once); twice != once {
			t.Errorf("Scrub not stable: %q, then %q", once, twice)
		}
	}
}
