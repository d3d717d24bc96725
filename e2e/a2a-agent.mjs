// A2A echo agent for the e2e tests, built on @a2a-js/sdk: JSON-RPC (v1.0 and, with
// legacyCompat, v0.3) and the agent card. It prints its base URL on
// stdout once listening. A message whose text contains "slow" works for
// 1.5 s (cancellable), everything else completes at once.
// PUSH=1: the card says pushNotifications and the SDK's own push store and
// sender (InMemoryPushNotificationStore, DefaultPushNotificationSender)
// deliver each update; a message whose text contains "hold" stays working
// until POST /release, then reports progress (working again) and waits for
// another; GET /seen lists the push configs the agent stored
// (the URL and token it was given) and each push it sent ("ok" or the
// sender's error).
import express from 'express';
import { randomUUID } from 'node:crypto';
import { AGENT_CARD_PATH, A2A_PROTOCOL_VERSION, TaskState, Role, generateAgentCardSignature } from '@a2a-js/sdk';
import { generateKeyPair, exportJWK } from 'jose';
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent, InMemoryPushNotificationStore, DefaultPushNotificationSender } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';

const card = {
  name: 'Echo agent',
  description: 'Echoes what it is sent (Sluice e2e).',
  supportedInterfaces: [
    { url: '', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    { url: '', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    { url: '', protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
  ],
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text'],
  defaultOutputModes: ['text'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Repeats the text it gets.', tags: ['echo'], examples: ['hi'], inputModes: ['text'], outputModes: ['text'], securityRequirements: [] }],
  documentationUrl: '',
  signatures: [],
};

// CARD_SECURITY=1: the card names a provider, an extension, an OAuth
// (authorization code, PKCE) and an OpenID Connect scheme, and requires
// the OAuth one, of the card and of its skill.
if (process.env.CARD_SECURITY === '1') {
  card.provider = { url: 'https://acme.example', organization: 'Acme' };
  card.capabilities.extensions = [{ uri: 'https://acme.example/ext/trace', description: 'Traces calls.', required: false, params: undefined }];
  card.securitySchemes = {
    corp: { scheme: { $case: 'oauth2SecurityScheme', value: { description: 'Acme sign-in.', oauth2MetadataUrl: '', flows: { flow: { $case: 'authorizationCode', value: {
      authorizationUrl: 'https://acme.example/authorize', tokenUrl: 'https://acme.example/token', refreshUrl: '', scopes: { read: 'Read.' }, pkceRequired: true } } } } } },
    oidc: { scheme: { $case: 'openIdConnectSecurityScheme', value: { description: '', openIdConnectUrl: 'https://acme.example/.well-known/openid-configuration' } } },
  };
  card.securityRequirements = [{ schemes: { corp: { list: ['read'] } } }];
  card.skills[0].securityRequirements = [{ schemes: { corp: { list: ['read'] } } }];
}

// REST_ONLY=1: the agent offers (and serves) only the HTTP+JSON binding.
if (process.env.REST_ONLY === '1') card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolBinding === 'HTTP+JSON');

const push = process.env.PUSH === '1';
if (push) card.capabilities.pushNotifications = true;
const seen = { configs: [], pushes: [] };
let release, released;
const hold = () => { released = new Promise((r) => { release = r; }); };
hold();
class NotedStore extends InMemoryPushNotificationStore {
  async save(taskId, context, config) {
    seen.configs.push({ taskId, url: config.url, token: config.token, authentication: config.authentication ?? null });
    return super.save(taskId, context, config);
  }
}
class NotedSender extends DefaultPushNotificationSender {
  async _dispatchNotification(streamResponse, stored, taskId, task) {
    const state = streamResponse.payload?.value?.status?.state ?? null;
    try {
      await super._dispatchNotification(streamResponse, stored, taskId, task);
      seen.pushes.push({ url: stored.config.url, state, result: 'ok' });
    } catch (e) {
      seen.pushes.push({ url: stored.config.url, state, result: String(e?.message ?? e) });
      throw e;
    }
  }
}

const cancelled = new Set();
const text = (s) => ({ content: { $case: 'text', value: s }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const executor = {
  cancelTask: async (taskId) => { cancelled.add(taskId); },
  async execute(ctx, bus) {
    const { taskId, contextId, userMessage } = ctx;
    const said = userMessage.parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join(' ');
    const now = () => new Date().toISOString();
    if (!ctx.task) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now() }, artifacts: [], history: [userMessage], metadata: {} }));
    }
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, timestamp: now() }, metadata: {} }));
    if (said.includes('hold')) {
      await released;
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, timestamp: now() }, metadata: { progress: 'half' } }));
      await released;
    }
    if (said.includes('slow')) {
      for (let i = 0; i < 30 && !cancelled.has(taskId); i++) await new Promise((r) => setTimeout(r, 50));
      if (cancelled.has(taskId)) {
        bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_CANCELED, timestamp: now() }, metadata: {} }));
        return;
      }
    }
    bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: randomUUID(), name: 'echo', description: '', parts: [text('echo: ' + said)], metadata: undefined, extensions: [] }, lastChunk: true, append: false, metadata: undefined }));
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: now() }, metadata: {} }));
  },
};

const pushStore = push ? new NotedStore() : undefined;
const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, undefined, pushStore,
  // A config registered over 0.3 is pushed in 0.3's shape, as the SDK's
  // createLegacyAwarePushNotificationSender sets it up.
  push ? new NotedSender(pushStore, { serializers: { '0.3': new V03PushNotificationSerializer() } }) : undefined);
const app = express();
app.get('/seen', (req, res) => res.json(seen));
app.post('/release', (req, res) => { release(); hold(); res.end(); });
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
if (process.env.REST_ONLY !== '1') app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
app.use('/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
// SIGN_CARD=1: the card is signed (EdDSA) with a key published at
// /.well-known/jwks.json, as the SDK's generateAgentCardSignature does it.
const sign = process.env.SIGN_CARD === '1';
const keys = sign ? await generateKeyPair('EdDSA', { crv: 'Ed25519' }) : null;
const jwk = sign ? { ...(await exportJWK(keys.publicKey)), kid: 'agent-key', alg: 'EdDSA', use: 'sig' } : null;
app.get('/.well-known/jwks.json', (req, res) => (jwk ? res.json({ keys: [jwk] }) : res.status(404).end()));
const server = app.listen(0, '127.0.0.1', async () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  for (const i of card.supportedInterfaces) i.url = base + (i.protocolBinding === 'HTTP+JSON' ? '/rest' : '/rpc');
  if (sign) {
    const signed = await generateAgentCardSignature(keys.privateKey, { alg: 'EdDSA', kid: 'agent-key', typ: 'JOSE', jku: base + '/.well-known/jwks.json' })(card);
    card.signatures = signed.signatures;
  }
  console.log(base);
});
