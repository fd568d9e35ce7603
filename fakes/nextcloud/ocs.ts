/**
 * OCS endpoints: capabilities (public, reduced set without credentials), the
 * current user, and the files_lock lock API. `?format=json` answers JSON, else XML.
 */
import { randomUUID } from 'node:crypto';
import { activityApi } from './activity/api.js';
import { ocsReply, type OcsContext } from './ocs-reply.js';
import type { Reply } from './reply.js';
import { requestIdRule } from './request-id.js';
import type { FakeState } from './state.js';
import { versionOf } from './series.js';
import { escapeXml } from './xml.js';

/**
 * Wrong credentials on an OCS route (observed): 401 with its own realm, OCS status 997;
 * an XML envelope, or JSON where asked for and the series answers so (34).
 */
export function ocsUnauthorised(reply: Reply, json: boolean): void {
  if (json) {
    reply.json(
      401,
      {
        ocs: {
          meta: { status: 'failure', statuscode: 997, message: `Unauthorised${reply.leak()}` },
          data: [],
        },
      },
      { 'WWW-Authenticate': 'Basic realm="Authorisation Required"' },
    );
    return;
  }
  reply.send(
    401,
    '<?xml version="1.0"?>\n<ocs>\n <meta>\n  <status>failure</status>\n  <statuscode>997</statuscode>\n' +
      `  <message>Unauthorised${escapeXml(reply.leak())}</message>\n </meta>\n <data/>\n</ocs>\n`,
    {
      'Content-Type': 'text/xml; charset=UTF-8',
      'WWW-Authenticate': 'Basic realm="Authorisation Required"',
    },
  );
}

function capabilities(ctx: OcsContext): unknown {
  const { faults } = ctx.state;
  const core = { pollinterval: 60, 'webdav-root': 'remote.php/webdav', 'reference-api': true };
  const caps: Record<string, unknown> = { core };
  if (ctx.user !== undefined) {
    caps.files = {
      bigfilechunking: true,
      blacklisted_files: ['.htaccess'],
      comments: true,
      ...(faults.versions
        ? { versioning: true, version_labeling: true, version_deletion: true }
        : {}),
      ...(faults.trashbin ? { undelete: true, delete_from_trash: true } : {}),
      ...(faults.filesLock ? { locking: '1.0', 'api-feature-lock-type': true } : {}),
    };
    caps.dav = { chunking: '1.0', bulkupload: '1.0' };
  }
  return {
    version: {
      ...ctx.state.series.version,
      string: versionOf(ctx.state.series),
      edition: '',
      extendedSupport: false,
    },
    capabilities: caps,
  };
}

function lockData(state: FakeState, fileId: number): unknown {
  const lock = state.locks.get(fileId);
  if (!lock) return [];
  return {
    id: fileId,
    fileId,
    type: lock.type === 'token' ? 2 : 0,
    owner: lock.owner,
    // Observed: a token lock shows its LOCK body's owner text and its bare uuid.
    ownerDisplayName: lock.type === 'token' ? lock.ownerText : lock.owner,
    ownerEditor: '',
    token: lock.token.replace(/^opaquelocktoken:/, ''),
    creation: lock.createdAt,
    eta: lock.timeoutSeconds,
  };
}

async function filesLock(ctx: OcsContext, user: string): Promise<void> {
  const { state } = ctx;
  // Security (of the real server, mirrored): OCS writes need the CSRF header.
  if (ctx.req.headers['ocs-apirequest'] !== 'true') {
    ctx.reply.json(412, { message: 'CSRF check failed' + ctx.reply.leak() });
    return;
  }
  const fileId = state.store.fileIdOf(ctx.segments[3] ?? '');
  const rel = fileId === undefined ? undefined : state.store.relOfId(fileId);
  const node = rel === undefined ? undefined : await state.store.info(rel);
  if (!node) return ocsReply(ctx, 404, 'File not found', []);
  const existing = state.locks.get(node.fileId);
  const foreign = existing && !(existing.type === 'user' && existing.owner === user);
  // Observed: the DELETE also removes a token lock of the same user (the owner breaks a
  // checkout from the web UI); a PUT over it is 423.
  const ownToken = existing?.type === 'token' && existing.owner === user;
  if (ctx.req.method === 'PUT') {
    if (foreign) return ocsReply(ctx, 423, 'File is locked', lockData(state, node.fileId));
    if (!existing) {
      state.locks.set({
        type: 'user',
        owner: user,
        token: `files_lock/${randomUUID()}`,
        fileId: node.fileId,
        createdAt: Math.floor(state.now() / 1000),
        timeoutSeconds: 0,
        depth: '0',
        ownerText: '',
        ownerIsHref: false,
      });
    }
    return ocsReply(ctx, 200, 'OK', lockData(state, node.fileId));
  }
  if (ctx.req.method === 'DELETE') {
    if (!existing) return ocsReply(ctx, 412, 'File is not locked', []);
    if (foreign && !ownToken)
      return ocsReply(ctx, 423, 'File is locked', lockData(state, node.fileId));
    state.locks.delete(node.fileId);
    return ocsReply(ctx, 200, 'OK', []);
  }
  ocsReply(ctx, 405, 'Method not allowed', []);
}

export async function ocs(ctx: OcsContext): Promise<void> {
  const route = ctx.segments.join('/');
  // An app's answer shows the request id whatever its status (request-id.ts).
  requestIdRule(ctx.reply.res, 'always');
  if (ctx.req.method === 'GET' && route === 'cloud/capabilities') {
    return ocsReply(ctx, 200, 'OK', capabilities(ctx));
  }
  if (ctx.user === undefined) {
    return ocsReply(ctx, 401, 'Current user is not logged in', [], 997);
  }
  if (ctx.req.method === 'GET' && route === 'cloud/user') {
    const used = await ctx.state.shares.ownUsed();
    const limit = ctx.state.quota;
    // As Nextcloud 34 computes it per request: with a quota, free = quota - used (the
    // user's own files only; trash, versions and what others shared are not counted).
    const quota =
      limit === null
        ? { free: 1e12, used, total: 1e12 + used, relative: 0, quota: -3 }
        : {
            free: limit - used,
            used,
            total: limit,
            relative: Math.round((used / limit) * 10000) / 100,
            quota: limit,
          };
    return ocsReply(ctx, 200, 'OK', {
      enabled: true,
      id: ctx.user,
      backend: 'Database',
      quota,
      email: null,
      displayname: ctx.user,
      'display-name': ctx.user,
      groups: [...ctx.state.faults.groups],
      subadmin: [],
      language: 'en',
      locale: '',
    });
  }
  if (
    ctx.state.faults.activityApp &&
    ctx.req.method === 'GET' &&
    route.startsWith('apps/activity/api/v2/activity')
  ) {
    const [, , , , name, filter, ...more] = ctx.segments;
    if (name === 'activity' && more.length === 0)
      return activityApi(ctx, ctx.user, filter ?? 'all');
  }
  if (
    ctx.state.faults.filesLock &&
    ctx.segments.length === 4 &&
    route.startsWith('apps/files_lock/lock/')
  ) {
    return filesLock(ctx, ctx.user);
  }
  // No app answers this route: as a refusal before any app (request-id.ts).
  requestIdRule(ctx.reply.res, ctx.state.series.ocsRefusalsRequestId ? 'always' : 'never');
  return ocsReply(ctx, 404, 'Invalid query, please check the syntax.', []);
}
