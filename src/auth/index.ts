// The auth feature's public surface: what other features may import (see eslint.config.mjs).
export { AuthModule } from './auth.module';
export { AccountStatusService } from './account-status.service';
export type { AccountState } from './accounts.repository';
export { Authenticator } from './authenticator';
export { ACCESS_COOKIE, extractAccessToken } from './jwt.strategy';
export { TokenService } from './token.service';
