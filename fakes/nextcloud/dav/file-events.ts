/**
 * What Nextcloud does beside a change to a file or folder (observed on 34.0.1 and
 * 29.0.5): files_versions saves the content an overwrite replaces (../versions.ts), the
 * Activity app records the change in the stream of each user it reaches
 * (../activity/log.ts): the user who made it, and the sharer when it lies in a share the
 * user received; and admin_audit logs the request's file action (../admin-audit.ts).
 * The WebDAV handlers call these around the change itself.
 */
import type { SharerView } from '../activity/log.js';
import { parentRel } from '../paths.js';
import type { FakeState } from '../state.js';
import type { NodeInfo } from '../store.js';

/** Who made a change, and on which fake. */
export interface ChangeScope {
  readonly state: FakeState;
  readonly user: string;
}

const viewPath = (rel: string): string => `/${rel}`;
const seconds = (ms: number): number => Math.floor(ms / 1000);

/** The sharer's view of `rel` when it lies in a received share (its folder at their root). */
function sharerOf(state: FakeState, rel: string): SharerView | undefined {
  const parts = rel === '' ? [] : rel.split('/');
  for (let n = parts.length; n > 0; n--) {
    const root = parts.slice(0, n).join('/');
    const id = state.store.knownId(root);
    const share = id === undefined ? undefined : state.shares.rootOf(id);
    if (share === undefined) continue;
    const name = parts[n - 1] ?? '';
    return { user: share.owner, path: (own) => `/${name}${own.slice(root.length + 1)}` };
  }
  return undefined;
}

/** Before a write onto `existing`: a file's content is saved as a version. */
export async function beforeOverwrite(
  scope: ChangeScope,
  existing: NodeInfo | undefined,
): Promise<void> {
  if (existing?.kind !== 'file' || !scope.state.faults.versions) return;
  await scope.state.versions.beforeOverwrite({
    fileId: existing.fileId,
    abs: scope.state.store.abs(existing.rel),
    mtimeSeconds: seconds(existing.mtimeMs),
    size: existing.size,
  });
}

/** After a write to `rel` (its final mtime set): the new content's version entry. */
export async function versionWritten(
  scope: ChangeScope,
  before: NodeInfo | undefined,
  rel: string,
): Promise<NodeInfo | undefined> {
  const node = await scope.state.store.info(rel);
  if (node?.kind !== 'file') return undefined;
  if (!scope.state.faults.versions) return node;
  const content = { fileId: node.fileId, mtimeSeconds: seconds(node.mtimeMs), size: node.size };
  if (before?.kind === 'file')
    scope.state.versions.afterOverwrite(seconds(before.mtimeMs), content);
  else scope.state.versions.created(content);
  return node;
}

/**
 * After a write to `rel` (its final mtime set): the new content's version entry, and a
 * created or changed activity by `author` (default: the signed-in user).
 */
export async function written(
  scope: ChangeScope,
  before: NodeInfo | undefined,
  rel: string,
  author = scope.user,
): Promise<void> {
  const node = await versionWritten(scope, before, rel);
  if (node === undefined) return;
  if (author === scope.user)
    scope.state.adminAudit.file(scope.user, {
      kind: before === undefined ? 'created' : 'written',
      fileId: node.fileId,
      path: rel,
      isNew: before === undefined,
    });
  scope.state.activity.file(
    before === undefined ? 'created' : 'changed',
    author,
    scope.user,
    { fileId: node.fileId, path: viewPath(rel) },
    author === scope.user ? sharerOf(scope.state, rel) : undefined,
  );
}

/** A file or folder created at `rel` by the user (MKCOL, COPY). */
export async function created(scope: ChangeScope, rel: string): Promise<void> {
  await fileChange(scope, 'created', rel);
}

/** An item the user restored from the trash bin to `rel`. */
export async function restored(scope: ChangeScope, rel: string): Promise<void> {
  await fileChange(scope, 'restored', rel);
}

async function fileChange(
  scope: ChangeScope,
  change: 'created' | 'restored',
  rel: string,
): Promise<void> {
  const node = await scope.state.store.info(rel);
  if (node === undefined) return;
  if (change === 'created')
    scope.state.adminAudit.file(scope.user, {
      kind: 'created',
      fileId: node.fileId,
      path: rel,
      isNew: true,
    });
  scope.state.activity.file(
    change,
    scope.user,
    scope.user,
    { fileId: node.fileId, path: viewPath(rel) },
    sharerOf(scope.state, rel),
  );
}

/** The item with `fileId` that was at `rel` went to the trash bin (or is gone). */
export function deleted(scope: ChangeScope, rel: string, fileId: number): void {
  scope.state.adminAudit.file(scope.user, { kind: 'deleted', fileId, path: rel });
  scope.state.activity.file(
    'deleted',
    scope.user,
    scope.user,
    { fileId, path: viewPath(rel) },
    sharerOf(scope.state, rel),
  );
}

/** The item now at `to` was moved there from `from` by the user. */
export async function moved(scope: ChangeScope, from: string, to: string): Promise<void> {
  const { store } = scope.state;
  const node = await store.info(to);
  const folder = await store.info(parentRel(to));
  if (node === undefined || folder === undefined) return;
  scope.state.adminAudit.file(scope.user, { kind: 'renamed', fileId: node.fileId, from, to });
  scope.state.activity.moved(
    scope.user,
    scope.user,
    { fileId: node.fileId, path: viewPath(from) },
    { fileId: node.fileId, path: viewPath(to) },
    { fileId: folder.fileId, path: viewPath(folder.rel) },
    sharerOf(scope.state, to),
  );
}
