import { randomBytes, scrypt, timingSafeEqual } from 'crypto';

/**
 * A share's passcode, kept as scrypt (N=2^14, r=8, p=1: about 16 MB and tens of milliseconds),
 * computed on libuv's thread pool, never on the event loop. Cheaper than the accounts' bcrypt on
 * purpose: a passcode is a second factor to a 256-bit token that is never stored, and guessing it
 * online is capped by the share's lock-out (5 wrong tries in 15 minutes).
 */
const N = 16_384;
const R = 8;
const P = 1;
const KEY_BYTES = 32;

function derive(passcode: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(passcode.normalize('NFC'), salt, KEY_BYTES, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

/** `scrypt$N$r$p$<salt base64>$<key base64>` */
export async function hashPasscode(passcode: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(passcode, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Whether `passcode` matches `stored` (false for anything that is not such a hash). */
export async function verifyPasscode(passcode: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const actual = await derive(passcode, Buffer.from(salt, 'base64'), Number(n), Number(r), Number(p));
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
