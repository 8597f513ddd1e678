import { bcryptCostOf, PasswordHasher } from '../common/auth/password-hasher';
import type { AccountStatusService } from './account-status.service';
import type { AccountsRepository } from './accounts.repository';
import { AuthService } from './auth.service';
import type { TokenService } from './token.service';

describe('AuthService.login', () => {
  afterEach(() => jest.restoreAllMocks());

  // Timing is not asserted by wall time (see `npm run bench`): the unknown email pays the same work.
  it('verifies an unknown email against a hash of the real cost 12, then refuses it like a wrong password', async () => {
    const noRows = { findForSignIn: jest.fn().mockResolvedValue(null) } as unknown as AccountsRepository;
    const service = new AuthService(noRows, {} as TokenService, {} as AccountStatusService, new PasswordHasher());
    const compare = jest.spyOn(PasswordHasher.prototype, 'compare');
    await expect(service.login('nobody@clinic.example', 'a-password')).rejects.toMatchObject({
      status: 401,
      response: { error: 'Credenciais inválidas.' },
    });
    expect(compare).toHaveBeenCalledTimes(1);
    const [password, against] = compare.mock.calls[0];
    expect(password).toBe('a-password');
    expect(bcryptCostOf(against as string)).toBe(12);
  }, 20_000);
});
