// The direct baseline of the transfer benchmark, run as its own node process like the
// CLI: a plain streaming WebDAV client, no hashing, no fsync.
//   node direct-transfer.mjs GET|PUT <file URL on the server> <local file> <user> <password>
// GET streams the answer into the local file; PUT streams the local file as the body.
// Exits 0 on a 2xx answer, 1 otherwise (the status on stderr).
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { request } from 'node:http';
import { pipeline } from 'node:stream/promises';

const [method, url, file, user, password] = process.argv.slice(2);
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
if (method === 'GET' && res.statusCode === 200) await pipeline(res, createWriteStream(file));
else res.resume();
if (res.statusCode < 200 || res.statusCode > 299) {
  process.stderr.write(`${method} ${url}: HTTP ${res.statusCode}\n`);
  process.exitCode = 1;
}
