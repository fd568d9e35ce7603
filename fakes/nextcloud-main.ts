/**
 * Standalone fake Nextcloud:
 *   npm run fake-nextcloud -- --port N --root DIR --user U --password P [--host H]
 * Prints exactly one line, `listening on http://127.0.0.1:N`, once ready; runs until
 * SIGTERM/SIGINT, then closes cleanly.
 */
import { parseArgs } from 'node:util';
import { startFakeNextcloud } from './nextcloud.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    root: { type: 'string' },
    user: { type: 'string' },
    password: { type: 'string' },
    host: { type: 'string' },
  },
  strict: true,
});

const port = values.port === undefined ? 0 : Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`fake-nextcloud: --port must be an integer 0-65535, got ${values.port}\n`);
  process.exit(2);
}

const fake = await startFakeNextcloud({
  port,
  ...(values.root !== undefined ? { root: values.root } : {}),
  ...(values.user !== undefined ? { user: values.user } : {}),
  ...(values.password !== undefined ? { password: values.password } : {}),
  ...(values.host !== undefined ? { host: values.host } : {}),
});
process.stdout.write(`listening on ${fake.url}\n`);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  fake.close().then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`fake-nextcloud: close failed: ${String(e)}\n`);
      process.exit(1);
    },
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
