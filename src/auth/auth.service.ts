import { Injectable } from '@nestjs/common';
import * as bcrypt from 'bcryptjs';
import { AuthUser, Identity, identityOf } from '../common/auth/auth-user';
import { Errors } from '../common/errors/api-errors';
import { AccountStatusService } from './account-status.service';
import { AccountsRepository } from './accounts.repository';
import { MeDto, SessionDto, SessionUserDto } from './dto/session.responses';
import { TokenService } from './token.service';

// Compared against when the email is unknown, so both answers take as long.
const DUMMY_HASH = bcrypt.hashSync('not-a-real-password', 10);

export function sessionUser(user: Identity): SessionUserDto {
  return identityOf(user);
}

@Injectable()
export class AuthService {
  constructor(
    private readonly accountRows: AccountsRepository,
    private readonly tokens: TokenService,
    private readonly accounts: AccountStatusService,
  ) {}

  async login(email: string, password: string): Promise<SessionDto> {
    const user = await this.accountRows.findForSignIn(email.trim());
    const matches = await bcrypt.compare(password, user?.password ?? DUMMY_HASH);
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
