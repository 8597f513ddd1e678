import { Injectable } from '@nestjs/common';
import { AuthUser, Identity, identityOf } from '../common/auth/auth-user';
import { PasswordHasher } from '../common/auth/password-hasher';
import { Errors } from '../common/errors/api-errors';
import { AccountStatusService } from './account-status.service';
import { AccountsRepository } from './accounts.repository';
import { MeDto, SessionDto, SessionUserDto } from './dto/session.responses';
import { TokenService } from './token.service';

export function sessionUser(user: Identity): SessionUserDto {
  return identityOf(user);
}

@Injectable()
export class AuthService {
  constructor(
    private readonly accountRows: AccountsRepository,
    private readonly tokens: TokenService,
    private readonly accounts: AccountStatusService,
    private readonly passwords: PasswordHasher,
  ) {}

  async login(email: string, password: string): Promise<SessionDto> {
    const user = await this.accountRows.findForSignIn(email.trim());
    // An unknown email is verified against a dummy hash of the real cost: both answers take as long.
    const matches = await this.passwords.verify(password, user?.password);
    if (!user || !matches) throw Errors.invalidCredentials();
    if (!user.usable) throw Errors.accountDisabled();
    return { ...this.tokens.issue(user), user: sessionUser(user) };
  }

  async logout(user: AuthUser): Promise<void> {
    await this.tokens.blacklist(user.token);
  }

  /**
   * Exchanges a token (expired or not) for a new one while the 14-day window since the original
   * login is open; the old token is blacklisted so it cannot be refreshed twice.
   */
  async refresh(token: string | null): Promise<SessionDto> {
    const claims = token ? this.tokens.verify(token, { ignoreExpiration: true }) : null;
    if (!claims) throw Errors.unauthenticated();
    if (!this.tokens.isInRefreshWindow(claims)) throw Errors.refreshWindowExpired();
    if (await this.tokens.isBlacklisted(claims.jti)) throw Errors.tokenBlacklisted();
    const account = await this.accounts.get(claims.sub);
    if (!account?.usable) throw Errors.unauthenticated();
    if (!(await this.tokens.blacklist(claims))) throw Errors.tokenBlacklisted();
    return { ...this.tokens.issue(account, claims.orig_iat), user: sessionUser(account) };
  }

  async me(user: AuthUser): Promise<MeDto> {
    const names = await this.accountRows.namesOf(user.id);
    return {
      ...sessionUser(user),
      tenant: user.tenant_id ? { id: user.tenant_id, name: names.tenant_name ?? '' } : null,
      unit: user.unit_id ? { id: user.unit_id, name: names.unit_name ?? '' } : null,
    };
  }
}
