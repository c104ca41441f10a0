/** Lets at most `limit` tasks run at once; the others wait in arrival order. */
export function createGate(limit: number): { acquire(): Promise<void>; release(): void } {
  let active = 0;
  const waiting: Array<() => void> = [];
  return {
    acquire() {
      if (active < limit) {
        active++;
        return Promise.resolve();
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
    release() {
      const next = waiting.shift();
      if (next)
        next(); // the slot passes straight to the next waiter
      else active--;
    },
  };
}
