import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res, UseGuards } from '@nestjs/common';
import {
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
  ApiForbiddenResponse,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { Throttle } from '@nestjs/throttler';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthUser } from '../common/auth/auth-user';
import { Auth, CurrentUser } from '../common/auth/decorators';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { AuthService } from './auth.service';
import { LoginDto } from './dto/login.dto';
import { MeDto, MessageDto, SessionDto } from './dto/session.responses';
import { ACCESS_COOKIE, extractAccessToken } from './jwt.strategy';
import { SessionThrottlerGuard } from './session-throttler.guard';

const MINUTE_MS = 60_000;

@ApiTags('session')
@Controller()
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post('login')
  @HttpCode(200)
  @UseGuards(SessionThrottlerGuard)
  @Throttle({ default: { limit: 10, ttl: MINUTE_MS } })
  @ApiOperation({ summary: 'Sign in; sets the pacs_access_token cookie' })
  @ApiOkResponse({ type: SessionDto })
  @ApiUnauthorizedResponse({ description: '`{error: "Credenciais inválidas."}`' })
  @ApiForbiddenResponse({ description: 'User or tenant inactive: `{error: "Conta desativada."}`' })
  @ApiUnprocessableEntityResponse({ description: 'Validation failure' })
  @ApiTooManyRequestsResponse({ description: '10 per minute per IP: `{message: "Too Many Attempts."}`' })
  async login(
    @Body() body: LoginDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionDto> {
    const session = await this.auth.login(body.email, body.password);
    this.setCookie(request, reply, session);
    return session;
  }

  @Post('logout')
  @HttpCode(200)
  @Auth()
  @ApiOperation({ summary: 'Blacklist the presented token and remove the cookie' })
  @ApiOkResponse({ type: MessageDto })
  async logout(@CurrentUser() user: AuthUser, @Res({ passthrough: true }) reply: FastifyReply): Promise<MessageDto> {
    await this.auth.logout(user);
    reply.clearCookie(ACCESS_COOKIE, { path: '/' });
    return { message: 'Successfully logged out' };
  }

  @Post('refresh')
  @HttpCode(200)
  @UseGuards(SessionThrottlerGuard)
  @Throttle({ default: { limit: 30, ttl: MINUTE_MS } })
  @ApiOperation({
    summary: 'Exchange the token (even expired) for a new one inside the 14-day window; the old one is blacklisted',
  })
  @ApiOkResponse({ type: SessionDto })
  @ApiUnauthorizedResponse({
    description:
      '`{message: "Token Refresh window has expired"}`, `{message: "The token has been blacklisted"}` or `{message: "Unauthenticated."}`',
  })
  @ApiTooManyRequestsResponse({ description: '30 per minute per user' })
  async refresh(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<SessionDto> {
    const session = await this.auth.refresh(extractAccessToken(request));
    this.setCookie(request, reply, session);
    return session;
  }

  @Get('me')
  @Auth()
  @ApiOperation({ summary: 'The signed-in user with tenant and unit' })
  @ApiOkResponse({ type: MeDto })
  me(@CurrentUser() user: AuthUser): Promise<MeDto> {
    return this.auth.me(user);
  }

  private setCookie(request: FastifyRequest, reply: FastifyReply, session: SessionDto): void {
    reply.setCookie(ACCESS_COOKIE, session.access_token, {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      maxAge: session.expires_in,
      secure: this.config.COOKIE_SECURE || request.protocol === 'https',
    });
  }
}
