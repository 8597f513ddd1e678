import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { PassportModule } from '@nestjs/passport';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { PasswordHasher } from '../common/auth/password-hasher';
import { AccountStatusService } from './account-status.service';
import { AccountsRepository } from './accounts.repository';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { Authenticator } from './authenticator';
import { JwtStrategy } from './jwt.strategy';
import { SessionThrottlerGuard } from './session-throttler.guard';
import { TokenService } from './token.service';

/**
 * Sign-in, tokens and the JWT strategy. Not global: `@Auth()` needs nothing injected (passport
 * finds the strategy by name once this module is loaded, which the API module does); the few
 * features that use the account state or the Authenticator import this module.
 */
@Module({
  imports: [
    PassportModule.register({ session: false }),
    JwtModule.registerAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        secret: config.JWT_SECRET,
        signOptions: { algorithm: 'HS256' },
        verifyOptions: { algorithms: ['HS256'] },
      }),
    }),
  ],
  controllers: [AuthController],
  providers: [
    AccountsRepository,
    AuthService,
    TokenService,
    AccountStatusService,
    Authenticator,
    JwtStrategy,
    SessionThrottlerGuard,
    PasswordHasher,
  ],
  exports: [TokenService, AccountStatusService, Authenticator, PasswordHasher],
})
export class AuthModule {}
