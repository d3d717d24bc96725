// @modelcontextprotocol/conformance imports fs.globSync by name, which
// Node 22 added; its server runs never call it. Preloaded with
// `node --import ./globsync.mjs`, this lets it load on Node 20 (the e2e
// baseline): a resolve hook gives that package an fs with a globSync that
// throws. On Node 22 and later it does nothing.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  const shim = 'data:text/javascript,' + encodeURIComponent(
    "export * from 'node:fs'; export { default } from 'node:fs';" +
    "export function globSync() { throw new Error('fs.globSync needs Node 22 or later'); }");
  const hooks = 'data:text/javascript,' + encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/')) {
        return { url: ${JSON.stringify(shim)}, shortCircuit: true };
      }
      return next(specifier, context);
    }`);
  register(hooks);
}
