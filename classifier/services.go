package classifier

import (
	"path"
	"strings"
)

// What a stdio server is, read from the command that starts it.
//
// A local MCP server is usually one of two things: a tool that acts on
// this host (files, shells, git checkouts, local databases, desktop apps,
// language servers) or a client of somebody's API that happens to run
// here (GitHub, Notion, Stripe, a cloud). Where a call goes is decided by
// the second far more often than its openWorldHint or its words admit, so
// the server's identity — the npm package, the Go module, the program — is
// read first: its package words name a third-party service (External), a
// local capability (Local), or software organisations run themselves
// (Intra-org, less surely). A server that names none is taken to front a
// remote API, with a confidence below the high band: most published
// servers do, but the guess is a prior, not evidence.
//
// The word sets are general knowledge of services and capabilities, not
// lists of the corpus's servers (testdata/corpus/README.md).

// serverIdentity returns the package words of a stdio command line: the
// npm package npx runs (its scope and name), the path of a Go module `go
// run` builds (without the host), the program otherwise; a `sh -c` script
// is read for its first command.
func serverIdentity(cmd string) string {
	f := strings.Fields(cmd)
	// "exec npx …", "env A=b npx …", "A=b npx …": the program comes after.
	for len(f) > 0 && (f[0] == "exec" || f[0] == "env" || strings.Contains(f[0], "=")) {
		f = f[1:]
	}
	if len(f) == 0 {
		return ""
	}
	prog := path.Base(f[0])
	args := f[1:]
	switch prog {
	case "sh", "bash":
		for i, a := range args {
			if a == "-c" && i+1 < len(args) {
				script := strings.Trim(strings.Join(args[i+1:], " "), `'"`)
				// The last command of the script is the server ("mkdir …; npx …").
				if j := strings.LastIndexAny(script, ";&|"); j >= 0 {
					script = script[j+1:]
				}
				return serverIdentity(script)
			}
		}
		return ""
	case "npx", "bunx", "pnpx", "uvx", "pipx":
		pkg := ""
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-p" || a == "--package":
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "node-linux") && !strings.HasPrefix(args[i+1], "node@") {
					pkg = args[i+1]
				}
				i++
			case strings.HasPrefix(a, "--package="):
				pkg = strings.TrimPrefix(a, "--package=")
			case strings.HasPrefix(a, "-"):
			default:
				if pkg == "" {
					pkg = a
				}
				i = len(args)
			}
		}
		return stripVersion(pkg)
	case "go":
		for _, a := range args {
			if strings.Contains(a, ".") && strings.Contains(a, "/") && !strings.HasPrefix(a, "-") {
				mod := stripVersion(a)
				if _, rest, ok := strings.Cut(mod, "/"); ok { // drop the host
					return rest
				}
				return mod
			}
		}
		return ""
	case "uv":
		// "uv run server.py", "uv --directory /src/weather run weather.py":
		// the script, else the project directory.
		dir := ""
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case a == "--directory" || a == "--project":
				if i+1 < len(args) {
					dir = path.Base(args[i+1])
				}
				i++
			case a == "run" || a == "tool" || strings.HasPrefix(a, "-"):
			case a == "--with" || a == "--from":
				i++
			default:
				return strings.TrimSuffix(path.Base(a), path.Ext(a))
			}
		}
		return dir
	case "java":
		for i, a := range args {
			if a == "-jar" && i+1 < len(args) {
				return strings.TrimSuffix(path.Base(args[i+1]), ".jar")
			}
		}
		return prog
	case "node", "python", "python3", "deno", "bun":
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				return strings.TrimSuffix(path.Base(a), path.Ext(a))
			}
		}
		return ""
	case "docker", "podman":
		// docker run [flags] IMAGE [COMMAND] [ARG...]: the image is
		// the identity, not a path or flag given to the container.
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "run" || a == "container" && i+1 < len(args) && args[i+1] == "run":
			case strings.HasPrefix(a, "-"):
				if !strings.Contains(a, "=") && containerValueFlag(a) {
					i++
				}
			default:
				return stripVersion(a)
			}
		}
		return prog
	}
	return prog
}

// containerValueFlag reports whether a docker or podman run flag takes a
// value as the next argument (a switch: no map built at start-up).
func containerValueFlag(f string) bool {
	switch f {
	case "-e", "--env", "--env-file", "-v", "--volume", "--mount", "-p", "--publish", "--name", "--network",
		"--net", "-w", "--workdir", "-u", "--user", "--entrypoint", "-l", "--label", "--platform", "--pull", "-m",
		"--memory", "--cpus", "--add-host", "--dns", "-h", "--hostname", "--cap-add", "--cap-drop",
		"--security-opt", "--tmpfs", "--device", "--ulimit", "--restart", "--pid", "--ipc", "--log-driver",
		"--log-opt", "--runtime", "--shm-size", "--stop-signal", "--userns", "--volumes-from", "--cidfile", "--gpus":
		return true
	}
	return false
}

// stripVersion drops "@1.2.3" (not the scope's "@") and ":tag".
func stripVersion(pkg string) string {
	if i := strings.LastIndex(pkg, "@"); i > 0 {
		pkg = pkg[:i]
	}
	if i := strings.LastIndex(pkg, ":"); i > 0 && !strings.Contains(pkg[i:], "/") {
		pkg = pkg[:i]
	}
	return pkg
}

// The knowledge base: well-known services and local tools.
//
// An MCP server is named after what it fronts ("@acme/github-tools",
// "mcp-server-sqlite"), so the words of its identity, looked up here, say
// where its tools reach: a third-party service's API (External) or this
// host (Local). The entries are general knowledge of the ecosystem, not
// of any server measured: the services are the SaaS, cloud and data APIs
// that MCP servers are commonly written for (the categories of the
// modelcontextprotocol/servers README and of the public MCP registries:
// developer platforms, cloud, data, observability, productivity,
// communication, CRM and support, commerce and finance, AI models,
// search and scraping, maps, media, social), and the hosts are the API
// base hosts each vendor's API reference documents. A word that is also
// an everyday English word is in commonWordServices: it names the
// service on a command line only, never in a description.
//
// Software as often run by the organisation itself (Grafana, Jenkins,
// Elasticsearch, PostgreSQL, MongoDB, Kafka, Kubernetes) is not here but
// in selfHosted: where it runs is in the server's URL or environment, not
// its name. GitLab is here: gitlab.com is the common case.

// knownService is one third-party service: the word that names it, other
// words that name it alone, and the hosts of its API (host suffixes).
type knownService struct {
	name  string
	also  string // space-separated
	hosts string // space-separated
}

var knownServices = [...]knownService{
	// Code hosting, CI and developer platforms.
	{"github", "gh", "api.github.com githubusercontent.com"},
	{"gitlab", "", "gitlab.com"},
	{"bitbucket", "", "api.bitbucket.org"},
	{"sourcegraph", "", "sourcegraph.com"},
	{"circleci", "", "circleci.com"},
	{"travis", "", "api.travis-ci.com"},
	{"buildkite", "", "api.buildkite.com"},
	{"codecov", "", "codecov.io"},
	{"sonarcloud", "", "sonarcloud.io"},
	{"snyk", "", "api.snyk.io"},
	{"npmjs", "", "registry.npmjs.org"},
	{"pypi", "", "pypi.org"},
	{"dockerhub", "", "hub.docker.com"},
	{"rapidapi", "", "rapidapi.com"},
	{"swaggerhub", "", "api.swaggerhub.com"},
	{"appstoreconnect", "testflight", "api.appstoreconnect.apple.com"},
	{"context7", "", "context7.com"},
	{"deepwiki", "", "deepwiki.com"},
	{"stackoverflow", "stackexchange", "api.stackexchange.com"},
	// Cloud and hosting.
	{"aws", "amazonaws bedrock dynamodb cloudwatch cloudformation ec2 sqs sns route53 cognito", "amazonaws.com"},
	{"azure", "entra", "management.azure.com azure.com"},
	{"gcp", "bigquery firestore firebase gcloud", "googleapis.com firebaseio.com"},
	{"cloudflare", "", "api.cloudflare.com"},
	{"linode", "akamai", "api.linode.com"},
	{"vultr", "", "api.vultr.com"},
	{"hetzner", "", "api.hetzner.cloud"},
	{"ovh", "ovhcloud", "api.ovh.com"},
	{"alibaba", "aliyun alibabacloud", "aliyuncs.com"},
	{"tencent", "tencentcloud", "tencentcloudapi.com"},
	{"heroku", "", "api.heroku.com"},
	{"netlify", "", "api.netlify.com"},
	{"vercel", "", "api.vercel.com"},
	{"flyio", "", "api.machines.dev"},
	{"railway", "", "backboard.railway.app"},
	{"supabase", "", "supabase.co supabase.com"},
	{"neon", "neondatabase", "console.neon.tech"},
	{"planetscale", "", "api.planetscale.com"},
	{"turso", "", "api.turso.tech"},
	{"upstash", "", "upstash.io"},
	{"snowflake", "", "snowflakecomputing.com"},
	{"databricks", "", "cloud.databricks.com"},
	{"pinecone", "", "pinecone.io"},
	{"motherduck", "", "api.motherduck.com"},
	{"algolia", "", "algolia.net algolia.io"},
	{"fauna", "", "db.fauna.com"},
	{"xata", "", "xata.sh"},
	{"cloudinary", "", "api.cloudinary.com"},
	{"backblaze", "", "backblazeb2.com"},
	{"imgur", "", "api.imgur.com"},
	// Observability, incidents and product analytics.
	{"sentry", "", "sentry.io"},
	{"datadog", "", "api.datadoghq.com datadoghq.eu"},
	{"pagerduty", "", "api.pagerduty.com"},
	{"opsgenie", "", "api.opsgenie.com"},
	{"newrelic", "", "api.newrelic.com"},
	{"honeycomb", "", "api.honeycomb.io"},
	{"betterstack", "", "betterstack.com"},
	{"statuspage", "", "api.statuspage.io"},
	{"bugsnag", "", "api.bugsnag.com"},
	{"posthog", "", "posthog.com"},
	{"mixpanel", "", "mixpanel.com"},
	{"amplitude", "", "amplitude.com"},
	{"statsig", "", "statsigapi.net"},
	{"optimizely", "", "api.optimizely.com"},
	{"hotjar", "", "hotjar.com"},
	// Productivity, documents and collaboration.
	{"google", "gmail gdrive gcal gsheets youtube gsuite", "googleapis.com google.com"},
	{"microsoft365", "office365 m365 msgraph outlook onedrive sharepoint", "graph.microsoft.com"},
	{"slack", "", "slack.com"},
	{"discord", "", "discord.com"},
	{"notion", "notionhq", "api.notion.com"},
	{"dropbox", "", "api.dropboxapi.com"},
	{"box", "", "api.box.com"},
	{"evernote", "", "evernote.com"},
	{"airtable", "", "api.airtable.com"},
	{"smartsheet", "", "api.smartsheet.com"},
	{"coda", "", "coda.io"},
	{"miro", "", "api.miro.com"},
	{"figma", "", "api.figma.com"},
	{"canva", "", "api.canva.com"},
	{"lucid", "lucidchart", "api.lucid.co"},
	{"loom", "", "loom.com"},
	{"calendly", "", "api.calendly.com"},
	{"typeform", "", "api.typeform.com"},
	{"jotform", "", "api.jotform.com"},
	{"surveymonkey", "", "api.surveymonkey.com"},
	{"docusign", "", "docusign.net"},
	{"pandadoc", "", "api.pandadoc.com"},
	{"zoom", "", "api.zoom.us"},
	{"webex", "", "webexapis.com"},
	{"todoist", "", "api.todoist.com"},
	{"ticktick", "", "api.ticktick.com"},
	// Project management.
	{"atlassian", "jira confluence", "atlassian.net atlassian.com"},
	{"linear", "", "api.linear.app"},
	{"asana", "", "app.asana.com"},
	{"trello", "", "api.trello.com"},
	{"clickup", "", "api.clickup.com"},
	{"monday", "", "api.monday.com"},
	{"basecamp", "", "3.basecampapi.com"},
	{"wrike", "", "wrike.com"},
	{"youtrack", "", "youtrack.cloud"},
	// CRM, support and marketing.
	{"hubspot", "", "api.hubapi.com"},
	{"salesforce", "", "salesforce.com"},
	{"zendesk", "", "zendesk.com"},
	{"intercom", "", "api.intercom.io"},
	{"freshdesk", "freshworks freshservice", "freshdesk.com"},
	{"pipedrive", "", "api.pipedrive.com"},
	{"zoho", "", "zohoapis.com"},
	{"helpscout", "", "api.helpscout.net"},
	{"mailchimp", "", "api.mailchimp.com"},
	{"klaviyo", "", "a.klaviyo.com"},
	{"brevo", "sendinblue", "api.brevo.com"},
	// Messaging and email.
	{"twilio", "", "api.twilio.com"},
	{"sendgrid", "", "api.sendgrid.com"},
	{"mailgun", "", "api.mailgun.net"},
	{"postmark", "", "api.postmarkapp.com"},
	{"vonage", "nexmo", "api.nexmo.com"},
	{"messagebird", "", "rest.messagebird.com"},
	{"telegram", "", "api.telegram.org"},
	{"whatsapp", "", "graph.facebook.com"},
	{"wechat", "weixin", "api.weixin.qq.com"},
	{"feishu", "lark", "open.feishu.cn larksuite.com"},
	{"dingtalk", "", "api.dingtalk.com"},
	// Social and content platforms.
	{"twitter", "tweet tweets", "api.twitter.com api.x.com"},
	{"reddit", "", "oauth.reddit.com"},
	{"linkedin", "", "api.linkedin.com"},
	{"facebook", "instagram", "graph.facebook.com"},
	{"tiktok", "douyin", "open.tiktokapis.com"},
	{"bluesky", "bsky", "bsky.social"},
	{"mastodon", "", ""},
	{"pinterest", "", "api.pinterest.com"},
	{"twitch", "", "api.twitch.tv"},
	{"hackernews", "", "hacker-news.firebaseio.com"},
	{"producthunt", "", "api.producthunt.com"},
	{"substack", "", "substack.com"},
	{"weibo", "bilibili zhihu xiaohongshu", ""},
	{"spotify", "", "api.spotify.com"},
	{"soundcloud", "", "api.soundcloud.com"},
	{"vimeo", "", "api.vimeo.com"},
	{"unsplash", "pexels giphy", "api.unsplash.com"},
	{"tmdb", "imdb", "api.themoviedb.org"},
	{"lastfm", "", "ws.audioscrobbler.com"},
	// Commerce, payments, finance and accounting.
	{"stripe", "", "api.stripe.com"},
	{"paypal", "braintree", "api.paypal.com"},
	{"adyen", "", "adyen.com"},
	{"razorpay", "", "api.razorpay.com"},
	{"lemonsqueezy", "", "api.lemonsqueezy.com"},
	{"chargebee", "recurly", "chargebee.com"},
	{"shopify", "myshopify", "myshopify.com"},
	{"woocommerce", "bigcommerce", "api.bigcommerce.com"},
	{"etsy", "ebay", "openapi.etsy.com api.ebay.com"},
	{"amazon", "", "amazon.com"},
	{"gumroad", "", "api.gumroad.com"},
	{"plaid", "", "plaid.com"},
	{"quickbooks", "intuit", "quickbooks.api.intuit.com"},
	{"xero", "", "api.xero.com"},
	{"freshbooks", "", "api.freshbooks.com"},
	{"netsuite", "", "netsuite.com"},
	{"expensify", "brex", "integrations.expensify.com"},
	{"gusto", "rippling bamboohr workday deel", "api.gusto.com"},
	{"coinbase", "", "api.coinbase.com"},
	{"binance", "", "api.binance.com"},
	{"kraken", "", "api.kraken.com"},
	{"alpaca", "", "api.alpaca.markets"},
	{"robinhood", "", "api.robinhood.com"},
	{"alphavantage", "finnhub", "alphavantage.co finnhub.io"},
	{"yahoo", "", "finance.yahoo.com"},
	{"coingecko", "coinmarketcap", "api.coingecko.com"},
	{"etherscan", "infura moralis", "api.etherscan.io"},
	// AI models and inference.
	{"openai", "chatgpt dalle", "api.openai.com"},
	{"anthropic", "", "api.anthropic.com"},
	{"gemini", "vertex", "generativelanguage.googleapis.com"},
	{"mistral", "", "api.mistral.ai"},
	{"cohere", "", "api.cohere.com"},
	{"groq", "", "api.groq.com"},
	{"deepseek", "", "api.deepseek.com"},
	{"openrouter", "", "openrouter.ai"},
	{"togetherai", "", "api.together.xyz"},
	{"huggingface", "hf", "huggingface.co"},
	{"replicate", "", "api.replicate.com"},
	{"stability", "stabilityai", "api.stability.ai"},
	{"elevenlabs", "", "api.elevenlabs.io"},
	{"assemblyai", "deepgram", "api.assemblyai.com api.deepgram.com"},
	{"midjourney", "", ""},
	{"xai", "grok", "api.x.ai"},
	{"perplexity", "", "api.perplexity.ai"},
	// Web search, scraping and research data.
	{"brave", "", "api.search.brave.com"},
	{"tavily", "", "api.tavily.com"},
	{"exa", "", "api.exa.ai"},
	{"serpapi", "serper searchapi", "serpapi.com google.serper.dev"},
	{"bing", "", "api.bing.microsoft.com"},
	{"duckduckgo", "", "duckduckgo.com"},
	{"kagi", "", "kagi.com"},
	{"firecrawl", "", "api.firecrawl.dev"},
	{"apify", "", "api.apify.com"},
	{"browserbase", "browserless hyperbrowser", "api.browserbase.com"},
	{"scrapingbee", "scraperapi zenrows", "app.scrapingbee.com"},
	{"jina", "", "r.jina.ai s.jina.ai"},
	{"diffbot", "", "api.diffbot.com"},
	{"newsapi", "", "newsapi.org"},
	{"wikipedia", "wikidata wikimedia", "wikipedia.org wikidata.org"},
	{"arxiv", "", "export.arxiv.org"},
	{"pubmed", "ncbi", "eutils.ncbi.nlm.nih.gov"},
	{"semanticscholar", "", "api.semanticscholar.org"},
	{"crossref", "openalex", "api.crossref.org api.openalex.org"},
	{"wolfram", "wolframalpha", "api.wolframalpha.com"},
	// Maps, weather, travel.
	{"mapbox", "", "api.mapbox.com"},
	{"tomtom", "", "api.tomtom.com"},
	{"foursquare", "", "api.foursquare.com"},
	{"yelp", "", "api.yelp.com"},
	{"tripadvisor", "", "api.content.tripadvisor.com"},
	{"openweathermap", "openweather weatherapi accuweather", "api.openweathermap.org"},
	{"openmeteo", "", "api.open-meteo.com"},
	{"nasa", "noaa", "api.nasa.gov"},
	{"airbnb", "expedia skyscanner amadeus", ""},
	{"uber", "lyft", "api.uber.com"},
	// Identity, secrets-as-a-service and threat intelligence.
	{"auth0", "", "auth0.com"},
	{"okta", "", "okta.com"},
	{"onepassword", "1password", "1password.com"},
	{"bitwarden", "", "api.bitwarden.com"},
	{"virustotal", "", "virustotal.com"},
	{"shodan", "censys", "api.shodan.io"},
	// Content management and sites.
	{"contentful", "", "api.contentful.com"},
	{"webflow", "", "api.webflow.com"},
	{"wix", "", "wixapis.com"},
	{"squarespace", "", "api.squarespace.com"},
	{"storyblok", "prismic", "api.storyblok.com"},
	// Automation platforms.
	{"zapier", "", "zapier.com"},
	{"ifttt", "", "ifttt.com"},
	{"pipedream", "", "api.pipedream.com"},
	{"kaggle", "", "kaggle.com"},
	// Networking as a service.
	{"tailscale", "", "api.tailscale.com"},
	{"ngrok", "", "api.ngrok.com"},
}

// externalServices are the words naming a knownServices entry.
var externalServices = serviceWords()

func serviceWords() map[string]bool {
	m := map[string]bool{}
	for _, s := range knownServices {
		m[s.name] = true
		for _, w := range strings.Fields(s.also) {
			m[w] = true
		}
	}
	return m
}

// commonWordServices are service names that are also everyday words ("a
// text box", "linear regression"): they name the
// service on a command line only, not in a description.
var commonWordServices = wordSet("linear", "box", "monday", "zoom", "exa", "notion", "intercom", "sentry",
	"discord", "plaid", "replicate", "brave", "canva", "gemini", "stability", "neon", "coda", "kraken",
	"alpaca", "lark", "loom", "gusto", "twitch", "basecamp", "vertex", "entra", "amazon", "yahoo", "deel",
	"travis", "hf", "gh", "railway", "lucid", "fauna", "uber", "jina", "bedrock", "grok",
	"amplitude", "postmark", "honeycomb", "pinecone", "intuit", "rippling", "workday", "snowflake")

// serviceOfHost returns the knownServices name whose API host host is or
// is under; "" if none.
func serviceOfHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, s := range knownServices {
		for _, h := range strings.Fields(s.hosts) {
			if host == h || strings.HasSuffix(host, "."+h) {
				return s.name
			}
		}
	}
	return ""
}

// selfHosted are software that organisations mostly run themselves
// (clusters, databases, queues, CI, monitoring): a server for one
// reaches the organisation's own network unless its URL says otherwise
// (the corpus guide: "a Kubernetes cluster or database the organisation
// runs" is Intra-org).
var selfHosted = wordSet("kubernetes", "k8s", "kubectl", "openshift", "helm", "argocd", "rancher", "nomad",
	"consul", "proxmox", "vsphere", "vmware", "esxi", "jenkins", "grafana", "prometheus", "loki", "elasticsearch",
	"opensearch", "kibana", "kafka", "rabbitmq", "nats", "postgres", "postgresql", "mysql", "mariadb", "mssql",
	"mongodb", "mongo", "clickhouse", "cassandra", "neo4j", "influxdb", "etcd", "minio", "gitea", "keycloak",
	"zabbix", "nagios", "sonarqube", "nexus", "artifactory", "harbor", "airflow", "temporal", "homeassistant",
	"hass", "openhab", "mqtt")

// localCapabilities are words of a server's identity naming what acts on
// this host: the local-only tool categories of the same registries
// (filesystems, shells, version control working copies, embedded
// databases, memory stores, developer tools, desktop applications, pure
// computation).
var localCapabilities = wordSet(
	// files and documents on disk, and local conversions of them
	"filesystem", "fs", "file", "files", "directory", "folder", "pdf", "docx", "xlsx", "pptx", "excel", "csv",
	"markdown", "markitdown", "pandoc", "epub", "latex", "ocr", "tesseract", "ffmpeg", "imagemagick", "exif",
	"obsidian", "logseq", "joplin", "anki", "calibre", "kiwix", "docling", "pymupdf", "libreoffice",
	"powerpoint", "thunderbird", "keepass", "keepassxc", "taskwarrior",
	// shells, processes, terminals
	"shell", "terminal", "bash", "zsh", "powershell", "pwsh", "command", "commander", "exec", "process",
	"processes", "pty", "repl", "desktop", "tmux", "ssh", "iterm", "wezterm", "kitty", "zellij", "wsl",
	"jupyter", "ipython", "marimo",
	// version control working copies
	"git", "mercurial", "hg", "svn",
	// embedded and on-disk stores, memory and knowledge graphs kept by the server
	"sqlite", "sqlite3", "duckdb", "leveldb", "lmdb", "rocksdb", "lancedb", "kuzu", "tinydb", "memory",
	"knowledge", "local", "offline",
	// developer tooling on this machine
	"lsp", "language", "gopls", "eslint", "lint", "linter", "prettier", "ruff", "mypy", "pylint", "clippy",
	"vitest", "jest", "pytest", "debugger", "gdb", "lldb", "delve", "nodejs", "node", "nx", "xcode",
	"xcodebuild", "gradle", "cmake", "bazel", "treesitter", "sitter", "ast", "grep", "ripgrep", "fzf", "ctags",
	"pyright", "tsserver", "vite", "webpack", "storybook", "cargo", "editor", "codebase", "repomix", "ghidra",
	"radare2", "yara", "serena", "vscode", "neovim", "nvim", "vim", "emacs", "jetbrains", "intellij", "docker",
	"podman", "android", "ios", "simulator", "adb", "device", "mobile", "emulator", "vagrant", "virtualbox",
	"qemu", "libvirt",
	// desktop applications and the OS
	"apple", "macos", "mac", "osascript", "applescript", "automator", "reminders", "windows", "linux",
	"clipboard", "screenshot", "keyboard", "mouse", "xdotool", "autohotkey", "imessage", "things3",
	"omnifocus", "raycast", "alfred", "hammerspoon", "keychain", "godot", "unity", "unreal", "blender",
	"ableton", "roblox", "excalidraw", "photoshop", "illustrator", "gimp", "inkscape", "krita", "kicad",
	"freecad", "openscad", "autocad", "sketchup", "rhino", "maya", "houdini", "cinema4d", "touchdesigner",
	"reaper", "musescore", "obs", "qgis", "arduino", "platformio", "midi",
	// local models
	"ollama", "lmstudio", "llamafile",
	// pure computation
	"thinking", "think", "reasoning", "sequential", "scratchpad", "time", "timezone", "datetime", "clock",
	"calculator", "calc", "math", "sympy", "matlab", "octave", "mathematica", "rstudio", "uuid", "regex",
	"diagram", "diagrams", "plantuml", "graphviz", "everything")

var docWords = wordSet("docs", "doc", "documentation", "reference")

// serverZone places a stdio server by its identity: a named third-party
// service is External, a local capability Local, self-hosted software
// Intra-org; "" if it names none.
func serverZone(identity string) (zone string, conf float64) {
	if identity == "" {
		return "", 0
	}
	ws := words(nil, identity)
	if anyIn(ws, externalServices) {
		// The npm scope or Go owner is who publishes the package, not
		// what it does: "@openai/codex-shell-tool-mcp" is a shell. A
		// package named for a local capability alone, under a
		// service's scope, is Local, less surely.
		if pub, name, ok := strings.Cut(identity, "/"); ok && pub != "" {
			nws := words(nil, name)
			if !anyIn(nws, externalServices) && !anyIn(nws, docWords) && anyIn(nws, localCapabilities) {
				return Local, 0.7
			}
		}
		if anyIn(ws, docWords) {
			// A service's documentation server may fetch the docs
			// or ship them: the service says less here.
			return External, 0.8
		}
		if anyIn(ws, localCapabilities) {
			// "aws-diagram", "figma-desktop": the name says both a
			// service and something done on this host.
			return External, 0.8
		}
		return External, 0.9
	}
	if anyIn(ws, docWords) {
		// "apple-docs", "android-docs": documentation about a
		// platform, published by its vendor, not the platform on
		// this host.
		return "", 0
	}
	if anyIn(ws, localCapabilities) {
		return Local, 0.85
	}
	if anyIn(ws, selfHosted) {
		// A cluster or database that organisations run themselves: its
		// address is in the environment, which no descriptor carries.
		return IntraOrg, 0.65
	}
	return "", 0
}

func anyIn(ws []string, set map[string]bool) bool {
	for _, w := range ws {
		if set[w] {
			return true
		}
	}
	return false
}

// commandService returns the knownServices name of a host given on a
// command line without a scheme ("--domain acme.myshopify.com"); "" if
// none.
func commandService(cmd string) string {
	for _, f := range strings.FieldsFunc(cmd, func(r rune) bool { return r == ' ' || r == '=' || r == '"' || r == '\'' || r == ',' }) {
		if strings.Contains(f, "://") || strings.Count(f, ".") < 1 || strings.HasPrefix(f, "-") || strings.ContainsAny(f, "/@") {
			continue
		}
		if s := serviceOfHost(f); s != "" {
			return s
		}
	}
	return ""
}
