package classifier

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// words splits s into lower-case words at every non-alphanumeric rune and
// at camelCase boundaries ("getURLContent" → get, url, content), appending
// them to dst. Words already in lower case are substrings of s.
func words(dst []string, s string) []string {
	start := -1
	hasUpper := false
	flush := func(end int) {
		if start >= 0 && end > start {
			w := s[start:end]
			if hasUpper {
				w = strings.ToLower(w)
			}
			dst = append(dst, w)
		}
		start, hasUpper = -1, false
	}
	var prev rune
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		var letter, upper bool
		if r < utf8.RuneSelf {
			upper = r >= 'A' && r <= 'Z'
			letter = upper || r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		} else {
			upper = unicode.IsUpper(r)
			letter = unicode.IsLetter(r) || unicode.IsDigit(r)
		}
		switch {
		case !letter:
			flush(i)
		case start < 0:
			start = i
			hasUpper = upper
		case upper:
			next := rune(0)
			if i+size < len(s) {
				next, _ = utf8.DecodeRuneInString(s[i+size:])
			}
			// a|B (camel) or AB|c (end of an acronym).
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && unicode.IsLower(next)) {
				flush(i)
				start = i
			}
			hasUpper = true
		}
		prev = r
		i += size
	}
	flush(len(s))
	return dst
}

// cjkVerbs are verbs of Chinese (simplified and traditional), Japanese
// and Korean, which are written without spaces between words: words()
// cannot split them out, so cjkWords finds them in the text and adds the
// English verb of the same meaning.
var cjkVerbs = []struct{ s, en string }{
	// Read
	{"查询", "query"}, {"查詢", "query"}, {"获取", "get"}, {"獲取", "get"}, {"获得", "get"}, {"搜索", "search"},
	{"搜尋", "search"}, {"检索", "search"}, {"檢索", "search"}, {"查看", "view"}, {"列出", "list"},
	{"读取", "read"}, {"讀取", "read"}, {"下载", "download"}, {"下載", "download"}, {"计算", "calculate"},
	{"計算", "calculate"}, {"转换", "convert"}, {"轉換", "convert"}, {"规划", "compute"}, {"規劃", "compute"},
	{"测量", "calculate"}, {"測量", "calculate"}, {"定位", "lookup"}, {"分析", "analyze"}, {"翻译", "translate"},
	{"翻譯", "translate"}, {"识别", "analyze"}, {"識別", "analyze"}, {"检查", "check"}, {"檢查", "check"},
	{"验证", "validate"}, {"驗證", "validate"}, {"统计", "count"}, {"統計", "count"},
	{"取得", "get"}, {"検索", "search"}, {"一覧", "list"}, {"確認", "check"}, {"参照", "view"}, {"照会", "query"},
	{"조회", "query"}, {"검색", "search"}, {"목록", "list"}, {"가져오", "get"}, {"확인", "check"},
	// Write
	{"创建", "create"}, {"創建", "create"}, {"新建", "create"}, {"更新", "update"}, {"修改", "modify"},
	{"编辑", "edit"}, {"編輯", "edit"}, {"删除", "delete"}, {"刪除", "delete"}, {"发送", "send"},
	{"發送", "send"}, {"上传", "upload"}, {"上傳", "upload"}, {"添加", "add"}, {"写入", "write"},
	{"寫入", "write"}, {"保存", "save"}, {"设置", "set"}, {"提交", "submit"}, {"发布", "publish"},
	{"發布", "publish"}, {"移动", "move"}, {"复制", "copy"},
	{"作成", "create"}, {"削除", "delete"}, {"送信", "send"}, {"追加", "add"}, {"編集", "edit"},
	{"変更", "change"}, {"書き込", "write"}, {"登録", "add"}, {"投稿", "publish"},
	{"생성", "create"}, {"수정", "modify"}, {"삭제", "delete"}, {"전송", "send"}, {"추가", "add"},
	{"업데이트", "update"}, {"작성", "write"}, {"등록", "add"},
	// Execute
	{"执行", "execute"}, {"執行", "execute"}, {"运行", "run"}, {"運行", "run"}, {"実行", "execute"},
	{"실행", "execute"}, {"调用", "invoke"}, {"呼び出", "invoke"},
	// Provision
	{"部署", "deploy"}, {"安装", "install"}, {"安裝", "install"}, {"インストール", "install"}, {"설치", "install"},
	{"授权", "authorize"}, {"授權", "authorize"},
}

// cjkWords rewrites the words of s (dst[from:], as words split them) for
// the verbs of scripts written without spaces: the words holding such
// text are replaced, where the first one stood, by the English verbs of
// the CJK verbs in s, in the order they appear.
func cjkWords(dst []string, from int, s string) []string {
	isCJK := func(r rune) bool {
		return r >= 0x2E80 && r <= 0x9FFF || r >= 0xAC00 && r <= 0xD7AF || r >= 0xF900 && r <= 0xFAFF
	}
	if !strings.ContainsFunc(s, isCJK) {
		return dst
	}
	type hit struct {
		at int
		en string
	}
	var hits []hit
	for _, v := range cjkVerbs {
		if i := strings.Index(s, v.s); i >= 0 {
			hits = append(hits, hit{i, v.en})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return a.at - b.at })
	ws := slices.Clone(dst[from:])
	dst = dst[:from]
	done := false
	for _, w := range ws {
		if !strings.ContainsFunc(w, isCJK) {
			dst = append(dst, w)
			continue
		}
		if !done {
			for _, h := range hits {
				dst = append(dst, h.en)
			}
			done = true
		}
	}
	return dst
}

// verbKind is how a word bears on the action type.
type verbKind uint8

const (
	vNone verbKind = iota
	vRead
	vWrite
	vExecute
	vOrchestrate
	vProvision
	// vControl verbs (start, stop, cancel…) execute when their object is a
	// process or job and write otherwise.
	vControl
	// vDelegate verbs (assign, request, ask…) orchestrate when their object
	// is an agent and write otherwise.
	vDelegate
	// vMethod verbs are HTTP methods (post, put): a later verb in the name
	// says more ("API-post-search" searches).
	vMethod
)

var kindAction = [...]string{vRead: Read, vWrite: Write, vExecute: Execute, vOrchestrate: Orchestrate, vProvision: Provision}

func (k verbKind) action() string {
	switch k {
	case vControl, vDelegate, vMethod:
		return Write
	}
	if int(k) < len(kindAction) {
		return kindAction[k]
	}
	return ""
}

// verbs maps base forms to their kind. Pure computations without side
// effects (convert, calculate, validate) count as reads: they retrieve a
// result and change nothing.
var verbs = map[string]verbKind{
	// Read
	"get": vRead, "list": vRead, "read": vRead, "search": vRead, "fetch": vRead, "query": vRead,
	"find": vRead, "show": vRead, "view": vRead, "describe": vRead, "lookup": vRead, "retrieve": vRead,
	"browse": vRead, "inspect": vRead, "count": vRead, "download": vRead, "export": vRead, "stat": vRead,
	"diff": vRead, "explain": vRead, "preview": vRead, "tail": vRead, "cat": vRead, "grep": vRead, "ls": vRead,
	"navigate": vRead, "visit": vRead, "goto": vRead, "screenshot": vRead, "snapshot": vRead, "capture": vRead,
	"convert": vRead, "calculate": vRead, "compute": vRead, "parse": vRead, "validate": vRead, "check": vRead,
	"verify": vRead, "compare": vRead, "analyze": vRead, "analyse": vRead, "summarize": vRead, "echo": vRead,
	"return": vRead, "resolve": vRead, "scan": vRead, "wait": vRead, "ping": vRead, "lint": vRead,
	"watch": vRead, "monitor": vRead, "audit": vRead, "estimate": vRead, "recommend": vRead, "suggest": vRead,
	"geocode": vRead, "translate": vRead, "format": vRead, "render": vRead, "lookups": vRead, "peek": vRead,
	"receive": vRead, "poll": vRead, "extract": vRead, "diagnose": vRead, "detect": vRead, "measure": vRead,
	"research": vRead, "debug": vRead, "learn": vRead, "transform": vRead, "symbolicate": vRead, "test": vRead,
	// Write
	"create": vWrite, "update": vWrite, "write": vWrite, "send": vWrite, "delete": vWrite, "edit": vWrite,
	"move": vWrite, "add": vWrite, "remove": vWrite, "set": vWrite, "patch": vWrite, "insert": vWrite,
	"upsert": vWrite, "modify": vWrite, "rename": vWrite, "append": vWrite, "save": vWrite, "upload": vWrite,
	"push": vWrite, "commit": vWrite, "merge": vWrite, "close": vWrite, "comment": vWrite, "reply": vWrite,
	"react": vWrite, "fork": vWrite, "star": vWrite, "unstar": vWrite, "archive": vWrite, "unarchive": vWrite,
	"publish": vWrite, "unpublish": vWrite, "mark": vWrite, "dismiss": vWrite, "approve": vWrite,
	"reject": vWrite, "submit": vWrite, "fill": vWrite, "click": vWrite, "press": vWrite, "hover": vRead,
	"select": vWrite, "drag": vWrite, "drop": vWrite, "clear": vWrite, "reset": vWrite, "restore": vWrite,
	"lock": vWrite, "unlock": vWrite, "truncate": vWrite, "purge": vWrite, "destroy": vWrite, "wipe": vWrite,
	"erase": vWrite, "mkdir": vWrite, "copy": vWrite, "duplicate": vWrite, "link": vWrite, "unlink": vWrite,
	"invite": vWrite, "follow": vWrite, "unfollow": vWrite, "subscribe": vWrite, "unsubscribe": vWrite,
	"schedule": vWrite, "store": vWrite, "record": vWrite, "remember": vWrite, "forget": vWrite,
	"toggle": vWrite, "enable": vWrite, "disable": vWrite, "resize": vWrite, "manage": vWrite,
	"change": vWrite, "replace": vWrite, "overwrite": vWrite, "import": vWrite, "sync": vWrite,
	"transfer": vWrite, "pay": vWrite, "refund": vWrite, "charge": vWrite, "stage": vWrite, "unstage": vWrite,
	"checkout": vWrite, "apply": vWrite, "upgrade": vWrite, "downgrade": vWrite, "scale": vProvision, "rollback": vProvision, "revert": vWrite,
	"clean": vWrite, "cleanup": vWrite, "generate": vWrite, "upvote": vWrite, "share": vWrite,
	"notify": vWrite, "book": vWrite, "reserve": vWrite, "order": vWrite, "purchase": vWrite, "buy": vWrite,
	"sell": vWrite, "trade": vWrite, "put": vMethod, "post": vMethod, "tag": vWrite, "label": vWrite,
	"assign": vDelegate, "unassign": vWrite, "emulate": vWrite, "type": vWrite, "scroll": vWrite,
	"reorder": vWrite, "transition": vWrite, "attach": vWrite, "detach": vWrite, "mute": vWrite,
	"unmute": vWrite, "pin": vWrite, "unpin": vWrite, "cordon": vWrite, "drain": vWrite,
	"activate": vWrite, "deactivate": vWrite, "freeze": vWrite, "unfreeze": vWrite, "credit": vWrite,
	"debit": vWrite, "reverse": vWrite, "ingest": vWrite, "acknowledge": vWrite, "ack": vWrite, "group": vWrite,
	"ungroup": vWrite, "align": vWrite, "distribute": vWrite, "clone": vWrite, "flatten": vWrite,
	"switch": vWrite, "join": vWrite, "leave": vWrite, "extend": vWrite, "split": vWrite, "swipe": vWrite,
	"tap": vWrite, "longpress": vWrite, "pinch": vWrite, "rotate": vWrite,
	// Execute
	"run": vExecute, "exec": vExecute, "execute": vExecute, "eval": vExecute, "evaluate": vExecute,
	"invoke": vExecute, "call": vExecute, "trigger": vExecute, "launch": vExecute, "rerun": vExecute,
	"kill": vExecute, "terminate": vExecute, "build": vExecute, "compile": vExecute, "shell": vExecute,
	"start": vControl, "stop": vControl, "cancel": vControl, "abort": vControl, "pause": vControl,
	"resume": vControl, "restart": vControl, "interact": vControl, "signal": vControl, "retry": vExecute,
	"reconcile": vExecute, "boot": vControl, "reboot": vControl, "shutdown": vControl, "step": vExecute,
	"infer": vExecute, "predict": vExecute, "transcribe": vExecute, "recognize": vExecute, "synthesize": vExecute,
	"suspend": vControl, "continue": vControl,
	// Orchestrate
	"delegate": vOrchestrate, "spawn": vOrchestrate, "handoff": vOrchestrate, "orchestrate": vOrchestrate,
	"request": vDelegate, "ask": vDelegate, "dispatch": vDelegate,
	// Provision
	"grant": vProvision, "revoke": vProvision, "provision": vProvision, "deprovision": vProvision,
	"deploy": vProvision, "undeploy": vProvision, "install": vProvision, "uninstall": vProvision,
	"authorize": vProvision, "login": vProvision, "logout": vProvision,
	"authenticate": vProvision, "allocate": vProvision, "deallocate": vProvision, "setup": vWrite,
	"configure": vProvision, "reconfigure": vProvision, "renew": vProvision,
	"redeploy": vProvision, "promote": vProvision,
}

// Object words that change what a verb means.
var (
	// jobObjects turn control verbs into Execute.
	jobObjects = wordSet("process", "processes", "job", "jobs", "workflow", "workflows", "run", "runs",
		"task", "tasks", "session", "sessions", "build", "builds", "pipeline", "pipelines", "container",
		"containers", "daemon", "worker", "workers", "thread", "command", "commands", "script", "scripts",
		"server", "service", "services", "terminal", "repl", "pod", "pods", "device", "devices", "simulator",
		"simulators", "emulator", "emulators", "debugger", "vm", "vms", "machine", "machines", "instance", "instances",
		"migration", "migrations", "deployment", "deployments", "execution", "sandbox", "sandboxes", "app", "apps",
		"project", "projects")
	// agentObjects turn delegation verbs into Orchestrate.
	agentObjects = wordSet("agent", "agents", "subagent", "subagents", "copilot", "assistant", "assistants",
		"bot", "bots", "worker_agent", "crew", "swarm")
	// provisionObjects turn any mutating verb into Provision: credentials,
	// access and persistent configuration (§5.2).
	provisionObjects = wordSet("apikey", "apikeys", "token", "tokens", "credential",
		"credentials", "secret", "secrets", "password", "passwords", "certificate", "certificates", "cert",
		"certs", "role", "roles", "permission", "permissions", "policy", "policies", "acl", "acls", "iam",
		"webhook", "webhooks", "config", "configuration", "settings", "collaborator", "collaborators",
		"member", "members", "membership", "oauth", "sso", "ssh", "privilege", "privileges", "access",
		"grant", "grants", "serviceaccount", "deployment", "deployments", "cluster", "clusters",
		"infrastructure", "instance", "instances", "vm", "vms", "dns", "domain", "domains", "firewall", "auth", "perms", "issuer", "issuers",
		// network and access configuration of a cloud (the object names of
		// the AWS, GCP and Azure consoles)
		"keypair", "keypairs", "rbac", "quota", "quotas", "subnet", "subnets", "vpc", "vpcs", "loadbalancer",
		"loadbalancers", "balancer", "balancers", "ingress", "nameserver", "nameservers", "ssl", "tls", "waf",
		"allowlist", "whitelist", "blocklist", "denylist", "nodepool", "nodepools", "replica", "replicas",
		"keyvault", "keyring", "keyrings", "protection", "protections", "manifest", "manifests")
	// provisionHeads are things that outlast the session and carry
	// capability or configuration: created, changed or deleted they are
	// Provision — when the name is about them ("create_project",
	// "cron_delete"), not about something in them ("add_project_item").
	provisionHeads = wordSet("project", "projects", "repository", "repositories", "repo", "repos", "bucket", "buckets",
		"database", "databases", "namespace", "namespaces", "queue", "queues", "route", "routes",
		"binding", "bindings", "cron", "crons", "trigger", "triggers", "schedule", "schedules", "alarm",
		"alarms", "monitor", "monitors", "app", "apps", "application", "applications", "environment",
		"environments", "env", "worker", "workers", "workflow", "workflows", "flag", "flags", "user", "users",
		"workspace", "workspaces", "endpoint", "endpoints", "volume", "volumes", "server", "servers",
		"registry", "registries", "board", "boards", "site", "sites", "organization", "organizations", "org", "orgs",
		"mount", "mounts", "service", "services", "pod", "pods",
		// teams and tenants grant access; functions, stacks, networks,
		// gateways, tunnels, disks and machines are infrastructure; rules,
		// alerts, hooks, integrations, data sources and plugins configure a
		// service
		"team", "teams", "tenant", "tenants", "function", "functions", "stack", "stacks", "network", "networks",
		"gateway", "gateways", "tunnel", "tunnels", "disk", "disks", "machine", "machines", "rule", "rules",
		"alert", "alerts", "hook", "hooks", "integration", "integrations", "datasource", "datasources", "plugin",
		"plugins", "extension", "extensions", "addon", "addons", "zone", "zones", "mailbox", "mailboxes", "cdn")
	// keyQualifiers make "key" a credential ("api key", "ssh key") rather
	// than a keyboard or map key.
	keyQualifiers = wordSet("api", "access", "ssh", "deploy", "private", "secret", "signing", "encryption",
		"license", "gpg", "pgp", "kms", "service", "account", "rotate")
	// linkQualifiers make a link a bearer credential or a standing way to
	// pay or join ("payment link", "billing portal link", "invite link")
	// rather than a hyperlink (the corpus guide's Provision).
	linkQualifiers = wordSet("payment", "billing", "portal", "invite", "invitation", "signup", "login", "magic")
	// accountQualifiers make an account a principal ("service account",
	// "user account") rather than a customer record.
	accountQualifiers = wordSet("service", "user", "admin", "member", "billing")
	// infraWords mark an infrastructure context: mutating a resource there
	// changes service configuration, which is Provision (§5.2).
	infraWords = wordSet("kubernetes", "kubectl", "k8s", "helm", "terraform", "pulumi", "cloudformation",
		"infrastructure", "ansible", "openshift", "nomad", "eks", "gke", "aks")
	// readOnlyWords in a description assert a read.
	readOnlyWords = wordSet("readonly")
)

func wordSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// verbOf returns the kind of word w and its base form, trying simple
// inflections ("creates", "searches", "running", "deleted").
func verbOf(w string) (verbKind, string) {
	if k, ok := verbs[w]; ok {
		return k, w
	}
	if len(w) < 4 {
		return vNone, ""
	}
	for _, suf := range [...]string{"es", "s", "ing", "ed", "d"} {
		stem, ok := strings.CutSuffix(w, suf)
		if !ok || len(stem) < 3 {
			continue
		}
		if k, ok := verbs[stem]; ok {
			return k, stem
		}
		n := len(stem)
		// "running" → "run", "stopped" → "stop".
		if (suf == "ing" || suf == "ed") && stem[n-1] == stem[n-2] {
			if k, ok := verbs[stem[:n-1]]; ok {
				return k, stem[:n-1]
			}
		}
		// "executing" → "execute".
		if suf == "ing" {
			if k, ok := verbs[stem+"e"]; ok {
				return k, stem + "e"
			}
		}
	}
	return vNone, ""
}

// nounCompound reports whether ws[i] is part of a noun such as "pull
// request" or "merge request" rather than a verb.
func nounCompound(ws []string, i int) bool {
	w := ws[i]
	if (w == "request" || w == "requests") && i > 0 {
		switch ws[i-1] {
		case "pull", "merge", "feature", "change", "http", "api":
			return true
		}
	}
	if (w == "merge" || w == "pull" || w == "feature") && i+1 < len(ws) && (ws[i+1] == "request" || ws[i+1] == "requests") {
		return true
	}
	return false
}

// firstSentence returns the start of a description up to its first
// sentence end or line break, at most 200 bytes.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	end := len(s)
	if i := strings.IndexAny(s, "\n\r"); i >= 0 && i < end {
		end = i
	}
	if i := strings.Index(s, ". "); i >= 0 && i < end {
		end = i
	}
	if end > 200 {
		end = 200
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
	}
	return s[:end]
}
