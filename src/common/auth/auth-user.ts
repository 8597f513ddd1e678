/**
 * Who a user account is and what it may do: the one identity type. The caller (AuthUser), the
 * account's state (AccountState), a token's subject (TokenSubject) and the admin's user row
 * (AdminUserRow) are all derived from it.
 */
export interface Identity {
  id: string;
  email: string;
  name: string;
  tenant_id: string | null;
  unit_id: string | null;
  is_super_admin: boolean;
  is_tenant_admin: boolean;
}

/** The caller, as the auth guard resolved it from the token and the account's current state. */
export interface AuthUser extends Identity {
  /** The presented token's id and times, for logout and refresh. */
  token: AccessTokenClaims;
}

/** Exactly the identity's fields of `account` (rows and states carry more). */
export function identityOf(account: Identity): Identity {
  return {
    id: account.id,
    email: account.email,
    name: account.name,
    tenant_id: account.tenant_id,
    unit_id: account.unit_id,
    is_super_admin: account.is_super_admin,
    is_tenant_admin: account.is_tenant_admin,
  };
}

export interface AccessTokenClaims {
  sub: string;
  jti: string;
  typ: 'access';
  tenant_id: string | null;
  unit_id: string | null;
  is_super_admin: boolean;
  is_tenant_admin: boolean;
  /** Time of the original login (seconds); the refresh window counts from it. */
  orig_iat: number;
  iat: number;
  exp: number;
}
