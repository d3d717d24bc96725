// A2A client built on @a2a-js/sdk: runs one scenario against an agent
// (directly or through Sluice) and prints a transcript as JSON, with ids
// and timestamps replaced so that two runs compare equal.
//   node a2a-client.mjs --url BASE [--version 1.0|0.3] [--header 'K: V']... [--scenario basic|send|get|cancel]
//     [--text T] [--task ID] [--raw-ids] [--transport rest] [--hook URL --token T]
// Scenario push (1.0): a message that holds its task open registers a push
// config for --hook/msg with --token, CreateTaskPushNotificationConfig one
// for --hook/set with --token-set and authentication ApiKey --token-cred;
// then get and list. Scenario push-delete deletes config --config of task
// --task, then lists. The card, too, is
// fetched with the --header values (an API key), as a caller behind auth:
// must.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { randomUUID } from 'node:crypto';

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const base = opt('--url');
const version = opt('--version', '1.0');
const headers = {};
args.forEach((a, i) => { if (a === '--header') { const [k, ...v] = args[i + 1].split(':'); headers[k.trim()] = v.join(':').trim(); } });
const scenario = opt('--scenario', 'basic');
const text = opt('--text', 'hello');

const fetchWith = (input, init = {}) => fetch(input, { ...init, headers: { ...(init.headers || {}), ...headers } });

if (scenario === 'verify-card') {
  // Check the card's signature with the SDK's verifier and the JWKS its
  // header names (jku).
  const { verifyAgentCardSignature } = await import('@a2a-js/sdk');
  const { importJWK, decodeProtectedHeader } = await import('jose');
  const card = await (await fetchWith(base.replace(/\/$/, '') + '/.well-known/agent-card.json', { headers: { 'A2A-Version': '1.0' } })).json();
  const out = { signatures: card.signatures?.length ?? 0 };
  try {
    await verifyAgentCardSignature(async (kid, jku) => {
      const jwks = await (await fetch(jku)).json();
      const jwk = jwks.keys.find((k) => k.kid === kid);
      if (!jwk) throw new Error('no key ' + kid + ' at ' + jku);
      return importJWK(jwk, jwk.alg ?? 'EdDSA');
    })(card);
    out.verified = true;
    out.jku = decodeProtectedHeader(card.signatures[0]).jku;
  } catch (e) {
    out.verified = false;
    out.error = String(e?.message ?? e);
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}

let transport;
if (version === '0.3') {
  const card = await (await fetchWith(base.replace(/\/$/, '') + '/.well-known/agent-card.json')).json();
  transport = new LegacyJsonRpcTransport({ endpoint: card.url, fetchImpl: fetchWith });
} else {
  // --transport rest prefers the HTTP+JSON binding the card offers.
  const preferred = opt('--transport', '') === 'rest' ? ['HTTP+JSON'] : undefined;
  const withHeaders = (input, init = {}) => {
    const h = new Headers(init.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    return fetch(input, { ...init, headers: h });
  };
  const authed = scenario.startsWith('push') ? {
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: withHeaders }),
    transports: [new JsonRpcTransportFactory({ fetchImpl: withHeaders }), new RestTransportFactory({ fetchImpl: withHeaders })],
  } : {};
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: preferred, ...authed }));
  const client = await factory.createFromUrl(base);
  transport = client;
}
const call = (f) => f({ serviceParameters: headers });

const ids = new Map();
const rawIds = args.includes('--raw-ids');
const norm = (v) => rawIds ? v : JSON.parse(JSON.stringify(v, (k, x) => {
  if (['id', 'taskId', 'contextId', 'messageId', 'artifactId'].includes(k) && typeof x === 'string') {
    if (!ids.has(x)) ids.set(x, `<${k}-${ids.size}>`);
    return ids.get(x);
  }
  if (k === 'timestamp') return '<time>';
  return x;
}));
const msg = (t) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ content: { $case: 'text', value: t }, metadata: undefined, filename: '', mediaType: '' }], contextId: '', taskId: '', extensions: [], metadata: {}, referenceTaskIds: [] });
const req = (t) => ({ tenant: '', message: msg(t), configuration: undefined, metadata: undefined });
const out = [];
try {
  if (scenario === 'basic') {
    const sent = await call((o) => transport.sendMessage(req(text), o));
    out.push({ send: sent });
    const taskId = sent?.payload?.value?.id ?? sent?.id;
    const streamed = [];
    for await (const ev of transport.sendMessageStream(req(text + ' stream'), { serviceParameters: headers })) streamed.push(ev);
    out.push({ stream: streamed });
    out.push({ get: await call((o) => transport.getTask({ tenant: '', id: taskId, historyLength: undefined }, o)) });
    // A slow task: cancelled while it works, after resubscribing to it.
    const it = transport.sendMessageStream(req('slow'), { serviceParameters: headers });
    const first = (await it.next()).value;
    out.push({ slowFirst: first });
    const slowId = first?.payload?.value?.id ?? first?.id;
    const sub = transport.resubscribeTask({ tenant: '', id: slowId }, { serviceParameters: headers });
    const subFirst = (await sub.next()).value;
    out.push({ resubscribed: subFirst !== undefined });
    const cancelled = await call((o) => transport.cancelTask({ tenant: '', id: slowId, metadata: {} }, o));
    out.push({ cancel: cancelled?.status?.state });
    await it.return?.(); await sub.return?.();
  } else if (scenario === 'push') {
    const hook = opt('--hook'), token = opt('--token');
    const pc = (url, tok, taskId = '', authentication = undefined) => ({ tenant: '', id: '', taskId, url, token: tok, authentication });
    const sent = await call((o) => transport.sendMessage({ tenant: '', message: msg('hold'), metadata: undefined,
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: pc(hook + '/msg', token), returnImmediately: true } }, o));
    out.push({ send: sent });
    const taskId = sent?.payload?.value?.id ?? sent?.id;
    const created = await call((o) => transport.createTaskPushNotificationConfig(pc(hook + '/set', token + '-set', taskId, { scheme: 'ApiKey', credentials: token + '-cred' }), o));
    out.push({ created });
    out.push({ got: await call((o) => transport.getTaskPushNotificationConfig({ tenant: '', taskId, id: created.id }, o)) });
    out.push({ listed: await call((o) => transport.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' }, o)) });
    out.push({ binding: { name: (transport.transport ?? transport).constructor?.name, version: transport.protocolVersion ?? version } });
  } else if (scenario === 'push-delete') {
    const taskId = opt('--task');
    await call((o) => transport.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: opt('--config') }, o));
    out.push({ listed: await call((o) => transport.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' }, o)) });
  } else if (scenario === 'send') {
    out.push({ send: await call((o) => transport.sendMessage(req(text), o)) });
  } else if (scenario === 'get') {
    out.push({ get: await call((o) => transport.getTask({ tenant: '', id: opt('--task'), historyLength: undefined }, o)) });
  } else if (scenario === 'cancel') {
    out.push({ cancel: await call((o) => transport.cancelTask({ tenant: '', id: opt('--task'), metadata: {} }, o)) });
  }
} catch (e) {
  out.push({ error: String(e?.message ?? e) });
}
console.log(JSON.stringify(norm(out)));
process.exit(0);
