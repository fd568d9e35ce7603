/**
 * Builds the agent's file: cli/client/entry.ts and everything it imports bundled by
 * esbuild into one ES module that needs node (20, 22 or 24) and nothing else
 * (docs/clients.md). Run by `npm run build` and `npm ci` (the `prepare` script); the
 * tests build their own copy (support/cli-bundle.ts).
 *
 *   tsx scripts/build-cli.ts [OUTFILE]    (default dist/broker-cli.mjs)
 */
import { chmod } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLIENT_ENTRY = resolve(ROOT, 'cli', 'client', 'entry.ts');
export const DEFAULT_OUTFILE = resolve(ROOT, 'dist', 'broker-cli.mjs');

/**
 * broker/base/version.ts reads package.json next to the code at run time; the agent's
 * host has no package.json, so the bundle carries the version it was built from.
 */
function versionAtBuildTime(): Plugin {
  const { version } = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  return {
    name: 'broker-version',
    setup(b) {
      b.onLoad({ filter: /[\\/]broker[\\/]base[\\/]version\.ts$/ }, () => ({
        contents: `export const BROKER_VERSION = ${JSON.stringify(version)};\n`,
        loader: 'ts',
      }));
    },
  };
}

/** Bundles the client into `outfile` (mode 0755); resolves with esbuild's metafile. */
export async function buildClientBundle(outfile = DEFAULT_OUTFILE): Promise<Metafile> {
  const result = await build({
    entryPoints: [CLIENT_ENTRY],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Not minified: whoever installs it on an agent's host can read what it runs.
    minify: false,
    sourcemap: false,
    metafile: true,
    logLevel: 'warning',
    banner: { js: '#!/usr/bin/env node' },
    plugins: [versionAtBuildTime()],
  });
  await chmod(outfile, 0o755);
  return result.metafile;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outfile = resolve(process.argv[2] ?? DEFAULT_OUTFILE);
  await buildClientBundle(outfile);
  process.stdout.write(`built ${outfile}\n`);
}
