// The direct baseline of the transfer benchmark, run as its own node process like the
// CLI: a plain streaming WebDAV client, no hashing, no fsync.
//   node direct-transfer.mjs GET|GET-SHA256|PUT <file URL> <local file> <user> <password>
// GET streams the answer into the local file; PUT streams the local file as the body.
// GET-SHA256 also computes the sha256 of what it writes and prints it (the client half
// of the contract floor, see floor-relay.mjs).
// Exits 0 on a 2xx answer, 1 otherwise (the status on stderr).
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { request } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const [mode, url, file, user, password] = process.argv.slice(2);
const hashed = mode === 'GET-SHA256';
const method = hashed ? 'GET' : mode;
const hash = createHash('sha256');
const hashing = () =>
  new Transform({
    transform(chunk, _enc, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
const headers = { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
if (method === 'PUT') {
  headers['content-length'] = String(statSync(file).size);
  headers['content-type'] = 'application/octet-stream';
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
  if (hashed) await pipeline(res, hashing(), createWriteStream(file));
  else await pipeline(res, createWriteStream(file));
  if (hashed) process.stdout.write(`${JSON.stringify({ sha256: hash.digest('hex') })}\n`);
} else res.resume();
if (res.statusCode < 200 || res.statusCode > 299) {
  process.stderr.write(`${method} ${url}: HTTP ${res.statusCode}\n`);
  process.exitCode = 1;
}
