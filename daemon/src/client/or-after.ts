/**
 * A wait with a deadline, on both sides of the socket (the client's stop of a local
 * nats-server, the daemon's start of one and its reads that give the relay a while).
 */

/** `promise`'s value, or `late` once `ms` pass first; a rejection is passed on, and the timer never outlives the race. */
export async function orAfter<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<L>((resolve) => {
        timer = setTimeout(() => resolve(late), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
