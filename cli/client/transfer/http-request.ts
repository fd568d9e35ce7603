/**
 * `request` of node:http, or of node:https for an https URL, loaded through `require`.
 * Importing a built-in as an ES module reads every one of its exports, and node:http's
 * include getters (WebSocket, EventSource, …) that load node's bundled undici: about
 * 20 ms of CPU on every command before it does anything. node:https (TLS, another
 * ~18 ms) loads only when the broker's URL is https.
 */
import { createRequire } from 'node:module';
import type * as Http from 'node:http';

const load = createRequire(import.meta.url);

/** The `request` function for `url`'s protocol. */
export function requestFor(url: URL): typeof Http.request {
  const module = (
    url.protocol === 'https:' ? load('node:https') : load('node:http')
  ) as typeof Http;
  return module.request;
}
