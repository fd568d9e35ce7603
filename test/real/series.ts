/**
 * The Nextcloud series of a real server, from its status.php (never guessed): the
 * differential suite starts the fake as that series.
 */
import { SERIES, type Series } from '../../fakes/nextcloud.js';

export async function seriesOf(url: string): Promise<Series> {
  const res = await fetch(`${url}/status.php`);
  const status = (await res.json()) as { versionstring?: unknown };
  const major = Number(String(status.versionstring).split('.')[0]);
  const series = SERIES.find((s) => s === major);
  if (series === undefined)
    throw new Error(
      `the real server is Nextcloud ${String(status.versionstring)}; the fake answers as ${SERIES.join(' or ')}: add that series to fakes/nextcloud/series.ts`,
    );
  return series;
}
