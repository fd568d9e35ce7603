// The contract floors of the transfer benchmark: the least a relay must do for
// docs/contracts.md §6 and §9, with nothing else: no broker, no auth check, no audit, no
// wall, no ticket call.
//   node floor-relay.mjs <file URL on the server> <user> <password> [chunk bytes]
// Prints the URL it listens on.
// - GET (the fetch floor): relays that one file, computing its sha256 on the way and
//   sending it as a trailer.
// - PUT /?to=<file URL> (the push floor): an upload that commits once. It hashes the
//   whole body, sha256 (to compare with the client's declared one) and sha1 (to compare
//   with the server's), sends the chunks into a chunked-upload-v2 folder, then one MOVE of
//   `.file` (create-only, `Overwrite: F`) with `X-Hash: sha1`, whose X-Hash-SHA1 must
//   equal the whole body's. Answers 201 with the sha256, or 502.
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const [upstream, user, password, chunkArg] = process.argv.slice(2);

// The broker's memory policy for what it relays (broker/base/relayed-memory.ts): a minor
// collection every 8 MiB passed on. Without it this floor paid V8's full collections of
// the piled-up socket buffers, which the broker no longer does, and stopped being one.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');
let pending = 0;
function relayed(bytes) {
  pending += bytes;
  if (pending < 8 * 1024 * 1024) return;
  pending = 0;
  collect({ type: 'minor', execution: 'sync' });
}
const CHUNK = Number(chunkArg ?? 16 * 1024 * 1024);
const authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

function relayGet(res) {
  const up = request(upstream, { headers: { authorization } }, (source) => {
    res.writeHead(source.statusCode === 200 ? 200 : 502, {
      'content-type': 'application/octet-stream',
      trailer: 'x-sha256',
    });
    const hash = createHash('sha256');
    source.on('data', (chunk) => {
      hash.update(chunk);
      relayed(chunk.length);
      if (!res.write(chunk)) {
        source.pause();
        res.once('drain', () => source.resume());
      }
    });
    source.on('end', () => {
      res.addTrailers({ 'x-sha256': hash.digest('hex') });
      res.end();
    });
  });
  up.on('error', () => res.destroy());
  up.end();
}

/** One WebDAV request; resolves with the response once its body was read. */
function call(method, url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { authorization, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res));
    });
    req.on('error', reject);
    if (body === undefined) req.end();
    else body(req);
  });
}

/** Cuts `source` into consecutive pieces without buffering more than its own reads. */
function cutter(source) {
  const it = source[Symbol.asyncIterator]();
  let rest;
  return async function* piece(length) {
    let left = length;
    while (left > 0) {
      let data = rest;
      rest = undefined;
      if (data === undefined) {
        const r = await it.next();
        if (r.done) throw new Error('body shorter than Content-Length');
        data = r.value;
      }
      if (data.length > left) {
        rest = data.subarray(left);
        data = data.subarray(0, left);
      }
      left -= data.length;
      yield data;
    }
  };
}

/** Writes one piece into `up`, hashing it into the whole body's hashes. */
async function sendChunk(pieces, up, wholes) {
  for await (const data of pieces) {
    for (const whole of wholes) whole.update(data);
    relayed(data.length);
    if (!up.write(data)) await once(up, 'drain');
  }
  up.end();
}

async function relayPut(req, res) {
  const to = new URL(req.url, 'http://relay').searchParams.get('to');
  const size = Number(req.headers['content-length']);
  const folder = to.replace(
    /\/remote\.php\/dav\/files\/([^/]+)\/.*$/,
    `/remote.php/dav/uploads/$1/floor-${randomUUID()}`,
  );
  const common = { destination: to, 'oc-total-length': String(size) };
  const whole = createHash('sha256');
  const wholeSha1 = createHash('sha1');
  const mk = await call('MKCOL', folder, { destination: to });
  if (mk.statusCode !== 201) throw new Error(`MKCOL ${mk.statusCode}`);
  const count = Math.max(1, Math.ceil(size / CHUNK));
  const piece = cutter(req);
  for (let n = 1; n <= count; n += 1) {
    const length = n < count ? CHUNK : size - CHUNK * (count - 1);
    let sent;
    const put = await call(
      'PUT',
      `${folder}/${n}`,
      { ...common, 'content-length': String(length) },
      (up) => {
        sent = sendChunk(piece(length), up, [whole, wholeSha1]);
        sent.catch(() => up.destroy());
      },
    );
    await sent;
    if (put.statusCode > 299) throw new Error(`chunk ${n}: ${put.statusCode}`);
  }
  const sha256 = whole.digest('hex');
  const moved = await call('MOVE', `${folder}/.file`, {
    ...common,
    'x-hash': 'sha1',
    overwrite: 'F',
  });
  if (moved.statusCode > 299 || moved.headers['x-hash-sha1'] !== wholeSha1.digest('hex'))
    throw new Error(`MOVE ${moved.statusCode}`);
  res.writeHead(201, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ sha256 }));
}

const server = createServer((req, res) => {
  if (req.method === 'PUT')
    relayPut(req, res).catch((error) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(error.message));
    });
  else relayGet(res);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
