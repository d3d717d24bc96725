// A client built on the MCP TypeScript SDK v2 (@modelcontextprotocol/client
// 2.4.0) for v2_test.go: runs one scenario against a server in one era and
// prints one JSON line of what each step saw, volatile values left out, so
// that a run direct and one through Sluice can be compared.
//
//   node v2-client.mjs --era modern|legacy --transport http|sse --url URL [--scenario full|policy]
//   node v2-client.mjs --era modern|legacy --transport stdio -- node v2-server.mjs stdio
//
// --era modern negotiates with server/discover and fails rather than fall
// back; legacy runs initialize. `full` steps: connect, tools_list, echo,
// fail (a tool that throws), unknown (a tool nobody has), progress, ask
// (elicitation and sampling: input_required on 2026-07-28, server→client
// requests on 2025), resources, prompts, list_changed, cancel, headers
// (over HTTP: the Mcp-Method and Mcp-Name each POST carried, and any answer
// that was not 2xx). `policy` calls secret and held (which the gateway's
// policy denies and holds) and echo.
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const argv = process.argv.slice(2);
const opt = name => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
};
const era = opt('era') ?? 'modern';
const transportName = opt('transport') ?? 'http';
const scenario = opt('scenario') ?? 'full';
const sleep = ms => new Promise(r => setTimeout(r, ms));

// What the client sent over HTTP, by JSON-RPC method.
const sent = {};
const badStatus = [];
const recordingFetch = async (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.method === 'POST' && typeof init.body === 'string') {
        for (const m of [JSON.parse(init.body)].flat()) {
            if (!m.method) continue;
            const name = (headers.get('mcp-name') ?? '-').replace(/^extra-.*/, 'extra-NAME');
            const params = [...headers].filter(([k]) => k.startsWith('mcp-param-')).map(([k, v]) => ` ${k}=${v}`);
            const h = `Mcp-Method=${headers.get('mcp-method') ?? '-'} Mcp-Name=${name}${params.sort().join('')}`;
            (sent[m.method] ??= new Set()).add(h);
        }
    }
    const res = await fetch(url, init);
    if (res.status >= 300 && !(init.method === 'GET' && res.status === 405) && !(init.method === 'DELETE')) {
        badStatus.push(`${init.method} ${res.status}`);
    }
    return res;
};

function makeTransport() {
    switch (transportName) {
        case 'http':
            return new StreamableHTTPClientTransport(new URL(opt('url')), { fetch: recordingFetch });
        case 'sse':
            return new SSEClientTransport(new URL(opt('url')), { fetch: recordingFetch });
        case 'stdio': {
            const rest = argv.slice(argv.indexOf('--') + 1);
            return new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'ignore' });
        }
        default:
            throw new Error(`unknown transport ${transportName}`);
    }
}

let onToolsChanged = () => {};
const client = new Client(
    { name: 'v2-test-client', version: '1.0.0' },
    {
        capabilities: { elicitation: { form: {} }, sampling: {} },
        versionNegotiation: { mode: { modern: { pin: '2026-07-28' }, auto: 'auto', legacy: 'legacy' }[era] },
        listChanged: { tools: { onChanged: (err, tools) => onToolsChanged(err, tools) } }
    }
);
// What the SDK reported through onerror (a refused notification, an
// unknown response), by message.
const reported = new Set();
client.onerror = e => reported.add(String(e?.message ?? e).replace(/127\.0\.0\.1:\d+/g, 'HOST'));
const asked = [];
client.setRequestHandler('elicitation/create', async req => {
    if (req.params.requestedSchema?.properties?.approve) {
        // The gateway's approval question (approvals.client_may_answer).
        asked.push(`approval: ${req.params.message.split('\n')[0].replace(/ on upstream "[^"]*"/, '')}`);
        return { action: 'accept', content: { approve: true } };
    }
    asked.push(`elicitation: ${req.params.message}`);
    return { action: 'accept', content: { ok: true } };
});
client.setRequestHandler('sampling/createMessage', async req => {
    asked.push(`sampling: ${req.params.messages[0].content.text}`);
    return { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'test-model' };
});

function errorOf(e) {
    return { error: { name: e?.constructor?.name, code: e?.code, message: String(e?.message ?? e), data: e?.data } };
}
// Tools other runs added (extra-*) are left out.
const toolNames = tools => tools.map(t => t.name).filter(n => !n.startsWith('extra-')).sort();
const texts = r => (r.content ?? []).map(c => c.text ?? c.type);
const callResult = r => ({ isError: r.isError === true, text: texts(r), structuredContent: r.structuredContent });

const steps = {};
async function step(name, fn) {
    try {
        steps[name] = { ok: true, ...(await fn()) };
    } catch (e) {
        steps[name] = { ok: false, ...errorOf(e) };
    }
}

async function full() {
    await step('tools_list', async () => ({ names: toolNames((await client.listTools()).tools) }));
    await step('echo', async () => callResult(await client.callTool({ name: 'echo', arguments: { message: 'hello' } })));
    await step('route', async () => callResult(await client.callTool({ name: 'route', arguments: { region: 'eu-west ü', n: 3 } })));
    await step('fail', async () => callResult(await client.callTool({ name: 'fail', arguments: {} })));
    await step('unknown', async () => callResult(await client.callTool({ name: 'nope', arguments: {} })));
    await step('progress', async () => {
        const seen = [];
        const r = await client.callTool({ name: 'slow', arguments: { steps: 3, ms: 50 } }, { onprogress: p => seen.push(`${p.progress}/${p.total} ${p.message}`) });
        return { ...callResult(r), progress: seen };
    });
    await step('ask', async () => {
        asked.length = 0;
        const r = await client.callTool({ name: 'ask', arguments: {} });
        return { ...callResult(r), asked: [...asked].sort() };
    });
    await step('resources', async () => {
        const list = (await client.listResources()).resources.map(r => r.uri).sort();
        const templates = (await client.listResourceTemplates()).resourceTemplates.map(t => t.uriTemplate).sort();
        const s = (await client.readResource({ uri: 'doc://static' })).contents.map(c => c.text);
        const item = (await client.readResource({ uri: 'doc://item/7' })).contents.map(c => c.text);
        return { list, templates, static: s, item };
    });
    await step('prompts', async () => {
        const list = (await client.listPrompts()).prompts.map(p => p.name).sort();
        const got = (await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })).messages.map(m => m.content.text);
        return { list, got };
    });
    await step('list_changed', async () => {
        const changed = new Promise((resolve, reject) => {
            onToolsChanged = (err, tools) => (err ? reject(err) : resolve(tools));
            setTimeout(() => reject(new Error('no tools/list_changed within 10s')), 10000);
        });
        const mine = `extra-${Math.random().toString(36).slice(2)}`;
        await client.callTool({ name: 'add-tool', arguments: { name: mine } });
        const tools = await changed;
        const extra = callResult(await client.callTool({ name: mine, arguments: {} }));
        return { names: toolNames(tools), listed: tools.some(t => t.name === mine), extra: { ...extra, text: extra.text.map(t => t.replace(mine, 'NAME')) } };
    });
    await step('listen', async () => {
        // 2026-07-28 only: opening and closing a subscription of one's own
        // (closing sends notifications/cancelled).
        const sub = await client.listen({ promptsListChanged: true });
        await sub.close();
        return { honored: sub.honoredFilter };
    });
    await step('resource_updated', async () => {
        const updated = new Promise((resolve, reject) => {
            client.setNotificationHandler('notifications/resources/updated', n => resolve(n.params.uri));
            setTimeout(() => reject(new Error('no notifications/resources/updated within 10s')), 10000);
        });
        let sub;
        if (client.getProtocolEra() === 'modern') {
            sub = await client.listen({ resourceSubscriptions: ['doc://static'] });
        } else {
            await client.subscribeResource({ uri: 'doc://static' });
        }
        await client.callTool({ name: 'touch', arguments: { uri: 'doc://static' } });
        const uri = await updated;
        await sub?.close();
        return { uri };
    });
    await step('cancel', async () => {
        const ac = new AbortController();
        const id = Math.random().toString(36).slice(2);
        let error;
        try {
            await client.callTool({ name: 'slow', arguments: { steps: 50, ms: 100, id } }, { signal: ac.signal, onprogress: () => ac.abort('stop') });
        } catch (e) {
            error = errorOf(e).error;
        }
        // Whether the server saw the cancellation (its handler's signal).
        let seen = false;
        for (let i = 0; i < 30 && !seen; i++) {
            seen = texts(await client.callTool({ name: 'was-cancelled', arguments: { id } }))[0] === 'true';
            if (!seen) await sleep(100);
        }
        const after = callResult(await client.callTool({ name: 'echo', arguments: { message: 'after' } }));
        return { cancelled: error !== undefined, errorName: error?.name, seen, after };
    });
}

async function policy() {
    await step('secret', async () => {
        const r = await client.callTool({ name: 'secret', arguments: {} }).then(callResult, e => errorOf(e));
        if (r.error?.data?.txn_id) r.error.data.txn_id = '<txn>';
        return r;
    });
    await step('held', async () => held('held'));
    // A held tool that, once it runs, asks the client for input.
    await step('held_ask', async () => held('ask'));
    await step('echo', async () => callResult(await client.callTool({ name: 'echo', arguments: { message: 'hello' } })));
}

// held calls a tool the gateway holds; with --admin, the operator approves
// and the same call is sent again.
async function held(name) {
    asked.length = 0;
    const held = await client.callTool({ name, arguments: {} }).then(callResult, e => errorOf(e));
    held.asked = [...asked];
    // A soft deny's envelope is the result's structuredContent, a hard
    // one's the error's data.
    const envelope = held.structuredContent ?? held.error?.data;
    const id = envelope?.data?.approval_id;
    if (id) envelope.data.approval_id = '<id>';
    if (envelope?.txn_id) envelope.txn_id = '<txn>';
    const admin = opt('admin');
    if (!admin || !id) return { held };
    // The operator approves; the same call sent again goes through.
    const res = await fetch(`${admin}/admin/approvals/${id}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${opt('admin-token')}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ action: 'approve', by: 'operator' })
    });
    asked.length = 0;
    const again = await client.callTool({ name, arguments: {} }).then(callResult, e => errorOf(e));
    again.asked = [...asked];
    return { held, approve: res.status, again };
}

const deadline = setTimeout(() => {
    console.log(JSON.stringify({ ok: false, steps, error: 'deadline' }));
    process.exit(1);
}, Number(opt('deadline') ?? 90000));

const transport = makeTransport();
try {
    await client.connect(transport);
    const caps = client.getServerCapabilities() ?? {};
    steps.connect = {
        ok: true,
        era: client.getProtocolEra(),
        protocolVersion: client.getNegotiatedProtocolVersion(),
        server: client.getServerVersion()?.name,
        capabilities: Object.keys(caps).sort()
    };
} catch (e) {
    steps.connect = { ok: false, ...errorOf(e) };
    console.log(JSON.stringify({ ok: false, steps }));
    process.exit(3);
}
if (scenario === 'policy') {
    await policy();
} else if (scenario === 'basic') {
    // Any server with an echo tool (server-everything's).
    await step('echo', async () => callResult(await client.callTool({ name: 'echo', arguments: { message: 'hello' } })));
} else {
    await full();
}
if (transportName !== 'stdio') {
    steps.headers = { ok: true, sent: Object.fromEntries(Object.entries(sent).map(([m, s]) => [m, [...s].sort()]).sort()), badStatus };
}
steps.reported = { ok: reported.size === 0, errors: [...reported].sort() };
await client.close().catch(() => {});
clearTimeout(deadline);
console.log(JSON.stringify({ ok: Object.values(steps).every(s => s.ok), steps }));
process.exit(0);
