/** The Nextcloud client: reachable only through the operation pipeline (docs/architecture.md). */
export {
  NextcloudClient,
  type Capabilities,
  type Entry,
  type NextcloudAnswer,
  type NextcloudClientDeps,
  type NextcloudInstance,
  type SearchPage,
  type WriteCondition,
  type Written,
  DEFAULT_CHUNK_SIZE,
} from './client.js';
export { NextcloudError, type NextcloudErrorCode } from './errors.js';
export { buildDavUrl } from './url.js';
