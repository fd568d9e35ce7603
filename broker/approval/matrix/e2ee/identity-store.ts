/**
 * The bot's cryptographic identity at rest: its cross-signing secrets (the bundle
 * matrix-js-sdk exports) and the sessions it has used, in one file in the data folder,
 * encrypted with AES-256-GCM under a key derived from `matrix.crypto_secret` by scrypt.
 * Written 0600 through a temporary file and a rename, so a crash never leaves half a file.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { MatrixGatewayError } from '../errors.js';

export const IDENTITY_FILE = 'matrix-identity.enc.json';

const BotIdentitySchema = z.object({
  bot_user: z.string(),
  /** `CryptoApi.exportSecretsBundle()`: the cross-signing private keys. */
  secrets: z.record(z.string(), z.unknown()),
  /** Every session (device id) the bot has run with, oldest first. */
  devices: z.array(z.string()),
});
export type BotIdentity = z.infer<typeof BotIdentitySchema>;

const EnvelopeSchema = z.object({
  v: z.literal(1),
  kdf: z.literal('scrypt'),
  salt: z.string(),
  iv: z.string(),
  tag: z.string(),
  data: z.string(),
});

// scrypt's defaults (N=16384, r=8, p=1): the secret is ≥ 32 characters, so the work
// factor only has to keep a weak one from being trivial.
function keyOf(secret: string, salt: Buffer): Buffer {
  return scryptSync(secret, salt, 32);
}

export function identityPath(dataDir: string): string {
  return join(dataDir, IDENTITY_FILE);
}

/** The stored identity, or undefined when there is none yet. */
export function loadIdentity(dataDir: string, secret: string): BotIdentity | undefined {
  const path = identityPath(dataDir);
  if (!existsSync(path)) return undefined;
  try {
    const env = EnvelopeSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
    const decipher = createDecipheriv(
      'aes-256-gcm',
      keyOf(secret, Buffer.from(env.salt, 'base64')),
      Buffer.from(env.iv, 'base64'),
    );
    decipher.setAuthTag(Buffer.from(env.tag, 'base64'));
    const plain = Buffer.concat([
      decipher.update(Buffer.from(env.data, 'base64')),
      decipher.final(),
    ]).toString('utf8');
    return BotIdentitySchema.parse(JSON.parse(plain));
  } catch {
    // Security: never guess, never replace: a new identity would need the approver to
    // trust it again, and an attacker who can write the file must not choose it.
    throw new MatrixGatewayError(
      'identity_unreadable',
      `cannot read the bot's identity in ${path} with matrix.crypto_secret: give the secret it was written with; or, to start over with a new identity, move the file away (the approver's clients will show the bot as a new identity)`,
    );
  }
}

export function saveIdentity(dataDir: string, secret: string, identity: BotIdentity): void {
  const path = identityPath(dataDir);
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(secret, salt), iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(identity), 'utf8'), cipher.final()]);
  const envelope = {
    v: 1,
    kdf: 'scrypt',
    salt: salt.toString('base64'),
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  };
  const tmp = `${path}.tmp`;
  // Security: the file holds the bot's signing keys (encrypted); only the broker's user.
  writeFileSync(tmp, JSON.stringify(envelope), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}
