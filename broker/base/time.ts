/** Instants on the broker's clock as the contracts write them. */

/** ms since the epoch → ISO-8601 UTC with milliseconds (`2025-01-02T14:05:00.000Z`). */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
