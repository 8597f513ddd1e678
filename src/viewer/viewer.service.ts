import { HttpStatus, Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { randomUUID } from 'crypto';
import Redis from 'ioredis';
import fastifyCookie from '@fastify/cookie';
import type { IncomingHttpHeaders } from 'http';
import { GateReader, ViewTrail } from '../audit';
import { AccountState, AccountStatusService, ACCESS_COOKIE, TokenService } from '../auth';
import type { AuthUser } from '../common/auth/auth-user';
import { DataScope, scopeIncludes, scopeOf } from '../common/auth/data-scope';
import { ApiError } from '../common/errors/api-errors';
import { REDIS } from '../common/redis/redis.module';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { MetricsService, ViewerValidationResult } from '../operations';
import { StudiesRepository, StudyPlace } from '../studies';
import { ViewerTokenDto } from './dto/issue-viewer-token.dto';
import { extractStudyUids, renderingOf } from './study-uids';
import { RenderingGate } from './rendering-gate';
import { StudyPlaces, StudyPlacesCache } from './study-places.cache';
import { RefusedUidLimit } from './refused-uid-limit';
import { ViewerSession, ViewerTokenRecords } from './viewer-token-record';
import { TtlCache } from '../common/cache/ttl-cache';
import { withTimeout } from '../common/with-timeout';

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
/** The viewer tokens a share gave, so that its revocation ends them all at once. */
const shareTokensKey = (shareId: string) => `viewer-share:${shareId}`;
/**
 * Set when a share is revoked, before its viewer tokens are deleted: a token being issued meanwhile
 * sees it in its own transaction and is taken back. Kept past any issue that could still be running.
 */
const shareRevokedKey = (shareId: string) => `share-revoked:${shareId}`;
const SHARE_REVOKED_FLAG_SECONDS = 3600;

// A token is re-read from Redis at most this often per process. Its expiry is exact regardless
// (expires_at travels with it); a deactivated account is caught by AccountStatusService's own cache.
const TOKEN_CACHE_MS = 5_000;
const MAX_CACHED_TOKENS = 20_000;
// Past this, an unanswered Redis is a refusal: nginx waits for us, and so does the viewer.
const REDIS_TIMEOUT_MS = 2_000;

/** What a token is issued for: a study, and who asks (a user, or a share's creator for a share's token). */
export interface ViewerGrant {
  /** The user asking; for a share's token, the share's creator (the token dies with their account or clinic). */
  userId: string;
  /** The user's unit as they ask (null for a clinic or super admin, and for a share's token). */
  unitId: string | null;
  study: { id: string; tenant_id: string; study_instance_uid: string; patient_id: string };
  /** When set, the token is a share's: it reads `study` only (decisions.md 3d). */
  shareId?: string | null;
}

/** The study a share link opens, and the share (see ViewerService.issueForShare). */
export interface SharedStudy {
  share_id: string;
  /** Whoever created the share: the token is issued in their name and dies with their account or clinic. */
  created_by: string;
  tenant_id: string;
  unit_id: string;
  study_id: string;
  study_instance_uid: string;
}

/** A caller the gate has recognised: who it is and what it may read. */
interface Reader extends GateReader {
  /** What the refused-UID limit counts under. */
  credentialId: string;
  reaches(place: StudyPlace): boolean;
}

/**
 * Viewer tokens: issued for one study to a signed-in user (or through a share), validated by the
 * proxy's auth subrequest before every DICOMweb request. Validation reads Redis and in-process
 * caches only (the token, the study UID's places, the account's state), so a viewer's hundreds of
 * requests per study do not reach PostgreSQL.
 */
@Injectable()
export class ViewerService {
  private readonly logger = new Logger(ViewerService.name);
  private readonly sessions = new TtlCache<ViewerSession>(MAX_CACHED_TOKENS);
  /** A token's reader, kept while its session and its account's cached state are the same objects. */
  private readonly readers = new WeakMap<ViewerSession, { account: AccountState | null; reader: Reader | null }>();
  private readonly records: ViewerTokenRecords;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly studies: StudiesRepository,
    private readonly studyPlaces: StudyPlacesCache,
    private readonly accounts: AccountStatusService,
    private readonly tokens: TokenService,
    private readonly refusedUids: RefusedUidLimit,
    private readonly trail: ViewTrail,
    private readonly renderings: RenderingGate,
    @Optional() private readonly metrics?: MetricsService,
  ) {
    this.records = new ViewerTokenRecords(config.JWT_SECRET);
  }

  /**
   * A token for a study in the caller's own scope (the same scope as GET /api/studies/{id}: a
   * regular user only for their unit's studies), else 404 `{error: "Study not found"}`.
   */
  async issue(user: AuthUser, scope: DataScope, studyId: string): Promise<ViewerTokenDto> {
    const study = await this.studies.findStudyRef(scope, studyId);
    if (!study) throw new ApiError(HttpStatus.NOT_FOUND, { error: 'Study not found' });
    return (await this.issueToken({ userId: user.id, unitId: user.unit_id, study }))!;
  }

  /**
   * Every viewer token is made here, a user's or a share's: the caller has checked that the grant is
   * due (the study in the user's scope, or an open share of it). Null for a share's token when the
   * share was revoked while it was being written (the token is taken back).
   */
  private async issueToken(grant: ViewerGrant, ttl = this.config.VIEWER_TOKEN_TTL): Promise<ViewerTokenDto | null> {
    const token = randomUUID();
    const session: ViewerSession = {
      user_id: grant.userId,
      tenant_id: grant.study.tenant_id,
      unit_id: grant.unitId,
      study_id: grant.study.id,
      patient_id: grant.study.patient_id,
      share_id: grant.shareId ?? null,
      expires_at: Date.now() + ttl * 1000,
    };
    // One pipeline; Redis runs one connection's commands in order, so the revocation flag is read
    // after the token is in the share's set: a revocation either set the flag before (seen here) or
    // finds this token in the set afterwards (it sets the flag before it reads the set).
    const write = this.redis.pipeline().set(viewerTokenKey(token), this.records.seal(token, session), 'EX', ttl);
    if (session.share_id) {
      // The set outlives every token in it: each new token pushes its expiry out to the token's.
      const key = shareTokensKey(session.share_id);
      write.sadd(key, token).expire(key, ttl, 'GT').expire(key, ttl, 'NX').exists(shareRevokedKey(session.share_id));
    }
    const written = await write.exec();
    const failed = written?.find(([error]) => error);
    if (failed) throw failed[0];
    if (session.share_id && written?.[written.length - 1]?.[1] === 1) {
      await this.revokeShareTokens(session.share_id);
      return null;
    }
    // The viewer's first requests follow at once: have the study's UID ready for them (best effort:
    // validation looks it up itself otherwise).
    await this.studyPlaces.placesOf([grant.study.study_instance_uid]).catch(() => undefined);
    return { token, expires_in: ttl };
  }

  /**
   * A token for the one study a share link opens, for at most `maxTtl` seconds (the share's own
   * expiry), recorded under the share so that `revokeShareTokens` ends it; null when the share was
   * revoked meanwhile.
   */
  async issueForShare(shared: SharedStudy, maxTtl: number): Promise<ViewerTokenDto | null> {
    const ttl = Math.max(1, Math.min(this.config.VIEWER_TOKEN_TTL, Math.floor(maxTtl)));
    const study = {
      id: shared.study_id,
      tenant_id: shared.tenant_id,
      study_instance_uid: shared.study_instance_uid,
      patient_id: '',
    };
    return this.issueToken({ userId: shared.created_by, unitId: null, study, shareId: shared.share_id }, ttl);
  }

  /**
   * The share and study behind a share's viewer token while it still reads (its share standing,
   * its creator's account usable), else null: a user's token is not a share's.
   */
  async sharedStudyOf(token: string): Promise<{ shareId: string; studyId: string; tenantId: string } | null> {
    try {
      const session = await this.session(token);
      if (!session?.share_id) return null;
      if (!tokenReader(token, session, await this.accounts.get(session.user_id))) return null;
      return { shareId: session.share_id, studyId: session.study_id, tenantId: session.tenant_id };
    } catch {
      return null;
    }
  }

  /**
   * Ends every viewer token the share gave, at once (a share's session is never cached in memory),
   * and every token issued for it from now on.
   */
  async revokeShareTokens(shareId: string): Promise<void> {
    await this.redis.set(shareRevokedKey(shareId), '1', 'EX', SHARE_REVOKED_FLAG_SECONDS);
    const tokens = await this.redis.smembers(shareTokensKey(shareId));
    await this.redis.del(shareTokensKey(shareId), ...tokens.map(viewerTokenKey));
  }

  /**
   * The proxy's question. Never throws: every outcome is 200, 401 or 403 (nginx turns others into
   * 500). `ip` gives the client's address when the access trail needs it.
   */
  async validate(headers: IncomingHttpHeaders, ip: () => string | undefined = noAddress): Promise<Verdict> {
    return this.validateNow(headers, ip) ?? this.validateFromStores(headers, ip);
  }

  /** The verdict from Redis and PostgreSQL where memory has no answer (after `validateNow`). */
  async validateFromStores(headers: IncomingHttpHeaders, ip: () => string | undefined = noAddress): Promise<Verdict> {
    return this.recorded(await this.decide(headers, ip));
  }

  /**
   * The same verdict as `validate`, without waiting, when everything it needs is in process memory
   * (a viewer's requests after its first); undefined when Redis or PostgreSQL must be asked.
   */
  validateNow(headers: IncomingHttpHeaders, ip: () => string | undefined = noAddress): Verdict | undefined {
    const outcome = this.decideFromMemory(headers, ip);
    return outcome && this.recorded(outcome);
  }

  private recorded(outcome: Outcome): Verdict {
    this.metrics?.viewerValidation(outcome.verdict.result, outcome.cacheHit);
    return outcome.verdict;
  }

  private decideFromMemory(headers: IncomingHttpHeaders, ip: () => string | undefined): Outcome | undefined {
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
    const reader = this.readerOf(token, session, account);
    if (!reader) return { verdict: INVALID_TOKEN };
    if (this.refusedUids.blocked(reader.credentialId)) return { verdict: FORBIDDEN };
    const uri = originalUriOf(headers);
    const uids = extractStudyUids(uri);
    if (!uids) return { verdict: FORBIDDEN };
    const places = this.studyPlaces.peek(uids);
    if (!places) return undefined;
    if (!this.reaches(reader, uids, places)) return { verdict: FORBIDDEN, cacheHit: true };
    // A rendering asks the image server first (RenderingGate).
    if (renderingOf(uri!) !== null) return undefined;
    this.trail.opened(reader, places.values(), ip);
    return { verdict: ALLOW, cacheHit: true };
  }

  private async decide(headers: IncomingHttpHeaders, ip: () => string | undefined): Promise<Outcome> {
    const credential = credentialOf(headers);
    if (credential === null) return { verdict: MISSING_TOKEN };
    let reader: Reader | null;
    try {
      reader = credential.kind === 'session' ? await this.sessionReader(credential.token) : await this.viewerTokenReader(credential.token);
    } catch (error) {
      this.logger.warn(`Viewer token check failed, refusing: ${(error as Error)?.message ?? error}`);
      return { verdict: INVALID_TOKEN };
    }
    if (!reader) return { verdict: INVALID_TOKEN };
    if (this.refusedUids.blocked(reader.credentialId)) return { verdict: FORBIDDEN };

    const uri = originalUriOf(headers);
    const uids = extractStudyUids(uri);
    if (!uids) return { verdict: FORBIDDEN };
    const found = await this.studyPlaces.placesOf(uids).catch((error) => {
      this.logger.warn(`Viewer study lookup failed, refusing: ${(error as Error)?.message ?? error}`);
      return null;
    });
    if (!found) return { verdict: FORBIDDEN, cacheHit: false };
    const { places, hit } = found;
    if (!this.reaches(reader, uids, places)) return { verdict: FORBIDDEN, cacheHit: hit };
    const rendering = renderingOf(uri!);
    if (rendering !== null && !(await this.renderings.allows(rendering))) return { verdict: FORBIDDEN, cacheHit: hit };
    // An allowed request leaves its `study.view`.
    this.trail.opened(reader, places.values(), ip);
    return { verdict: ALLOW, cacheHit: hit };
  }

  /**
   * Whether the reader reaches every UID. A UID held in several places is served by the image server
   * as one study: all or nothing. Every UID refused counts towards the reader's limit.
   */
  private reaches(reader: Reader, uids: string[], places: Map<string, StudyPlaces>): boolean {
    let refused = 0;
    for (const uid of uids) {
      const held = places.get(uid);
      if (!held || held.length === 0 || !held.every(reader.reaches)) refused++;
    }
    if (refused > 0) void this.refusedUids.refused(reader.credentialId, refused);
    return refused === 0;
  }

  private async viewerTokenReader(token: string): Promise<Reader | null> {
    const session = await this.session(token);
    return session && this.readerOf(token, session, await this.accounts.get(session.user_id));
  }

  private readerOf(token: string, session: ViewerSession, account: AccountState | null): Reader | null {
    const kept = this.readers.get(session);
    if (kept?.account === account) return kept.reader;
    const reader = tokenReader(token, session, account);
    this.readers.set(session, { account, reader });
    return reader;
  }

  /**
   * A user's session opens the studies of the user's own scope (a regular user: their unit), with
   * the API guard's checks: a valid access token, not logged out, of a usable account in a usable
   * clinic. Null when it is not valid.
   */
  private async sessionReader(accessToken: string): Promise<Reader | null> {
    const claims = this.tokens.verify(accessToken);
    if (!claims) return null;
    const [blacklisted, account] = await Promise.all([
      withTimeout(this.tokens.isBlacklisted(claims.jti), REDIS_TIMEOUT_MS),
      this.accounts.get(claims.sub),
    ]);
    if (blacklisted || !account?.usable) return null;
    const scope = scopeOf(account);
    return {
      credentialId: `session:${claims.jti}`,
      userId: claims.sub,
      shareId: null,
      reaches: (place) => scopeIncludes(scope, place),
    };
  }

  private async session(token: string): Promise<ViewerSession | null> {
    if (!isUUID(token)) return null;
    const now = Date.now();
    let session = this.sessions.get(token);
    if (!session) {
      const stored = await withTimeout(this.redis.get(viewerTokenKey(token)), REDIS_TIMEOUT_MS);
      session = stored ? this.records.open(token, stored) : undefined;
      if (!session) return null;
      // A share's token is read from Redis every time: its revocation deletes it there, at once.
      if (session.share_id === null) this.sessions.set(token, session, Math.min(now + TOKEN_CACHE_MS, session.expires_at));
    }
    if (session.expires_at <= now) return null;
    // A share reads its study while the study's clinic is active (decisions §2: a deactivated
    // clinic's viewer tokens fail); a user's token is held to its account's clinic by tokenReader.
    return session.share_id === null || (await this.accounts.clinicActive(session.tenant_id)) ? session : null;
  }
}

const noAddress = (): undefined => undefined;

/**
 * What a viewer token reads (decisions.md 3b, "What a viewer token reads"; 3d for a share's), decided
 * here only. Null when the token is no longer valid: its account or clinic deactivated, or the user
 * moved to another clinic or unit (interface.md: the token is bound to the caller's tenant and unit).
 */
function tokenReader(token: string, session: ViewerSession, account: AccountState | null): Reader | null {
  if (!account?.usable) return null;
  if (!account.is_super_admin && account.tenant_id !== session.tenant_id) return null;
  const credentialId = `token:${token}`;
  if (session.share_id !== null) {
    return {
      credentialId,
      userId: null,
      shareId: session.share_id,
      reaches: (place) => place.study_id === session.study_id,
    };
  }
  if ((account.unit_id ?? null) !== session.unit_id) return null;
  // The issuer's scope as it is now: the same unit, but a role changed since is read as it is.
  const scope = scopeOf(account);
  const patient = session.patient_id.trim() === '' ? null : session.patient_id;
  return {
    credentialId,
    userId: session.user_id,
    shareId: null,
    reaches: (place) =>
      place.study_id === session.study_id ||
      scopeIncludes(scope, place) ||
      (patient !== null && place.tenant_id === session.tenant_id && place.patient_id === patient),
  };
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
