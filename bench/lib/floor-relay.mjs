// The contract floor of the transfer benchmark: the least a relay must do for docs/contracts.md §6's
// fetch (stream a Nextcloud file to a client, computing its sha256 on the way and sending
// it as a trailer), with nothing else: no broker, no auth check, no audit, no wall.
//   node floor-relay.mjs <file URL on the server> <user> <password>
// Prints the URL it listens on; every GET to it relays that one file.
import { createHash } from 'node:crypto';
import { createServer, request } from 'node:http';

const [upstream, user, password] = process.argv.slice(2);
const authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

const server = createServer((req, res) => {
  const up = request(upstream, { headers: { authorization } }, (source) => {
    res.writeHead(source.statusCode === 200 ? 200 : 502, {
      'content-type': 'application/octet-stream',
      trailer: 'x-sha256',
    });
    const hash = createHash('sha256');
    source.on('data', (chunk) => {
      hash.update(chunk);
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
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
