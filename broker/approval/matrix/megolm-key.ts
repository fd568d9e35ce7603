/**
 * Which Megolm message an encrypted event is: the session that encrypted it and the
 * message's index in that session. A homeserver can re-send a stored ciphertext under
 * any number of new event ids (it decrypts each time, to the same words), so a decision
 * is counted by this key, never by its event id.
 *
 * The session id travels in clear (`session_id`) but is the Megolm session's public
 * signing key: a ciphertext decrypts only under the session it names. The index is in
 * the message's authenticated header: the base64-decoded `ciphertext` is a version byte
 * (3), then the protobuf field 1 (tag 0x08) holding the index as a varint, the encrypted
 * body, a MAC and the session's signature over all of it (the Megolm specification,
 * "Message format"). Not the ciphertext string: base64 decoding ignores padding, so a
 * server can add `=` and still have the message decrypt.
 */
import { z } from 'zod';

export interface MegolmKey {
  readonly sessionId: string;
  readonly index: number;
}

const EncryptedContentSchema = z.object({
  algorithm: z.literal('m.megolm.v1.aes-sha2'),
  session_id: z.string().min(1).max(255),
  ciphertext: z.string().min(1),
});

/** Standard base64, padding optional: what vodozemac accepts. */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const MEGOLM_VERSION = 3;
const INDEX_TAG = 0x08;
const MAX_INDEX = 0xffff_ffff;

/** The Megolm session and message index of an encrypted event's wire content, or undefined. */
export function megolmKey(wireContent: unknown): MegolmKey | undefined {
  const parsed = EncryptedContentSchema.safeParse(wireContent);
  if (!parsed.success || !BASE64.test(parsed.data.ciphertext)) return undefined;
  // Only the header is needed: 8 base64 characters hold the version, tag and a 4-byte
  // varint; 12 hold a 5-byte one.
  const bytes = Buffer.from(parsed.data.ciphertext.slice(0, 12), 'base64');
  if (bytes[0] !== MEGOLM_VERSION || bytes[1] !== INDEX_TAG) return undefined;
  let index = 0;
  for (let i = 2, shift = 0; i < bytes.length && shift <= 28; i += 1, shift += 7) {
    const byte = bytes[i] as number;
    index += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) {
      return index <= MAX_INDEX ? { sessionId: parsed.data.session_id, index } : undefined;
    }
  }
  return undefined;
}
