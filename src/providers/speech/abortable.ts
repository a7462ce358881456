/**
 * Races `promise` against `signal`, rejecting with the signal's reason and
 * leaving no listener behind, so a caller who gives up is never kept waiting
 * on work it no longer wants (engine start-up, the next audio chunk).
 */
export async function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  signal.throwIfAborted();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
