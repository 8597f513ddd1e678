/** The caller, as the auth guard resolved it from the token and the account's current state. */
export interface AuthUser {
  id: string;
  email: string;
  name: string;
  tenant_id: string | null;
  unit_id: string | null;
  is_super_admin: boolean;
  is_tenant_admin: boolean;
  /** The presented token's id and times, for logout and refresh. */
  token: AccessTokenClaims;
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
