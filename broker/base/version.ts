import { readFileSync } from 'node:fs';

/**
 * The package version, read once from package.json: two folders up from source
 * (broker/base/), three from the compiled dist/broker/base/. The agent's file
 * (dist/broker-cli.mjs) has the version built in instead (scripts/build-cli.ts).
 */
function readVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const parsed: unknown = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8'));
      if (
        typeof parsed === 'object' &&
        parsed !== null &&
        'name' in parsed &&
        parsed.name === 'nextcloud-access-broker' &&
        'version' in parsed &&
        typeof parsed.version === 'string'
      ) {
        return parsed.version;
      }
    } catch {
      // not at this depth; try the next one
    }
  }
  return '0.0.0';
}

export const BROKER_VERSION = readVersion();
