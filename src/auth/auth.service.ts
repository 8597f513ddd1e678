import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AuthUser } from '../common/auth/auth-user';
import { PasswordHasher } from '../common/auth/password-hasher';
import { Errors } from '../common/errors/api-errors';
import { AccountStatusService } from './account-status.service';
import { MeDto, SessionDto, SessionUserDto } from './dto/session.responses';
import { TokenService, TokenSubject } from './token.service';

type UserRow = TokenSubject & {
  email: string;
  name: string;
  password: string;
  is_active: boolean;
  tenant_active: boolean | null;
};

export function sessionUser(user: TokenSubject & { email: string; name: string }): SessionUserDto {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    tenant_id: user.tenant_id,
    unit_id: user.unit_id,
    is_super_admin: user.is_super_admin,
    is_tenant_admin: user.is_tenant_admin,
  };
}

@Injectable()
export class AuthService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly tokens: TokenService,
    private readonly accounts: AccountStatusService,
    private readonly passwords: PasswordHasher,
  ) {}

  async login(email: string, password: string): Promise<SessionDto> {
    const rows: UserRow[] = await this.dataSource.query(
      `SELECT u.id, u.email, u.name, u.password, u.tenant_id, u.unit_id, u.is_super_admin,
              u.is_tenant_admin, u.is_active, t.is_active AS tenant_active
         FROM users u LEFT JOIN tenants t ON t.id = u.tenant_id
        WHERE lower(u.email) = lower($1)`,
      [email.trim()],
    );
    const user = rows[0];
    // An unknown email is verified against a dummy hash of the real cost: both answers take as long.
    const matches = await this.passwords.verify(password, user?.password);
    if (!user || !matches) throw Errors.invalidCredentials();
    if (!user.is_active || (user.tenant_id !== null && user.tenant_active !== true)) {
      throw Errors.accountDisabled();
    }
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
    const rows: Array<{ tenant_name: string | null; unit_name: string | null }> = await this.dataSource.query(
      `SELECT t.name AS tenant_name, un.name AS unit_name
         FROM users u
         LEFT JOIN tenants t ON t.id = u.tenant_id
         LEFT JOIN units un ON un.id = u.unit_id
        WHERE u.id = $1`,
      [user.id],
    );
    const names = rows[0] ?? { tenant_name: null, unit_name: null };
    return {
      ...sessionUser(user),
      tenant: user.tenant_id ? { id: user.tenant_id, name: names.tenant_name ?? '' } : null,
      unit: user.unit_id ? { id: user.unit_id, name: names.unit_name ?? '' } : null,
    };
  }
}
