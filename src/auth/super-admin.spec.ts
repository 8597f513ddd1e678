import { checkSuperAdmin, createSuperAdmin } from './super-admin';

describe('checkSuperAdmin', () => {
  it('trims the name and email and lower-cases the email', () => {
    expect(checkSuperAdmin({ email: ' Root@Clinic.Example ', password: 'a-long-password', name: ' Root ' })).toEqual({
      email: 'root@clinic.example',
      password: 'a-long-password',
      name: 'Root',
    });
  });

  it.each([
    [{ email: 'not-an-email', password: 'a-long-password', name: 'Root' }, 'Invalid email: not-an-email'],
    [{ email: 'root@clinic.example', password: 'short', name: 'Root' }, 'at least 8 characters'],
    [{ email: 'root@clinic.example', password: 'a-long-password', name: '  ' }, 'The name must be 1 to 255 characters.'],
    [{ email: 'root@clinic.example', password: 'a-long-password', name: 'x'.repeat(256) }, '1 to 255 characters'],
  ])('refuses %o with a message for the operator', (input, message) => {
    expect(() => checkSuperAdmin(input)).toThrow(expect.objectContaining({ userFacing: true }));
    expect(() => checkSuperAdmin(input)).toThrow(message);
  });
});

describe('createSuperAdmin', () => {
  const admin = { email: 'root@clinic.example', password: 'a-long-password', name: 'Root' };
  const hasher = { hash: jest.fn(async (password: string) => `hash(${password})`) };

  it('stores the hash, never the password, and returns the new id', async () => {
    const accounts = { insertSuperAdmin: jest.fn().mockResolvedValue('new-id') };
    expect(await createSuperAdmin(accounts, admin, hasher)).toBe('new-id');
    expect(accounts.insertSuperAdmin).toHaveBeenCalledWith('Root', 'root@clinic.example', 'hash(a-long-password)');
  });

  it('refuses an email that is taken', async () => {
    const accounts = { insertSuperAdmin: jest.fn().mockResolvedValue(null) };
    await expect(createSuperAdmin(accounts, admin, hasher)).rejects.toThrow(
      'A user with email root@clinic.example already exists.',
    );
  });
});
