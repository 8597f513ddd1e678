import * as bcryptjs from 'bcryptjs';
import { bcryptCostOf, PASSWORD_COST, PasswordHasher } from './password-hasher';

describe('PasswordHasher', () => {
  const hasher = new PasswordHasher();
  afterEach(() => jest.restoreAllMocks());

  it('hashes at cost 12 and verifies its own hashes', async () => {
    const hash = await hasher.hash('correct horse');
    expect(PASSWORD_COST).toBe(12);
    expect(hash).toMatch(/^\$2b\$12\$[./A-Za-z0-9]{53}$/);
    await expect(hasher.verify('correct horse', hash)).resolves.toBe(true);
    await expect(hasher.verify('correct horsf', hash)).resolves.toBe(false);
  }, 20_000);

  // Hashes stored before (bcryptjs) and those of other systems keep working: $2a$, $2b$ and $2y$.
  it.each(['2a', '2b', '2y'])('verifies existing $%s$ hashes, non-ASCII passwords included', async (variant) => {
    for (const password of ['password-123', 'sen\u00e7a-\u00e1gil-\u{1F600}', 'x'.repeat(72)]) {
      const hash = bcryptjs.hashSync(password, 4).replace(/^\$2[ab]\$/, `$${variant}$`);
      await expect(hasher.verify(password, hash)).resolves.toBe(true);
      await expect(hasher.verify(`!${password}`, hash)).resolves.toBe(false);
    }
  });

  it('answers false, after a full verification at the real cost, for no hash or one that is not bcrypt', async () => {
    const compare = jest.spyOn(PasswordHasher.prototype, 'compare');
    for (const stored of [undefined, null, '', 'plain-text', '$2b$04$short']) {
      await expect(hasher.verify('anything', stored)).resolves.toBe(false);
    }
    expect(compare).toHaveBeenCalledTimes(5);
    for (const [, against] of compare.mock.calls) expect(bcryptCostOf(against as string)).toBe(12);
  }, 20_000);

  it('computes the dummy hash once', async () => {
    const fresh = new PasswordHasher();
    const hash = jest.spyOn(fresh, 'hash');
    fresh.onModuleInit();
    const [first, second] = await Promise.all([fresh.dummyHash(), fresh.dummyHash()]);
    expect(first).toBe(second);
    expect(hash).toHaveBeenCalledTimes(1);
    expect(bcryptCostOf(first)).toBe(12);
  }, 20_000);

  it('reads the cost of a bcrypt hash', () => {
    expect(bcryptCostOf(`$2y$10$${'a'.repeat(53)}`)).toBe(10);
    expect(bcryptCostOf(`$2x$10$${'a'.repeat(53)}`)).toBeNull();
    expect(bcryptCostOf('nope')).toBeNull();
  });
});
