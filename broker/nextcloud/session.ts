/**
 * What the verbs of one instance share for the life of its client: the connection, the
 * signed cursors, the capabilities cache, the namespace lock and the upload sizes. The
 * client builds one and hands it to every verb; a verb's first parameter names the parts
 * it uses (`Pick<Session, 'conn'>`), so a verb is declared once, in its own module, and
 * the client exposes it as it is (see client.ts).
 */
import type { CapabilitiesCache } from './capabilities.js';
import type { NextcloudConnection } from './connection.js';
import type { CursorCodec } from './cursor.js';
import type { NamespaceLock } from './namespace-lock.js';

export interface Session {
  readonly conn: NextcloudConnection;
  readonly cursors: CursorCodec;
  readonly capabilities: CapabilitiesCache;
  /** Moves, folder creation and trash of this instance, one at a time (namespace-lock.ts). */
  readonly namespace: NamespaceLock;
  /** The configured chunk size of chunked uploads, if any (else the server's, else 16 MiB). */
  readonly chunkSize: number | undefined;
  /** The largest new file sent as one PUT, if configured. */
  readonly putLimit: number | undefined;
  /** A fresh random word for the unique name an item is trashed under (trash.ts). */
  readonly trashTag: () => string;
}
