/**
 * The end-to-end encryption endpoints of the fake homeserver, as the Client-Server API
 * specifies them (v1.11+): key upload, query and claim, cross-signing keys and
 * signatures, send-to-device, devices (with user-interactive auth for deletion and for
 * replacing cross-signing keys), and no key backup.
 */
import { randomBytes } from 'node:crypto';
import {
  body,
  HttpError,
  me,
  route,
  type FakeUser,
  type Request,
  type RouteContext,
} from './http.js';
import type { CrossSigningUse, Json, Session } from './e2ee-state.js';

function obj(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
}

function session(ctx: RouteContext, u: FakeUser): Session {
  const s = ctx.e2ee.session(u.userId, u.deviceId);
  if (s === undefined) throw new HttpError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
  return s;
}

function otkCounts(s: Session): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const id of s.oneTimeKeys.keys()) {
    const alg = id.split(':')[0] ?? '';
    counts[alg] = (counts[alg] ?? 0) + 1;
  }
  return counts;
}

/** `device_one_time_keys_count` and `device_unused_fallback_key_types` for /sync. */
export function keyCounts(ctx: RouteContext, u: FakeUser): Json {
  const s = ctx.e2ee.session(u.userId, u.deviceId);
  if (s === undefined) return {};
  const unused = [...s.fallbackKeys.entries()]
    .filter(([, f]) => !f.used)
    .map(([id]) => id.split(':')[0] ?? '');
  return {
    device_one_time_keys_count: otkCounts(s),
    device_unused_fallback_key_types: [...new Set(unused)],
  };
}

/**
 * User-interactive auth with `m.login.password` (spec "User-Interactive Authentication
 * API"): the first call gets 401 with a session and the flows; a retry with a valid
 * `auth` passes.
 */
function requirePassword(ctx: RouteContext, req: Request, u: FakeUser): [number, unknown] | null {
  const auth = obj(body(req)['auth']);
  const identifier = obj(auth['identifier']);
  const user = identifier['user'] ?? auth['user'];
  const ok =
    auth['type'] === 'm.login.password' &&
    typeof auth['session'] === 'string' &&
    ctx.e2ee.uiaSessions.has(auth['session']) &&
    (user === u.userId || user === u.userId.slice(1).split(':')[0]) &&
    auth['password'] === u.password;
  if (ok) return null;
  const session = randomBytes(12).toString('hex');
  ctx.e2ee.uiaSessions.add(session);
  const answer: Json = { flows: [{ stages: ['m.login.password'] }], params: {}, session };
  if (Object.keys(auth).length > 0) {
    answer['errcode'] = 'M_FORBIDDEN';
    answer['error'] = 'Invalid password';
  }
  return [401, answer];
}

route('POST', '_matrix/client/v3/keys/upload', (ctx, req) => {
  const u = me(req);
  const s = session(ctx, u);
  const b = body(req);
  if (b['device_keys'] !== undefined) {
    const keys = obj(b['device_keys']);
    if (keys['user_id'] !== u.userId || keys['device_id'] !== u.deviceId) {
      throw new HttpError(400, 'M_INVALID_PARAM', 'device_keys are not for this device');
    }
    ctx.e2ee.setDeviceKeys(s, keys);
  }
  for (const [id, k] of Object.entries(obj(b['one_time_keys']))) {
    const existing = s.oneTimeKeys.get(id);
    // As Synapse: a key id is never reused with other content.
    if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(k)) {
      throw new HttpError(400, 'M_INVALID_PARAM', `One time key ${id} already exists`);
    }
    s.oneTimeKeys.set(id, obj(k));
  }
  const fallback = obj(b['fallback_keys']);
  if (Object.keys(fallback).length > 0) {
    s.fallbackKeys.clear();
    for (const [id, k] of Object.entries(fallback)) {
      s.fallbackKeys.set(id, { key: obj(k), used: false });
    }
  }
  return [200, { one_time_key_counts: otkCounts(s) }];
});

route('POST', '_matrix/client/v3/keys/query', (ctx, req) => {
  const u = me(req);
  const wanted = obj(body(req)['device_keys']);
  const device_keys: Record<string, Json> = {};
  const master_keys: Json = {};
  const self_signing_keys: Json = {};
  const user_signing_keys: Json = {};
  for (const [userId, list] of Object.entries(wanted)) {
    const only = Array.isArray(list) && list.length > 0 ? new Set(list as string[]) : undefined;
    const devices: Json = {};
    for (const d of ctx.e2ee.devicesOf(userId)) {
      if (d.keys === undefined || (only !== undefined && !only.has(d.deviceId))) continue;
      devices[d.deviceId] = {
        ...d.keys,
        unsigned: d.displayName === undefined ? {} : { device_display_name: d.displayName },
      };
    }
    device_keys[userId] = devices;
    const cs = ctx.e2ee.crossSigningOf(userId);
    if (cs.master) master_keys[userId] = cs.master;
    if (cs.self_signing) self_signing_keys[userId] = cs.self_signing;
    // The user-signing key is only ever shown to its owner.
    if (cs.user_signing && userId === u.userId) user_signing_keys[userId] = cs.user_signing;
  }
  return [200, { device_keys, master_keys, self_signing_keys, user_signing_keys, failures: {} }];
});

route('POST', '_matrix/client/v3/keys/claim', (ctx, req) => {
  me(req);
  const one_time_keys: Record<string, Record<string, Json>> = {};
  for (const [userId, devices] of Object.entries(obj(body(req)['one_time_keys']))) {
    for (const [deviceId, algorithm] of Object.entries(obj(devices))) {
      const s = ctx.e2ee.session(userId, deviceId);
      if (s === undefined) continue;
      const prefix = `${String(algorithm)}:`;
      let claimed: [string, Json] | undefined;
      const otk = [...s.oneTimeKeys.entries()].find(([id]) => id.startsWith(prefix));
      if (otk !== undefined) {
        s.oneTimeKeys.delete(otk[0]);
        claimed = otk;
      } else {
        const fb = [...s.fallbackKeys.entries()].find(([id]) => id.startsWith(prefix));
        if (fb !== undefined) {
          fb[1].used = true;
          claimed = [fb[0], fb[1].key];
        }
      }
      if (claimed === undefined) continue;
      one_time_keys[userId] = {
        ...one_time_keys[userId],
        [deviceId]: { [claimed[0]]: claimed[1] },
      };
    }
  }
  return [200, { one_time_keys, failures: {} }];
});

function mergeSignatures(target: Json, signed: Json): Json {
  const sigs = obj(target['signatures']);
  for (const [signer, byKey] of Object.entries(obj(signed['signatures']))) {
    sigs[signer] = { ...obj(sigs[signer]), ...obj(byKey) };
  }
  return { ...target, signatures: sigs };
}

route('POST', '_matrix/client/v3/keys/signatures/upload', (ctx, req) => {
  me(req);
  const failures: Json = {};
  for (const [userId, byKeyId] of Object.entries(body(req))) {
    for (const [keyId, signed] of Object.entries(obj(byKeyId))) {
      const device = ctx.e2ee.session(userId, keyId);
      if (device?.keys !== undefined) {
        device.keys = mergeSignatures(device.keys, obj(signed));
        ctx.e2ee.changed(userId);
        continue;
      }
      const master = ctx.e2ee.crossSigningOf(userId).master;
      if (master !== undefined && Object.values(obj(master['keys'])).includes(keyId)) {
        ctx.e2ee.setCrossSigning(userId, { master: mergeSignatures(master, obj(signed)) });
        continue;
      }
      failures[userId] = {
        ...obj(failures[userId]),
        [keyId]: { errcode: 'M_INVALID_SIGNATURE', error: 'Unknown key' },
      };
    }
  }
  return [200, { failures }];
});

route('POST', '_matrix/client/v3/keys/device_signing/upload', (ctx, req) => {
  const u = me(req);
  // Spec v1.11: the first upload needs no interactive auth; replacing keys does.
  if (ctx.e2ee.crossSigningOf(u.userId).master !== undefined) {
    const challenge = requirePassword(ctx, req, u);
    if (challenge !== null) return challenge;
  }
  const b = body(req);
  const keys: Partial<Record<CrossSigningUse, Json>> = {};
  for (const use of ['master', 'self_signing', 'user_signing'] as const) {
    const k = b[`${use}_key`];
    if (k !== undefined) keys[use] = obj(k);
  }
  ctx.e2ee.setCrossSigning(u.userId, keys);
  return [200, {}];
});

route('PUT', '_matrix/client/v3/sendToDevice/*/*', (ctx, req, [type, txnId]) => {
  const u = me(req);
  const txn = `${u.token}\u0000${txnId}`;
  if (ctx.e2ee.txns.has(txn)) return [200, {}];
  ctx.e2ee.txns.add(txn);
  for (const [userId, devices] of Object.entries(obj(body(req)['messages']))) {
    for (const [deviceId, content] of Object.entries(obj(devices))) {
      const targets =
        deviceId === '*'
          ? ctx.e2ee.devicesOf(userId)
          : [ctx.e2ee.session(userId, deviceId)].filter((s) => s !== undefined);
      for (const t of targets) {
        ctx.e2ee.enqueue(t, { sender: u.userId, type: type ?? '', content: obj(content) });
      }
    }
  }
  ctx.e2ee.flush();
  return [200, {}];
});

route('GET', '_matrix/client/v3/room_keys/version', () => {
  throw new HttpError(404, 'M_NOT_FOUND', 'No current backup version');
});

const deviceInfo = (s: Session): Json => ({
  device_id: s.deviceId,
  display_name: s.displayName ?? null,
  last_seen_ip: null,
  last_seen_ts: null,
});

route('GET', '_matrix/client/v3/devices', (ctx, req) => [
  200,
  { devices: ctx.e2ee.devicesOf(me(req).userId).map(deviceInfo) },
]);
route('GET', '_matrix/client/v3/devices/*', (ctx, req, [deviceId]) => {
  const s = ctx.e2ee.session(me(req).userId, deviceId ?? '');
  if (s === undefined) throw new HttpError(404, 'M_NOT_FOUND', 'Device not found');
  return [200, deviceInfo(s)];
});
route('DELETE', '_matrix/client/v3/devices/*', (ctx, req, [deviceId]) => {
  const u = me(req);
  if (ctx.e2ee.session(u.userId, deviceId ?? '') === undefined) {
    throw new HttpError(404, 'M_NOT_FOUND', 'Device not found');
  }
  const challenge = requirePassword(ctx, req, u);
  if (challenge !== null) return challenge;
  ctx.e2ee.deleteSession(u.userId, deviceId ?? '');
  return [200, {}];
});
