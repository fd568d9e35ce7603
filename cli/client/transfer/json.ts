/**
 * Reading JSON the CLI did not write itself (broker answers, its own records on disk)
 * without a schema library: the client commands load nothing but node and cli/, so a
 * call's start-up stays small (zod alone took ~150 ms to load; docs/clients.md).
 */
import type { JsonObject } from '../../../broker/base/protocol.js';

/** `text` as JSON, or undefined when it is not JSON (a bad shape, to the caller). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A plain JSON object (not an array, not null). */
export const isObject = (v: unknown): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Absent, or a string. */
export const optionalString = (v: unknown): v is string | undefined =>
  v === undefined || typeof v === 'string';
