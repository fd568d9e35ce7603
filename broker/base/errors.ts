/**
 * How a caught error is written down. Each form says what it keeps: a log line gets the
 * stack (the logger scrubs every line), a message for a person gets one line.
 */

/** The stack (or `Name: message`), for a log line. */
export function errorDetail(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}

/** The message alone, for a sentence that already says what failed. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `Name: message`, or `unknown error` for a thrown non-Error. */
export function errorLine(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : 'unknown error';
}
