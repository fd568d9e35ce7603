/**
 * A fake Nextcloud (files_trashbin + files_lock) for tests and the demo: WebDAV
 * under /remote.php/dav/files/<user>/, the trashbin, OCS capabilities/user, Basic
 * auth with throttling, and fault switches. It answers as a real Nextcloud 34.0.1 does,
 * or with `series: 29` as 29.0.5 with files_lock 29.0.3 (docs/nextcloud-behaviour.md),
 * for every request the broker makes; the differential test in test/real/differential/
 * holds it to a real server of each series.
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
  Series,
} from './nextcloud/types.js';
export { SERIES } from './nextcloud/series.js';
