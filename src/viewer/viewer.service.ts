import { HttpStatus, Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { randomUUID } from 'crypto';
import Redis from 'ioredis';
import fastifyCookie from '@fastify/cookie';
import type { IncomingHttpHeaders } from 'http';
import { AccountState, AccountStatusService, ACCESS_COOKIE, TokenService } from '../auth';
import type { AuthUser } from '../common/auth/auth-user';
import { DataScope, RecordPlace, scopeIncludes, scopeOf } from '../common/auth/data-scope';
import { ApiError } from '../common/errors/api-errors';
import { REDIS } from '../common/redis/redis.module';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { MetricsService, ViewerValidationResult } from '../operations';
import { StudiesRepository } from '../studies';
import { ViewerTokenDto } from './dto/issue-viewer-token.dto';
import { extractStudyUids } from './study-uids';
import { StudyPlaces, StudyPlacesCache } from './study-places.cache';
import { TtlCache } from '../common/cache/ttl-cache';
import { withTimeout } from '../common/with-timeout';

/** What a viewer token grants, stored in Redis under `viewer:<token>` for VIEWER_TOKEN_TTL seconds. */
export interface ViewerSession {
  user_id: string;
  /** The tenant whose studies the token opens: the caller's, or for a super admin the study's. */
  tenant_id: string;
  unit_id: string | null;
  study_id: string;
  /** Epoch milliseconds; checked on every validation, cached or not. */
  expires_at: number;
  /**
   * Set on a token a share link gave: it reads `study_uid` only, and dies with its share (its key
   * is deleted on revocation; such a session is never cached in memory, so that holds at once).
   */
  share_id?: string;
  study_uid?: string;
}

/** The study a share link opens, and the share (see ViewerService.issueForShare). */
export interface SharedStudy {
  share_id: string;
  /** Whoever created the share (the session's user_id; not checked while the share stands). */
  created_by: string | null;
  tenant_id: string;
  unit_id: string;
  study_id: string;
  study_instance_uid: string;
}

export type Verdict =
  | { status: HttpStatus.OK; result: ViewerValidationResult }
  | { status: HttpStatus.UNAUTHORIZED | HttpStatus.FORBIDDEN; result: ViewerValidationResult; body: { error: string } };

export const ALLOW: Verdict = { status: HttpStatus.OK, result: 'allowed' };
export const MISSING_TOKEN: Verdict = {
  status: HttpStatus.UNAUTHORIZED,
  result: 'missing_token',
  body: { error: 'Missing token' },
};
export const INVALID_TOKEN: Verdict = {
  status: HttpStatus.UNAUTHORIZED,
  result: 'invalid_token',
  body: { error: 'Invalid or expired token' },
};
export const FORBIDDEN: Verdict = { status: HttpStatus.FORBIDDEN, result: 'forbidden', body: { error: 'Forbidden' } };

export const viewerTokenKey = (token: string) => `viewer:${token}`;
/** The viewer tokens a share gave, so that revoking the share deletes them all. */
export const shareTokensKey = (shareId: string) => `viewer-share:${shareId}`;

// A token is re-read from Redis at most this often per process. Its expiry is exact regardless
// (expires_at travels with it); a deactivated account is caught by AccountStatusService's own cache.
const TOKEN_CACHE_MS = 5_000;
const MAX_CACHED_TOKENS = 20_000;
// Past this, an unanswered Redis is a refusal: nginx waits for us, and so does the viewer.
const REDIS_TIMEOUT_MS = 2_000;

/**
 * Viewer tokens: issued for one study to a signed-in user, validated by the proxy's auth
 * subrequest before every DICOMweb request. Validation reads Redis and in-process caches only
 * (the token, the study UID's tenants, the account's state), so a viewer's hundreds of requests
 * per study do not reach PostgreSQL.
 */
@Injectable()
export class ViewerService {
  private readonly logger = new Logger(ViewerService.name);
  private readonly sessions = new TtlCache<ViewerSession>(MAX_CACHED_TOKENS);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly studies: StudiesRepository,
    private readonly studyPlaces: StudyPlacesCache,
    private readonly accounts: AccountStatusService,
    private readonly tokens: TokenService,
    @Optional() private readonly metrics?: MetricsService,
  ) {}

  /**
   * A token for a study the caller can see (the same scope as GET /api/studies/{id}: a regular
   * user only for their unit's studies), else 404 `{error: "Study not found"}`.
   */
  async issue(user: AuthUser, scope: DataScope, studyId: string): Promise<ViewerTokenDto> {
    const study = await this.studies.findStudyRef(scope, studyId);
    if (!study) throw new ApiError(HttpStatus.NOT_FOUND, { error: 'Study not found' });
    const session = { user_id: user.id, tenant_id: study.tenant_id, unit_id: user.unit_id, study_id: study.id };
    return this.store(session, study.study_instance_uid, this.config.VIEWER_TOKEN_TTL);
  }

  /**
   * A token for the one study a share link opens, for at most `maxTtl` seconds (the share's own
   * expiry), recorded under the share so that `revokeShareTokens` ends it.
   */
  async issueForShare(shared: SharedStudy, maxTtl: number): Promise<ViewerTokenDto> {
    const session = {
      user_id: shared.created_by ?? '',
      tenant_id: shared.tenant_id,
      unit_id: shared.unit_id,
      study_id: shared.study_id,
      share_id: shared.share_id,
      study_uid: shared.study_instance_uid,
    };
    const ttl = Math.max(1, Math.min(this.config.VIEWER_TOKEN_TTL, Math.floor(maxTtl)));
    return this.store(session, shared.study_instance_uid, ttl);
  }

  /** Ends every viewer token the share gave, at once (they are never cached in memory). */
  async revokeShareTokens(shareId: string): Promise<void> {
    const tokens = await this.redis.smembers(shareTokensKey(shareId));
    await this.redis.del(shareTokensKey(shareId), ...tokens.map(viewerTokenKey));
  }

  private async store(grant: Omit<ViewerSession, 'expires_at'>, studyUid: string, ttl: number): Promise<ViewerTokenDto> {
    const token = randomUUID();
    const session: ViewerSession = { ...grant, expires_at: Date.now() + ttl * 1000 };
    const write = this.redis.multi().set(viewerTokenKey(token), JSON.stringify(session), 'EX', ttl);
    if (session.share_id) {
      // The set outlives every token in it: each new token pushes its expiry out to the token's.
      write.sadd(shareTokensKey(session.share_id), token).expire(shareTokensKey(session.share_id), ttl, 'GT');
      write.expire(shareTokensKey(session.share_id), ttl, 'NX');
    }
    await write.exec();
    // The viewer's first requests follow at once: have the study's UID ready for them (best effort:
    // validation looks it up itself otherwise).
    await this.studyPlaces.placesOf([studyUid]).catch(() => undefined);
    return { token, expires_in: ttl };
  }

  /** The proxy's question. Never throws: every outcome is 200, 401 or 403 (nginx turns others into 500). */
  async validate(headers: IncomingHttpHeaders): Promise<Verdict> {
    return this.validateNow(headers) ?? this.validateFromStores(headers);
  }

  /** The verdict from Redis and PostgreSQL where memory has no answer (after `validateNow`). */
  async validateFromStores(headers: IncomingHttpHeaders): Promise<Verdict> {
    return this.recorded(await this.decide(headers));
  }

  /**
   * The same verdict as `validate`, without waiting, when everything it needs is in process memory
   * (a viewer's requests after its first); undefined when Redis or PostgreSQL must be asked.
   */
  validateNow(headers: IncomingHttpHeaders): Verdict | undefined {
    const outcome = this.decideFromMemory(headers);
    return outcome && this.recorded(outcome);
  }

  private recorded(outcome: Outcome): Verdict {
    this.metrics?.viewerValidation(outcome.verdict.result, outcome.cacheHit);
    return outcome.verdict;
  }

  private decideFromMemory(headers: IncomingHttpHeaders): Outcome | undefined {
    const credential = credentialOf(headers);
    if (credential === null) return { verdict: MISSING_TOKEN };
    // A session needs Redis (its logout is not seen otherwise): always the stores.
    if (credential.kind === 'session') return undefined;
    const token = credential.token;
    if (!isUUID(token)) return { verdict: INVALID_TOKEN };
    const session = this.sessions.get(token);
    if (!session) return undefined;
    if (session.expires_at <= Date.now()) return { verdict: INVALID_TOKEN };
    const account = this.accounts.peek(session.user_id);
    if (account === undefined) return undefined;
    if (!accountAllows(account, session)) return { verdict: INVALID_TOKEN };
    const uids = extractStudyUids(originalUriOf(headers));
    if (!uids) return { verdict: FORBIDDEN };
    const places = this.studyPlaces.peek(uids);
    if (!places) return undefined;
    return { verdict: placesVerdict(uids, places, (place) => place.tenant_id === session.tenant_id), cacheHit: true };
  }

  private async decide(headers: IncomingHttpHeaders): Promise<Outcome> {
    const credential = credentialOf(headers);
    if (credential === null) return { verdict: MISSING_TOKEN };
    let allows: StudyGrant | null;
    try {
      allows = credential.kind === 'session' ? await this.sessionScope(credential.token) : await this.viewerTokenScope(credential.token);
    } catch (error) {
      this.logger.warn(`Viewer token check failed, refusing: ${(error as Error)?.message ?? error}`);
      return { verdict: INVALID_TOKEN };
    }
    if (!allows) return { verdict: INVALID_TOKEN };

    const uids = extractStudyUids(originalUriOf(headers));
    if (!uids) return { verdict: FORBIDDEN };
    try {
      const { places, hit } = await this.studyPlaces.placesOf(uids);
      return { verdict: placesVerdict(uids, places, allows), cacheHit: hit };
    } catch (error) {
      this.logger.warn(`Viewer study lookup failed, refusing: ${(error as Error)?.message ?? error}`);
      return { verdict: FORBIDDEN, cacheHit: false };
    }
  }

  /**
   * A viewer token opens the studies of its tenant (the spec's rule); a share's token its one study
   * (its share standing is its key still being in Redis). Null when it is not valid.
   */
  private async viewerTokenScope(token: string): Promise<StudyGrant | null> {
    const session = await this.session(token);
    if (!session) return null;
    if (session.share_id) {
      const { study_uid, tenant_id } = session;
      return (place, uid) => uid === study_uid && place.tenant_id === tenant_id;
    }
    if (!accountAllows(await this.accounts.get(session.user_id), session)) return null;
    return (place) => place.tenant_id === session.tenant_id;
  }

  /**
   * A user's session opens the studies of the user's own scope (a regular user: their unit), with
   * the API guard's checks: a valid access token, not logged out, of a usable account in a usable
   * clinic. Null when it is not valid.
   */
  private async sessionScope(accessToken: string): Promise<StudyGrant | null> {
    const claims = this.tokens.verify(accessToken);
    if (!claims) return null;
    const [blacklisted, account] = await Promise.all([
      withTimeout(this.tokens.isBlacklisted(claims.jti), REDIS_TIMEOUT_MS),
      this.accounts.get(claims.sub),
    ]);
    if (blacklisted || !account?.usable) return null;
    const scope = scopeOf(account);
    return (place) => scopeIncludes(scope, place);
  }

  private async session(token: string): Promise<ViewerSession | null> {
    if (!isUUID(token)) return null;
    const now = Date.now();
    let session = this.sessions.get(token);
    if (!session) {
      const stored = await withTimeout(this.redis.get(viewerTokenKey(token)), REDIS_TIMEOUT_MS);
      session = stored ? parseSession(stored) : undefined;
      if (!session) return null;
      // A share's token is read from Redis every time: its revocation deletes it there, at once.
      if (!session.share_id) this.sessions.set(token, session, Math.min(now + TOKEN_CACHE_MS, session.expires_at));
    }
    return session.expires_at > now ? session : null;
  }
}

interface Outcome {
  verdict: Verdict;
  /** Whether the study-to-tenant lookup, when one was made, came from the cache alone. */
  cacheHit?: boolean;
}

/** What the caller presents: a viewer token, or a user's session (an access token). */
export type ViewerCredential = { kind: 'viewer_token' | 'session'; token: string };

const BEARER = /^Bearer[ ]+([^ ]+)[ ]*$/i;

/**
 * X-Viewer-Token when given; else `Authorization: Bearer`, which is a viewer token when it is a
 * uuid (OHIF sends the `token` URL parameter it was opened with this way) and an access token
 * otherwise (a JWT, never a uuid); else the session cookie. Null when there is none of these.
 */
export function credentialOf(headers: IncomingHttpHeaders): ViewerCredential | null {
  const viewerToken = headers['x-viewer-token'];
  if (typeof viewerToken === 'string' && viewerToken.trim() !== '') return { kind: 'viewer_token', token: viewerToken.trim() };
  const bearer = BEARER.exec(headers.authorization ?? '')?.[1];
  if (bearer) return { kind: isUUID(bearer) ? 'viewer_token' : 'session', token: bearer };
  const cookies = headers.cookie;
  if (cookies?.includes(ACCESS_COOKIE)) {
    const token = fastifyCookie.parse(cookies)[ACCESS_COOKIE];
    if (token) return { kind: 'session', token };
  }
  return null;
}

function originalUriOf(headers: IncomingHttpHeaders): string | undefined {
  const uri = headers['x-original-uri'];
  return typeof uri === 'string' ? uri : undefined;
}

/** The token dies with its user's or tenant's deactivation, and if the user left the tenant. */
function accountAllows(account: AccountState | null, session: ViewerSession): boolean {
  if (!account?.usable) return false;
  return account.is_super_admin || account.tenant_id === session.tenant_id;
}

/** Whether the caller may read the study `uid` held at `place`. */
type StudyGrant = (place: RecordPlace, uid: string) => boolean;

/** A UID held in several places is served by the image server as one study: all or nothing. */
function placesVerdict(uids: string[], places: Map<string, StudyPlaces>, allows: StudyGrant): Verdict {
  const allowed = uids.every((uid) => {
    const held = places.get(uid);
    return !!held && held.length > 0 && held.every((place) => allows(place, uid));
  });
  return allowed ? ALLOW : FORBIDDEN;
}

function parseSession(text: string): ViewerSession | undefined {
  try {
    const value = JSON.parse(text) as Partial<ViewerSession>;
    if (
      typeof value?.user_id === 'string' &&
      typeof value.tenant_id === 'string' &&
      typeof value.study_id === 'string' &&
      typeof value.expires_at === 'number'
    ) {
      return { ...value, unit_id: value.unit_id ?? null } as ViewerSession;
    }
  } catch {
    // A value we did not write: no session.
  }
  return undefined;
}
