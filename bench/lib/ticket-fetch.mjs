// The protocol floor of the 1 KiB fetch benchmark, run as its own node process like the
// CLI: the two requests a `broker fetch` makes (one tools/call `read` on POST /transfer,
// then GET of the blob URL on the same connection) with nothing else: no argument or
// path checks, no staging folder, no hashing, no fsync, no record. What any node client
// of the transfer protocol pays; the CLI's own work is what it takes on top.
//   node ticket-fetch.mjs <broker URL> <transfer token> <instance> <path> <local file>
// Exits 0 once the blob is written, 1 otherwise (the reason on stderr).
import { createWriteStream } from 'node:fs';
import { Agent, request } from 'node:http';
import { pipeline } from 'node:stream/promises';

const [broker, token, instance, path, file] = process.argv.slice(2);
const agent = new Agent({ keepAlive: true });
const auth = { authorization: `Bearer ${token}` };

const send = (method, url, headers, body) =>
  new Promise((resolve, reject) => {
    const req = request(new URL(url, broker), { method, agent, headers: { ...auth, ...headers } });
    req.on('response', resolve);
    req.on('error', reject);
    req.end(body);
  });

const call = await send(
  'POST',
  '/transfer',
  {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  },
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'read', arguments: { instance, path } },
  }),
);
let text = '';
for await (const chunk of call) text += chunk;
const ticket = JSON.parse(text).result?.structuredContent;
if (call.statusCode !== 200 || ticket?.status !== 'ok') {
  process.stderr.write(`read: HTTP ${call.statusCode} ${text.slice(0, 300)}\n`);
  process.exit(1);
}
const blob = await send('GET', ticket.blob_url, {});
if (blob.statusCode !== 200) {
  process.stderr.write(`blob: HTTP ${blob.statusCode}\n`);
  process.exit(1);
}
await pipeline(blob, createWriteStream(file));
agent.destroy();
