/**
 * Where Nextcloud 29 answers differently from 34 (the fake's default): each switch of
 * fakes/nextcloud/series.ts, seen through the requests that show it. The differential
 * suite holds both series to the real servers; this holds the switch itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERIES, startFakeNextcloud, type FakeNextcloud } from '../../fakes/nextcloud.js';
import { dav, sabreException } from './helpers.js';

describe.each(SERIES)('the fake as Nextcloud %i', (series) => {
  let fake: FakeNextcloud;
  beforeAll(async () => {
    fake = await startFakeNextcloud({ series });
    await fake.writeFile('doc.txt', 'x');
  });
  afterAll(async () => {
    await fake.close();
  });

  it('says its series in status.php and the capabilities', async () => {
    const status = (await (await fetch(`${fake.url}/status.php`)).json()) as {
      versionstring: string;
      version: string;
    };
    expect(status.versionstring).toBe(series === 34 ? '34.0.1' : '29.0.5');
    expect(status.version.startsWith(`${status.versionstring}.`)).toBe(true);
    const caps = await fetch(`${fake.url}/ocs/v2.php/cloud/capabilities?format=json`, {
      headers: { 'OCS-APIRequest': 'true' },
    });
    const doc = (await caps.json()) as { ocs: { data: { version: { major: number } } } };
    expect(doc.ocs.data.version.major).toBe(series);
  });

  it('shows a user lock without timeout as 34 (-60) or 29 (0) does', async () => {
    const res = await dav(fake, 'LOCK', 'doc.txt', { headers: { 'X-User-Lock': '1' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(
      `<nc:lock-timeout>${series === 34 ? '-60' : '0'}</nc:lock-timeout>`,
    );
  });

  it('refuses a MKCOL of .htaccess as the series does', async () => {
    const res = await dav(fake, 'MKCOL', '.htaccess');
    expect(res.status).toBe(series === 34 ? 400 : 403);
    expect(sabreException(await res.text())).toBe(
      series === 34
        ? 'OCA\\DAV\\Connector\\Sabre\\Exception\\InvalidPath'
        : 'Sabre\\DAV\\Exception\\Forbidden',
    );
  });
});
