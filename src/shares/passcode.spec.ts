import { hashPasscode, verifyPasscode } from './passcode';

describe('share passcodes', () => {
  it('verifies its own hashes, and only with the same passcode (accents as typed, either normal form)', async () => {
    const hash = await hashPasscode('São-Paulo 2024');
    expect(hash).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    await expect(verifyPasscode('São-Paulo 2024', hash)).resolves.toBe(true);
    await expect(verifyPasscode('Sa\u0303o-Paulo 2024', hash)).resolves.toBe(true);
    await expect(verifyPasscode('sao-paulo 2024', hash)).resolves.toBe(false);
    await expect(verifyPasscode('', hash)).resolves.toBe(false);
  });

  it('salts every hash', async () => {
    expect(await hashPasscode('123456')).not.toBe(await hashPasscode('123456'));
  });

  it('answers false for a stored value that is not its hash', async () => {
    for (const stored of ['', 'plain', '$2b$12$abc', 'scrypt$16384$8$1$$']) {
      await expect(verifyPasscode('123456', stored)).resolves.toBe(false);
    }
  });
});
