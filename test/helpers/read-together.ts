/**
 * Wraps an async read so that each of the first `count` calls gets its answer only once all of them have read:
 * they all see the state from before any of them acted on it, as requests racing on two relays would. Later
 * calls pass straight through.
 */
export function readTogether<A extends unknown[], R>(read: (...args: A) => Promise<R>, count = 2): (...args: A) => Promise<R> {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => (release = resolve));
  return async (...args) => {
    const result = await read(...args);
    if (++arrived >= count) release();
    await all;
    return result;
  };
}
