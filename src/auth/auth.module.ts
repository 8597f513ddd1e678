import { Global, Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { PassportModule } from '@nestjs/passport';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { PasswordHasher } from '../common/auth/password-hasher';
import { AccountStatusService } from './account-status.service';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { JwtStrategy } from './jwt.strategy';
import { SessionThrottlerGuard } from './session-throttler.guard';
import { TokenService } from './token.service';

/** Global so that every feature module's `@Auth()` guard finds the strategy and services. */
@Global()
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
  providers: [AuthService, TokenService, AccountStatusService, JwtStrategy, SessionThrottlerGuard, PasswordHasher],
  exports: [TokenService, AccountStatusService, PasswordHasher],
})
export class AuthModule {}
