/** Starts one fake Nextcloud on 127.0.0.1 (port 0 by default) backed by a folder. */
import { randomBytes, randomUUID } from 'node:crypto';
import fsp from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expectContinue } from './continue.js';
import { ActivityLog } from './activity/log.js';
import { AdminAuditLog, inRequest } from './admin-audit.js';
import { CalendarTrash } from './groupware/calendar-trash.js';
import { Groupware, newEtag } from './groupware/collections.js';
import { LockTable } from './locks.js';
import { helperRel } from './paths.js';
import { EX, Reply } from './reply.js';
import { beforeOverwrite, versionWritten, written } from './dav/file-events.js';
import { route } from './router.js';
import { stampRequestId } from './request-id.js';
import { ReceivedShares } from './shares.js';
import { defaultFaults, type FakeState } from './state.js';
import { traitsOf, versionOf } from './series.js';
import { DiskStore } from './store.js';
import { TrashBin } from './trash.js';
import { UploadFolders } from './uploads.js';
import { VersionStore } from './versions.js';
import type {
  FakeNextcloud,
  FakeNextcloudOptions,
  LockAsOptions,
  RecordedRequest,
} from './types.js';

async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake nextcloud: no port');
  return address.port;
}

export async function startFakeNextcloud(opts: FakeNextcloudOptions = {}): Promise<FakeNextcloud> {
  const own = await fsp.mkdtemp(path.join(os.tmpdir(), 'fake-nextcloud-'));
  const root = path.resolve(opts.root ?? path.join(own, 'files'));
  await fsp.mkdir(root, { recursive: true });
  await fsp.mkdir(path.join(own, 'staging'));
  await fsp.mkdir(path.join(own, 'uploads'));
  // The trash bin lives with the fake unless the caller keeps it (the demo does).
  const trashDir = path.resolve(opts.trashDir ?? path.join(own, 'trash'));
  const now = opts.now ?? Date.now;
  const series = traitsOf(opts.series ?? 34);
  const store = new DiskStore(
    root,
    path.join(own, 'staging'),
    `oc${randomBytes(5).toString('hex')}`,
    opts.fileIdBase ?? 0n,
  );
  const state: FakeState = {
    user: opts.user ?? 'alice',
    password: opts.password ?? 'fake-app-password',
    faults: defaultFaults(),
    requests: [],
    store,
    trash: new TrashBin(trashDir, store, now),
    uploads: new UploadFolders(path.join(own, 'uploads')),
    // Observed: locking and unlocking a file changes its etag.
    locks: new LockTable((fileId) => {
      const rel = store.relOfId(fileId);
      if (rel !== undefined) store.touch(rel);
    }),
    shares: new ReceivedShares(store),
    groupware: new Groupware(opts.user ?? 'alice', series.calendarComponents),
    calendarTrash: new CalendarTrash(now),
    versions: new VersionStore(path.join(own, 'versions')),
    activity: new ActivityLog(series.collectionIdAsString, now),
    adminAudit: new AdminAuditLog(opts.series ?? 34, versionOf(series), now),
    authFailures: 0,
    authDelayScale: opts.authDelayScale ?? 0,
    throttleAtFailure: opts.throttleAtFailure ?? 12,
    now,
    quota: null,
    series,
  };
  await state.trash.load();
  await state.versions.load();
  const sockets = new Set<Socket>();
  const closing = new AbortController();

  const server = createServer();
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    expectContinue(req, res);
    server.emit('request', req, res);
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: { ...req.headers },
    };
    state.requests.push(recorded);
    const requestId = stampRequestId(res);
    res.on('finish', () => {
      recorded.status = res.statusCode;
      const shown = res.getHeader('x-request-id');
      if (typeof shown === 'string') recorded.requestId = shown;
    });
    void (async () => {
      const delay =
        state.faults.slowMs + (req.method === 'PROPFIND' ? state.faults.propfindDelayMs : 0);
      if (delay > 0) {
        await sleep(delay, undefined, { signal: closing.signal }).catch(() => undefined);
      }
      const gate = req.method === 'PUT' ? state.faults.putGate : null;
      if (gate !== null) await gate;
      const held = state.faults.gate;
      if (held !== null && held.method === req.method) await held.until;
      if (state.faults.down || closing.signal.aborted) {
        req.socket.destroy();
        return;
      }
      const current = {
        id: requestId,
        method: req.method ?? '',
        url: req.url ?? '',
        userAgent: req.headers['user-agent'] ?? '--',
      };
      await inRequest(current, () => route(state, req, res));
    })().catch((e: unknown) => {
      if (res.headersSent) {
        res.destroy();
      } else {
        new Reply(req, res, state).sabre(500, EX.generic, `fake nextcloud: ${String(e)}`);
      }
    });
  });
  server.on('connection', (socket: Socket) => {
    if (state.faults.down) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const host = opts.host ?? '127.0.0.1';
  const port = await listen(server, opts.port ?? 0, host);

  const relOf = (p: string) => helperRel(p);
  const fake: FakeNextcloud = {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    user: state.user,
    password: state.password,
    root,
    requests: state.requests,
    faults: state.faults,
    async writeFile(p, content, writeOpts = {}) {
      const rel = relOf(p);
      const scope = { state, user: state.user };
      const before = await store.info(rel);
      await beforeOverwrite(scope, before);
      await store.writeBuffer(rel, typeof content === 'string' ? Buffer.from(content) : content);
      // Versions are kept as for any write; the Activity app hears of it when we know who.
      if (writeOpts.by === undefined) await versionWritten(scope, before, rel);
      else await written(scope, before, rel, writeOpts.by);
    },
    async readFile(p) {
      const info = await store.info(relOf(p));
      return info?.kind === 'file' ? fsp.readFile(store.abs(info.rel)) : undefined;
    },
    async exists(p) {
      return (await store.info(relOf(p))) !== undefined;
    },
    async mkdir(p) {
      await store.mkdir(relOf(p), true);
    },
    uploadFolders() {
      return state.uploads.ids();
    },
    trashed() {
      return state.trash.list().map((i) => i.original);
    },
    async keptContents() {
      const files = async (dir: string): Promise<Buffer[]> => {
        const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
        const out: Buffer[] = [];
        for (const entry of entries) {
          const at = path.join(dir, entry.name);
          if (entry.isDirectory()) out.push(...(await files(at)));
          else if (entry.isFile()) out.push(await fsp.readFile(at));
        }
        return out;
      };
      return [
        ...(await files(store.root)),
        ...(await files(state.versions.dir)),
        ...(await files(path.join(trashDir, 'files'))),
      ];
    },
    adminAudit() {
      return state.adminAudit.text();
    },
    setQuota(bytes) {
      state.quota = bytes;
    },
    async runExpiry() {
      return state.trash.expireForSpace(state.quota, await state.shares.ownUsed());
    },
    async lockAs(p, lockOpts: LockAsOptions) {
      const info = await store.info(relOf(p));
      if (!info) throw new Error(`fake nextcloud: cannot lock missing ${p}`);
      const token =
        lockOpts.type === 'token'
          ? `opaquelocktoken:${randomUUID()}`
          : `files_lock/${randomUUID()}`;
      state.locks.set({
        type: lockOpts.type,
        owner: lockOpts.owner ?? state.user,
        token,
        fileId: info.fileId,
        createdAt: Math.floor(now() / 1000),
        timeoutSeconds: lockOpts.timeoutSeconds ?? 0,
        depth: lockOpts.type === 'token' ? 'infinity' : '0',
        ownerText: '',
        ownerIsHref: false,
      });
      return token;
    },
    async receiveShare(p, shareOpts = {}) {
      const info = await store.info(relOf(p));
      if (!info) throw new Error(`fake nextcloud: cannot share missing ${p}`);
      const owner = shareOpts.owner ?? 'bob';
      state.shares.add(info.fileId, { owner });
      if (shareOpts.ownerQuota !== undefined)
        state.shares.setSharer(owner, { quota: shareOpts.ownerQuota });
    },
    setSharerSpace(owner, space) {
      state.shares.setSharer(owner, space);
    },
    createCalendar(name, collectionOpts = {}) {
      state.groupware.add('calendar', name, collectionOpts);
    },
    createAddressBook(name, collectionOpts = {}) {
      state.groupware.add('addressbook', name, collectionOpts);
    },
    addObject(kind, collection, object, data) {
      const target = state.groupware.find(kind, collection);
      if (target === undefined) throw new Error(`fake nextcloud: no ${kind} ${collection}`);
      const uid = /^UID:(.*)$/m.exec(data)?.[1]?.trim();
      target.objects.set(object, { data, etag: newEtag(), uid });
    },
    objectOf(kind, collection, object) {
      return state.groupware.find(kind, collection)?.objects.get(object)?.data;
    },
    lockOf(p) {
      const id = store.knownId(relOf(p));
      const lock = id === undefined ? undefined : state.locks.get(id);
      return lock ? { type: lock.type, owner: lock.owner, token: lock.token } : undefined;
    },
    reset() {
      Object.assign(state.faults, defaultFaults());
      state.requests.length = 0;
      state.authFailures = 0;
      state.locks.clear();
      state.quota = null;
    },
    async close() {
      closing.abort();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const s of sockets) s.destroy();
      await closed;
      await fsp.rm(own, { recursive: true, force: true });
    },
  };
  return fake;
}
