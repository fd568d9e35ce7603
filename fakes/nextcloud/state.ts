/** Everything one fake instance knows, shared by its request handlers. */
import type { ActivityLog } from './activity/log.js';
import type { AdminAuditLog } from './admin-audit.js';
import type { CalendarTrash } from './groupware/calendar-trash.js';
import type { Groupware } from './groupware/collections.js';
import type { LockTable } from './locks.js';
import type { ReceivedShares } from './shares.js';
import type { DiskStore } from './store.js';
import type { TrashBin } from './trash.js';
import type { UploadFolders } from './uploads.js';
import type { VersionStore } from './versions.js';
import type { SeriesTraits } from './series.js';
import type { Faults, RecordedRequest } from './types.js';

export interface FakeState {
  user: string;
  password: string;
  faults: Faults;
  requests: RecordedRequest[];
  store: DiskStore;
  trash: TrashBin;
  /** Chunked-upload folders (`/remote.php/dav/uploads/<user>/<id>`). */
  uploads: UploadFolders;
  locks: LockTable;
  /** Shares this user received from others (their roots, by file id). */
  shares: ReceivedShares;
  /** Calendars and address books. */
  groupware: Groupware;
  /** Deleted events (the calendar trash bin). */
  calendarTrash: CalendarTrash;
  /** files_versions: what overwrites replaced, by file id. */
  versions: VersionStore;
  /** The Activity app's rows, every user's. */
  activity: ActivityLog;
  /** The admin_audit app's log lines. */
  adminAudit: AdminAuditLog;
  /** Failed logins since start or the last reset (one client IP: loopback). */
  authFailures: number;
  authDelayScale: number;
  throttleAtFailure: number;
  now: () => number;
  /** The user's quota in bytes (`occ user:setting USER files quota`); null: none. */
  quota: number | null;
  /** How the server series it answers as differs (series.ts). */
  series: SeriesTraits;
}

export function defaultFaults(): Faults {
  return {
    trashbin: true,
    filesLock: true,
    versions: true,
    down: false,
    slowMs: 0,
    propfindDelayMs: 0,
    status: null,
    flipByte: false,
    xHash: 'honest',
    echoAuth: false,
    uploadDeleteForbidden: 0,
    quotaBytes: null,
    putGate: null,
    gate: null,
    putBodyLimit: null,
    activityApp: true,
    groups: [],
  };
}
