import { JwtService } from '@nestjs/jwt';
import type Redis from 'ioredis';
import type { AppConfig } from '../config/environment';
import { TokenService } from './token.service';

const SECRET = 'a-test-secret-of-at-least-thirty-two-characters';
const START = Date.UTC(2026, 10, 25, 12, 0, 0);

function service(secret = SECRET): TokenService {
  const jwt = new JwtService({ secret, signOptions: { algorithm: 'HS256' }, verifyOptions: { algorithms: ['HS256'] } });
  // verify() never reaches Redis (the blacklist is isBlacklisted's).
  return new TokenService(jwt, {} as Redis, { JWT_SECRET: secret, JWT_TTL: 60, JWT_REFRESH_TTL: 10 } as AppConfig);
}

const subject = { id: 'u1', tenant_id: 't1', unit_id: 'n1', is_super_admin: false, is_tenant_admin: false };

describe('TokenService.verify and the verified-token cache', () => {
  beforeEach(() => jest.useFakeTimers({ now: START }));
  afterEach(() => jest.useRealTimers());

  it('accepts a verified token until the second before its exp, and refuses it from exp on, as jsonwebtoken does', () => {
    const tokens = service();
    const { access_token } = tokens.issue(subject);
    const claims = tokens.verify(access_token);
    expect(claims).toMatchObject({ sub: 'u1', typ: 'access', exp: START / 1000 + 60 });

    jest.setSystemTime(START + 59_999);
    expect(tokens.verify(access_token)).toEqual(claims);
    jest.setSystemTime(START + 60_000);
    expect(tokens.verify(access_token)).toBeNull();
    // The refresh path still reads an expired token's claims (its window is checked by the caller).
    expect(tokens.verify(access_token, { ignoreExpiration: true })).toMatchObject({ sub: 'u1' });
  });

  it('refuses a token whose signature or payload was changed after the real one was verified', () => {
    const tokens = service();
    const { access_token } = tokens.issue(subject);
    expect(tokens.verify(access_token)).not.toBeNull();
    const [header, payload, signature] = access_token.split('.');
    const forged = JSON.parse(Buffer.from(payload, 'base64url').toString());
    forged.is_super_admin = true;
    const forgedPayload = Buffer.from(JSON.stringify(forged)).toString('base64url');
    expect(tokens.verify(`${header}.${forgedPayload}.${signature}`)).toBeNull();
    expect(tokens.verify(`${header}.${payload}.${signature.slice(0, -2)}AA`)).toBeNull();
    // Signed with another secret (another deployment): refused, though its text was never seen.
    expect(tokens.verify(service('another-secret-of-at-least-thirty-two-chars').issue(subject).access_token)).toBeNull();
  });

  it('hands out the cached claims frozen, so that no request can change what the next one reads', () => {
    const tokens = service();
    const { access_token } = tokens.issue(subject);
    tokens.verify(access_token);
    const claims = tokens.verify(access_token);
    expect(Object.isFrozen(claims)).toBe(true);
    expect(tokens.verify(access_token)).toBe(claims);
  });
});
