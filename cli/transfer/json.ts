import type { z } from 'zod';

/** `text` as JSON checked against `schema`; text that is not JSON fails like a bad shape. */
export function parseJsonAs<T extends z.ZodType>(
  schema: T,
  text: string,
): ReturnType<T['safeParse']> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  return schema.safeParse(value) as ReturnType<T['safeParse']>;
}
