/**
 * Polls `check` until it returns a value other than undefined, and returns that value. A throw counts as
 * "not yet", so an assertion can be the check (`eventually(() => expect(seen).toEqual([1, 2]))`); at the
 * deadline the last error is thrown again, so a failure reads as the assertion that never held.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let failure: unknown;
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      failure = error;
    }
    if (Date.now() > deadline) {
      if (failure !== undefined) throw failure;
      throw new Error(`condition not met within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Milliseconds `work` took to settle, with its value. */
export async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}
