/**
 * A fake Nextcloud 29 (files_trashbin + files_lock) for tests and the demo: WebDAV
 * under /remote.php/dav/files/<user>/, the trashbin, OCS capabilities/user, Basic
 * auth with throttling, and fault switches. It answers as a real Nextcloud 29.0.5 with
 * files_lock 29.0.3 does (docs/nextcloud-behaviour.md), for every request the broker
 * makes; the differential test in test/real/differential/ holds it to a real server.
 * Implementation in ./nextcloud/.
 */
export { startFakeNextcloud } from './nextcloud/server.js';
export { nextSecond } from './nextcloud/store.js';
export type {
  CollectionOptions,
  FakeNextcloud,
  FakeNextcloudOptions,
  Faults,
  LockAsOptions,
  RecordedRequest,
} from './nextcloud/types.js';
