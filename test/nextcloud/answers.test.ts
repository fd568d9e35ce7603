/**
 * Every answer's request id, to the scope that sent the request (answers.ts): what a
 * `recording` collects is exactly what the fake answered to that scope's requests, also
 * with other scopes running at the same time, and nothing of a refused request (which
 * shows no id); requests outside every scope go to `onAnswer`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NextcloudAnswer } from '../../broker/nextcloud/index.js';
import { answerOf } from '../../broker/nextcloud/answers.js';
import { body, rejectsWith, startRig, type Rig } from './helpers.js';

let rig: Rig;
const outside: NextcloudAnswer[] = [];
beforeAll(async () => {
  rig = await startRig({ onAnswer: (a) => outside.push(a) });
  await rig.fake.writeFile('R/a.txt', 'a');
});
afterAll(async () => {
  await rig.close();
});

/** The ids the fake showed, in order, for requests it received from index `from` on. */
const shownSince = (from: number): string[] =>
  rig.fake.requests.slice(from).flatMap((r) => (r.requestId === undefined ? [] : [r.requestId]));

describe('recording a scope', () => {
  it('collects the id of every answer a scope’s requests got, with file id and etag where sent', async () => {
    const from = rig.fake.requests.length;
    const got: NextcloudAnswer[] = [];
    await rig.client.recording(
      (a) => got.push(a),
      async () => {
        await rig.client.list('R');
        await rig.client.upload('R/b.txt', body('bee'), { ifNoneMatch: '*' }, 3);
        await rig.client.capabilities();
      },
    );
    expect(got.map((a) => a.requestId)).toEqual(shownSince(from));
    expect(got.length).toBeGreaterThanOrEqual(3);
    for (const a of got) expect(a.requestId).toMatch(/^[A-Za-z0-9]{20}$/);
    const put = got.find((a) => a.method === 'PUT');
    expect(put?.fileId).toMatch(/^[1-9]\d*$/);
    expect(put?.etag).toMatch(/^"[0-9a-f]+"$/);
    expect(got.find((a) => a.method === 'PROPFIND')?.fileId).toBeUndefined();
  });

  it('keeps what it collected when the scope fails, and a refused request adds nothing', async () => {
    const got: NextcloudAnswer[] = [];
    const from = rig.fake.requests.length;
    await rejectsWith(
      rig.client.recording(
        (a) => got.push(a),
        async () => {
          await rig.client.stat('R/a.txt');
          await rig.client.stat('R/missing.txt');
        },
      ),
      'not_found',
    );
    expect(rig.fake.requests.slice(from).map((r) => r.status)).toEqual([207, 404]);
    expect(got.map((a) => a.requestId)).toEqual(shownSince(from));
    expect(got).toHaveLength(1);
  });

  it('keeps two scopes running at once apart, and a nested scope takes its own', async () => {
    const a: string[] = [];
    const b: string[] = [];
    const inner: string[] = [];
    await Promise.all([
      rig.client.recording(
        (x) => a.push(x.requestId),
        async () => {
          for (let i = 0; i < 5; i++) await rig.client.stat('R/a.txt');
          await rig.client.recording(
            (x) => inner.push(x.requestId),
            () => rig.client.list('R'),
          );
        },
      ),
      rig.client.recording(
        (x) => b.push(x.requestId),
        async () => {
          for (let i = 0; i < 5; i++) await rig.client.list('R');
        },
      ),
    ]);
    expect(a).toHaveLength(5);
    expect(b).toHaveLength(5);
    expect(inner).toHaveLength(1);
    const all = [...a, ...b, ...inner];
    expect(new Set(all).size).toBe(all.length);
    const byId = new Map(rig.fake.requests.map((r) => [r.requestId, r.method]));
    expect(a.every((id) => byId.get(id) === 'PROPFIND')).toBe(true);
  });

  it('hands requests outside every scope to onAnswer', async () => {
    outside.length = 0;
    const from = rig.fake.requests.length;
    await rig.client.ownSpace();
    expect(outside.map((a) => a.requestId)).toEqual(shownSince(from));
    expect(outside[0]?.method).toBe('GET');
  });
});

describe('what an answer may say', () => {
  it('keeps only a well-formed id, a file id of digits and a quoted etag', () => {
    expect(answerOf('PUT', 201, {})).toBeUndefined();
    expect(answerOf('PUT', 201, { 'x-request-id': 'a b' })).toBeUndefined();
    expect(answerOf('PUT', 201, { 'x-request-id': 'x'.repeat(129) })).toBeUndefined();
    expect(
      answerOf('PUT', 201, {
        'x-request-id': 'Z2Xv@AAAB-x',
        'oc-fileid': '00000093oc5eoiudax75',
        'oc-etag': '"abc"',
      }),
    ).toEqual({
      requestId: 'Z2Xv@AAAB-x',
      method: 'PUT',
      status: 201,
      fileId: '93',
      etag: '"abc"',
    });
    expect(
      answerOf('PUT', 201, {
        'x-request-id': 'id',
        'oc-fileid': '93; drop',
        'oc-etag': 'unquoted\n',
      }),
    ).toEqual({ requestId: 'id', method: 'PUT', status: 201 });
  });
});
