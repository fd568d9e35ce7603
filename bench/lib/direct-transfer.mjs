// The direct baseline of the transfer benchmark, run as its own node process like the
// CLI: a plain streaming WebDAV client, no hashing, no fsync.
//   node direct-transfer.mjs GET|GET-SHA256|PUT|PUT-SHA256|CHUNKED <URL> <local file> <user> <password>
// GET streams the answer into the local file; PUT streams the local file as the body.
// CHUNKED uploads the local file to URL by Nextcloud's chunked upload v2 (MKCOL, one PUT
// per chunk of $BENCH_CHUNK_SIZE bytes in order, then the MOVE that assembles it and
// replaces the file) over one keep-alive connection, the way a careful client does.
// PUT-SHA256 first reads the file through sha256 (as the CLI does, to declare the hash
// before it uploads) and prints it, then PUTs it: the client half of the push floor.
// GET-SHA256 also computes the sha256 of what it writes and prints it (the client half
// of the contract floor, see floor-relay.mjs), in the quickest way we found: hash each
// chunk as it arrives while the previous batch is written with one writev (a stream
// pipeline with a hashing Transform took ~0.8 s more per GiB here); then it makes the
// file durable (fsync) before it says so, as any client must that records the file's
// sha256: without it a crash leaves a record vouching for bytes that are not on disk,
// and a later push would upload the truncated file as the user's edit.
// With BENCH_X_HASH set (e.g. sha1), a PUT, and a CHUNKED upload's MOVE, ask Nextcloud
// for that hash of what it stored (`X-Hash`), as every broker upload does.
// Exits 0 on a 2xx answer, 1 otherwise (the status on stderr).
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';

const [mode, url, file, user, password] = process.argv.slice(2);
const xHash = process.env.BENCH_X_HASH ? { 'x-hash': process.env.BENCH_X_HASH } : {};
const hashed = mode === 'GET-SHA256';
const declared = mode === 'PUT-SHA256';
const method = hashed ? 'GET' : declared ? 'PUT' : mode;

/** Streams `res` into `path`, hashing on arrival; resolves with the hex sha256. */
async function writeHashed(res, path) {
  const hash = createHash('sha256');
  const handle = await open(path, 'w', 0o600);
  let queue = [];
  let writing;
  const drain = async () => {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      await handle.writev(batch);
    }
    writing = undefined;
    res.resume();
  };
  await new Promise((resolve, reject) => {
    res.on('data', (chunk) => {
      hash.update(chunk);
      queue.push(chunk);
      if (writing === undefined) writing = drain();
      else if (queue.length >= 16) res.pause();
    });
    res.on('end', resolve);
    res.on('error', reject);
  });
  while (writing !== undefined) await writing;
  await handle.sync();
  await handle.close();
  return hash.digest('hex');
}
const auth = { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };

/** One request on `agent`; resolves with the status once the answer is read. */
function send(agent, method, target, headers, body) {
  return new Promise((resolve, reject) => {
    const req = request(target, { method, headers: { ...auth, ...headers }, agent });
    req.on('error', reject);
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    if (body === undefined) req.end();
    else pipeline(body, req).catch(reject);
  });
}

/** Nextcloud's chunked upload v2 of `file` to `url`, chunks in order on one connection. */
async function chunked() {
  const chunk = Number(process.env.BENCH_CHUNK_SIZE);
  const size = statSync(file).size;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const folder = url.replace(
    /\/remote\.php\/dav\/files\/([^/]+)\/.*$/,
    `/remote.php/dav/uploads/$1/bench-${randomUUID()}`,
  );
  const common = { destination: url, 'oc-total-length': String(size) };
  const expect = (what, status, ok) => {
    if (!ok.includes(status)) throw new Error(`${what}: HTTP ${status}`);
  };
  expect('MKCOL', await send(agent, 'MKCOL', folder, { destination: url }), [201]);
  for (let n = 1, at = 0; at < size || n === 1; n += 1, at += chunk) {
    const end = Math.min(size, at + chunk);
    const headers = {
      ...common,
      'content-length': String(end - at),
      'content-type': 'application/octet-stream',
    };
    const body = end > at ? createReadStream(file, { start: at, end: end - 1 }) : undefined;
    expect(`PUT chunk ${n}`, await send(agent, 'PUT', `${folder}/${n}`, headers, body), [201, 204]);
    if (end >= size) break;
  }
  expect('MOVE', await send(agent, 'MOVE', `${folder}/.file`, { ...common, ...xHash }), [201, 204]);
  agent.destroy();
}
if (mode === 'CHUNKED') {
  await chunked();
  process.exit(0);
}

const headers = { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
if (method === 'PUT') {
  Object.assign(headers, xHash);
  headers['content-length'] = String(statSync(file).size);
  headers['content-type'] = 'application/octet-stream';
}
if (declared) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  process.stdout.write(`${JSON.stringify({ sha256: hash.digest('hex') })}\n`);
}
const req = request(url, { method, headers });
const answered = new Promise((resolve, reject) => {
  req.on('response', resolve);
  req.on('error', reject);
});
if (method === 'PUT') await pipeline(createReadStream(file), req);
else req.end();
const res = await answered;
if (method === 'GET' && res.statusCode === 200) {
  if (hashed) process.stdout.write(`${JSON.stringify({ sha256: await writeHashed(res, file) })}\n`);
  else await pipeline(res, createWriteStream(file));
} else res.resume();
if (res.statusCode < 200 || res.statusCode > 299) {
  process.stderr.write(`${method} ${url}: HTTP ${res.statusCode}\n`);
  process.exitCode = 1;
}
