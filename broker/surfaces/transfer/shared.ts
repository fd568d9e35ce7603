import { z } from 'zod';
import { BLOB_SHA256_AT_END_HEADER, BLOB_SHA256_HEADER, SHA256_HEX } from '../../base/protocol.js';

/** Fields of an answer that carries a blob ticket. */
export const TicketFields = {
  ticket: z.string().optional(),
  blob_url: z
    .string()
    .optional()
    .describe('resolve against the broker URL; GET or PUT with the transfer token'),
  expires_at: z.string().optional(),
  expires_in_s: z.number().int().optional(),
  sha256_header: z
    .literal(BLOB_SHA256_HEADER)
    .optional()
    .describe(
      'uploads: the PUT may declare the body sha256 in this header when the call gave none',
    ),
  sha256_at_end: z
    .literal(BLOB_SHA256_AT_END_HEADER)
    .optional()
    .describe(
      'uploads: or, with this header set to 1, as 64 hex digits after the last byte (Content-Length: size + 64)',
    ),
};

export const EtagSchema = z.string().min(1).max(256);
export const LockTokenSchema = z.string().min(1).max(512);
/** The sha256 of the body the client will send; a body that differs is never committed. */
export const Sha256Schema = z
  .string()
  .regex(SHA256_HEX, { error: 'must be a sha256 as 64 lowercase hex digits' });
export const SizeSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
