/**
 * Polls `check` until it holds; throws `timed out waiting for <what>` after `timeoutMs`.
 * The one wait of the tests, the benchmarks and the review (never a fixed sleep).
 */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 8_000,
  stepMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
