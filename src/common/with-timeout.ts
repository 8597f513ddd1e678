/**
 * `promise`, or a rejection with `message` once `ms` pass without an answer (the timer is cleared
 * either way). The promise itself is not cancelled: callers use this where a late answer is
 * harmless and a hung dependency must not hold a request.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, message = `no answer within ${ms} ms`): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
