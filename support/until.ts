/**
 * Polls `check` until it holds; throws `timed out waiting for <what>` after `timeoutMs`.
 * The one wait of the tests, the benchmarks and the review (never a fixed sleep).
 *
 * The default is generous on purpose: a wait that holds returns as soon as it does, and
 * the limit only decides how long a failing test takes. Two CI runs side by side on two
 * CPUs (real crypto, PHP, the fakes) made 8 s too short for waits that take 50 ms alone.
 */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  stepMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
