// A server built on the MCP TypeScript SDK v2 (@modelcontextprotocol/server
// 2.4.0), serving both eras from one factory, for v2.test: the 2026-07-28
// era (server/discover, per-request envelope, input_required results) and
// the 2025 era (initialize, sessions, server→client requests).
//
//   node v2-server.mjs http   # Streamable HTTP on 127.0.0.1:0; stderr: SLUICE_E2E_READY http://127.0.0.1:PORT/mcp
//   node v2-server.mjs stdio  # stdio (serveStdio)
//
// Over HTTP the modern era is createMcpHandler (per-request instances, its
// own subscriptions/listen); the 2025 era is routed with isLegacyRequest to
// sessionful WebStandardStreamableHTTPServerTransports, as the SDK's
// documentation shows, so that the 2025 server→client requests and
// unsolicited list_changed have a session to go over.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import {
    McpServer,
    ResourceTemplate,
    WebStandardStreamableHTTPServerTransport,
    createMcpHandler,
    fromJsonSchema,
    inputRequired,
    isLegacyRequest
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const mode = process.argv[2];
const sleep = ms => new Promise(r => setTimeout(r, ms));
const obj = (properties, required = []) => fromJsonSchema({ type: 'object', properties, required });
const text = t => ({ content: [{ type: 'text', text: t }] });

// Instances a list change is announced on (2025 sessions, stdio
// connections); the modern HTTP leg announces through handler.notify.
// add-tool registers a tool of the name it is given on every instance.
const live = new Set();
const extras = [];
let handler;
// Ids of slow calls that saw their cancellation.
const cancelled = new Set();

function registerExtras(server) {
    for (const name of extras) {
        if (!server.extras.has(name)) {
            server.extras.add(name);
            server.registerTool(name, { description: 'registered by add-tool', inputSchema: obj({}) }, async () => text(`${name} ran`));
        }
    }
}

function factory({ era }) {
    const server = new McpServer(
        { name: 'v2-test-server', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true }, resources: { listChanged: true, subscribe: true }, prompts: { listChanged: true } } }
    );
    // 2025: resources/subscribe; 2026-07-28 subscribes in subscriptions/listen.
    server.server.setRequestHandler('resources/subscribe', async req => {
        server.subscribed = req.params.uri;
        return {};
    });
    server.registerTool('touch', { description: 'announces that a resource changed', inputSchema: obj({ uri: { type: 'string' } }, ['uri']) }, async ({ uri }) => {
        for (const s of live) {
            if (s.isConnected() && (mode === 'stdio' || s.subscribed === uri)) {
                s.server.sendResourceUpdated({ uri }).catch(() => {});
            }
        }
        handler?.notify.resourceUpdated(uri);
        return text('touched');
    });
    server.registerTool('echo', { description: 'echoes its message', inputSchema: obj({ message: { type: 'string' } }, ['message']) }, async ({ message }) =>
        text(`echo: ${message}`)
    );
    server.registerTool('fail', { description: 'always fails', inputSchema: obj({}) }, async () => {
        throw new Error('fail: it always does');
    });
    server.registerTool('secret', { description: 'a tool the policy denies', inputSchema: obj({}) }, async () => text('secret ran'));
    server.registerTool('held', { description: 'a tool the policy holds', inputSchema: obj({}) }, async () => text('held ran'));
    server.registerTool(
        'slow',
        {
            description: 'reports progress for each step',
            inputSchema: obj({ steps: { type: 'number' }, ms: { type: 'number' }, id: { type: 'string' } }, ['steps'])
        },
        async ({ steps, ms = 200, id }, ctx) => {
            const token = ctx.mcpReq._meta?.progressToken;
            for (let i = 1; i <= steps; i++) {
                if (ctx.mcpReq.signal.aborted) {
                    if (id) cancelled.add(id);
                    return text(`slow: cancelled at ${i}`);
                }
                if (token !== undefined) {
                    await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } });
                }
                await sleep(ms);
            }
            return text(`slow: ${steps} steps`);
        }
    );
    server.registerTool('was-cancelled', { description: 'whether slow call id saw its cancellation', inputSchema: obj({ id: { type: 'string' } }, ['id']) }, async ({ id }) =>
        text(String(cancelled.has(id)))
    );
    // SEP-2243: a 2026-07-28 client over HTTP mirrors region and n into
    // Mcp-Param-Region and Mcp-Param-N, which the server checks.
    server.registerTool(
        'route',
        {
            description: 'takes arguments mirrored into headers',
            inputSchema: obj({ region: { type: 'string', 'x-mcp-header': 'Region' }, n: { type: 'integer', 'x-mcp-header': 'N' } }, ['region'])
        },
        async ({ region, n }) => text(`route: ${region} ${n}`)
    );
    // Written once for both eras: input_required on 2026-07-28, the SDK's
    // legacy shim turns it into elicitation/create and sampling/createMessage
    // requests on a 2025 session.
    server.registerTool('ask', { description: 'asks the user and the model', inputSchema: obj({}) }, async (_args, ctx) => {
        const r = ctx.mcpReq.inputResponses ?? {};
        if (!r.confirm || !r.model) {
            return inputRequired({
                inputRequests: {
                    confirm: inputRequired.elicit({
                        message: 'Go ahead?',
                        requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }
                    }),
                    model: inputRequired.createMessage({
                        messages: [{ role: 'user', content: { type: 'text', text: 'say hi' } }],
                        maxTokens: 10
                    })
                },
                requestState: 'round-1'
            });
        }
        const state = ctx.mcpReq.requestState();
        return text(`ask: action=${r.confirm.action} ok=${r.confirm.content?.ok} model=${r.model.content?.text} state=${state ?? '-'}`);
    });
    server.registerTool('add-tool', { description: 'registers a tool', inputSchema: obj({ name: { type: 'string' } }, ['name']) }, async ({ name }) => {
        extras.push(name);
        for (const s of live) {
            if (s.isConnected()) registerExtras(s); // announces tools/list_changed on the connection
        }
        handler?.notify.toolsChanged();
        return text('added');
    });
    server.extras = new Set();
    registerExtras(server);
    server.registerResource('static', 'doc://static', { mimeType: 'text/plain' }, async uri => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'static text' }]
    }));
    server.registerResource('item', new ResourceTemplate('doc://item/{id}', { list: undefined }), { mimeType: 'text/plain' }, async (uri, { id }) => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${id}` }]
    }));
    server.registerPrompt('greet', { description: 'greets', argsSchema: obj({ name: { type: 'string' } }, ['name']) }, async ({ name }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}` } }]
    }));
    if (mode === 'stdio' || era === 'legacy') {
        live.add(server);
    }
    return server;
}

if (mode === 'stdio') {
    serveStdio(factory, { onerror: e => console.error('v2-server:', e.message) });
} else if (mode === 'http') {
    handler = createMcpHandler(factory, { legacy: 'reject', onerror: e => console.error('v2-server:', e.message) });
    const sessions = new Map();
    const legacy = async request => {
        const id = request.headers.get('mcp-session-id');
        if (id) {
            const t = sessions.get(id);
            return t ? t.handleRequest(request) : new Response('unknown session', { status: 404 });
        }
        const t = new WebStandardStreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: sid => sessions.set(sid, t),
            onsessionclosed: sid => sessions.delete(sid)
        });
        await factory({ era: 'legacy' }).connect(t);
        return t.handleRequest(request);
    };
    const srv = http.createServer(async (req, res) => {
        try {
            const chunks = [];
            for await (const c of req) chunks.push(c);
            const body = Buffer.concat(chunks);
            const request = new Request(`http://${req.headers.host}${req.url}`, {
                method: req.method,
                headers: Object.entries(req.headers).flatMap(([k, v]) => (Array.isArray(v) ? v.map(x => [k, x]) : [[k, v]])),
                body: body.length ? body : undefined
            });
            const response = (await isLegacyRequest(request)) ? await legacy(request) : await handler.fetch(request);
            res.writeHead(response.status, Object.fromEntries(response.headers));
            if (response.body) {
                const reader = response.body.getReader();
                res.on('close', () => reader.cancel().catch(() => {}));
                for (;;) {
                    const { done, value } = await reader.read();
                    if (done) break;
                    res.write(value);
                }
            }
            res.end();
        } catch (e) {
            console.error('v2-server: request failed:', e);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    srv.listen(0, '127.0.0.1', () => console.error(`SLUICE_E2E_READY http://127.0.0.1:${srv.address().port}/mcp`));
} else {
    console.error('usage: node v2-server.mjs http|stdio');
    process.exit(2);
}
