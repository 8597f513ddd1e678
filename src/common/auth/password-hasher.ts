import { Injectable, OnModuleInit } from '@nestjs/common';
import * as bcrypt from 'bcrypt';
import { randomBytes } from 'crypto';
import { availableParallelism } from 'os';
import { OrderedGate } from '../concurrency/ordered-gate';

/** bcrypt cost of every stored password (about 100-300 ms of one core's time). */
export const PASSWORD_COST = 12;

/** `$2a$`, `$2b$` and `$2y$` hashes: the same algorithm (the letters mark fixed bugs of other libraries). */
const BCRYPT_HASH = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/;

/** The cost a bcrypt hash was made with, or null when the text is not a bcrypt hash. */
export function bcryptCostOf(hash: string): number | null {
  const match = BCRYPT_HASH.exec(hash);
  return match ? Number(match[1]) : null;
}

/**
 * Hashes and verifies passwords with native bcrypt on libuv's thread pool, never on the event loop
 * (bcryptjs at cost 12 held the loop for about 250 ms a login: a burst of sign-ins stopped every
 * other request). At most one hash per core runs at once, so a burst neither takes every pool
 * thread (files and DNS use them too) nor more CPU than the machine has. The bcrypt binding ships
 * prebuilt in its package: no download or compile step at install.
 */
@Injectable()
export class PasswordHasher implements OnModuleInit {
  private readonly gate = new OrderedGate(Math.max(1, availableParallelism()));
  private dummy?: Promise<string>;

  /** The dummy hash is ready before the first sign-in of an unknown email. */
  onModuleInit(): void {
    void this.dummyHash();
  }

  hash(password: string, cost = PASSWORD_COST): Promise<string> {
    return this.gate.run(() => bcrypt.hash(password, cost));
  }

  /**
   * Whether `password` matches `hash`. With no hash (an unknown email) or one that is not bcrypt,
   * the answer is false after a full verification against a hash of the real cost, so the time
   * taken does not tell whether the account exists.
   */
  async verify(password: string, hash: string | null | undefined): Promise<boolean> {
    const usable = typeof hash === 'string' && bcryptCostOf(hash) !== null;
    const against = usable ? hash.replace(/^\$2y\$/, '$2b$') : await this.dummyHash();
    const matches = await this.compare(password, against);
    return usable && matches;
  }

  /** One bcrypt verification on the thread pool; `hash` must be a `$2a$`/`$2b$` hash. */
  compare(password: string, hash: string): Promise<boolean> {
    return this.gate.run(() => bcrypt.compare(password, hash));
  }

  /** A hash of a random password at the real cost, computed once (off the event loop) and kept. */
  dummyHash(): Promise<string> {
    this.dummy ??= this.hash(randomBytes(16).toString('base64'));
    return this.dummy;
  }
}
