import { HttpStatus, Inject, Injectable } from '@nestjs/common';
import { createHash, randomBytes, randomUUID } from 'crypto';
import Redis from 'ioredis';
import { AuditService } from '../audit';
import type { AuthUser } from '../common/auth/auth-user';
import { DataScope } from '../common/auth/data-scope';
import { ApiError, ErrorBodies, Errors } from '../common/errors/api-errors';
import type { Requester } from '../common/http/requester';
import { REDIS } from '../common/redis/redis.module';
import { ReportsService } from '../reports';
import { StudiesRepository } from '../studies';
import { ViewerService } from '../viewer';
import { CreatedShareDto, CreateShareDto, OpenedShareDto, SHARE_DEFAULTS, ShareDto } from './dto/share.dto';
import { hashPasscode, verifyPasscode } from './passcode';
import { ShareRow, SharesRepository, ShareToOpen } from './shares.repository';

/** Wrong passcodes that lock a share, and for how long (whatever address they came from). */
export const SHARE_LOCK_TRIES = 5;
export const SHARE_LOCK_SECONDS = 15 * 60;
/** A token is 256 random bits as base64url: 43 characters. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * A share's passcode tries of the last 15 minutes are a sorted set scored by their time (Redis's
 * clock, ms): `?<id>` while being checked, `<id>` once found wrong; a right one is removed. Both
 * scripts take KEYS tries, lock and ARGV window ms, tries that lock, try id. RESERVE_TRY answers the
 * ms to wait (the lock's, or 1 s while the window is full of tries being checked), or 0 for a slot.
 */
const triesKey = (shareId: string) => `share-tries:${shareId}`;
const lockKey = (shareId: string) => `share-lock:${shareId}`;

const RESERVE_TRY = `
local clock = redis.call('TIME')
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
local locked = redis.call('PTTL', KEYS[2])
if locked > 0 then return locked end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 1000 end
redis.call('ZADD', KEYS[1], now, '?' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 0`;

const FOUND_WRONG = `
local at = redis.call('ZSCORE', KEYS[1], '?' .. ARGV[3])
if not at then return 0 end
redis.call('ZREM', KEYS[1], '?' .. ARGV[3])
redis.call('ZADD', KEYS[1], at, ARGV[3])
local wrong = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(id, 1, 1) ~= '?' then wrong = wrong + 1 end
end
if wrong < tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return 1`;

export const tokenHash = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

export const ShareErrors = {
  notFound: () => Errors.notFound('Share'),
  revoked: () => new ApiError(HttpStatus.GONE, { message: 'This link has been revoked.' }),
  expired: () => new ApiError(HttpStatus.GONE, { message: 'This link has expired.' }),
  usedUp: () => new ApiError(HttpStatus.GONE, { message: 'This link has been used as many times as it allows.' }),
  unavailable: () => new ApiError(HttpStatus.GONE, { message: 'This link is no longer available.' }),
  clinicInactive: () =>
    new ApiError(HttpStatus.CONFLICT, { message: 'A study of an inactive clinic (quarantine included) cannot be shared.' }),
  passcodeRequired: () => new ApiError(HttpStatus.UNAUTHORIZED, { message: 'This link needs its passcode.' }),
  wrongPasscode: () => new ApiError(HttpStatus.UNAUTHORIZED, { message: 'Wrong passcode.' }),
};

/** 429 with the seconds until the share opens again, for Retry-After. */
export class ShareLockedError extends ApiError {
  readonly retryAfterSeconds: number;

  constructor(waitMs: number) {
    super(HttpStatus.TOO_MANY_REQUESTS, ErrorBodies.tooManyAttempts);
    this.retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
  }
}

function toShareDto(row: ShareRow): ShareDto {
  return {
    id: row.id,
    expires_at: new Date(row.expires_at).toISOString(),
    max_uses: row.max_uses,
    uses: row.uses,
    has_passcode: row.has_passcode,
    note: row.note,
    last_used_at: row.last_used_at ? new Date(row.last_used_at).toISOString() : null,
    revoked_at: row.revoked_at ? new Date(row.revoked_at).toISOString() : null,
    created_by: row.created_by_user_id ? { id: row.created_by_user_id, name: row.creator_name ?? '' } : null,
    created_at: new Date(row.created_at).toISOString(),
  };
}

/**
 * Share links (decisions.md 3d): a study given to someone without an account, through a token that
 * is shown once and kept only as its SHA-256, an optional passcode, a use count and an expiry. The
 * viewer token an open gives reads that one study, and dies with the share.
 */
@Injectable()
export class SharesService {
  constructor(
    private readonly shares: SharesRepository,
    private readonly studies: StudiesRepository,
    private readonly viewer: ViewerService,
    private readonly audit: AuditService,
    private readonly reports: ReportsService,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  /** The final report's PDF of the study a share's viewer token reads; 401 for any other token. */
  async report(viewerToken: unknown, from: Requester): Promise<Buffer> {
    const shared = typeof viewerToken === 'string' ? await this.viewer.sharedStudyOf(viewerToken.trim()) : null;
    if (!shared) throw new ApiError(HttpStatus.UNAUTHORIZED, ErrorBodies.unauthenticated);
    const pdf = await this.reports.keptFinalPdf(shared.studyId);
    if (!pdf) throw Errors.notFound('Report');
    this.audit.record({
      action: 'report.read',
      shareId: shared.shareId,
      studyId: shared.studyId,
      userId: null,
      tenantId: shared.tenantId,
      ip: from.ip,
      requestId: from.requestId,
    });
    return pdf;
  }

  async create(
    user: AuthUser,
    scope: DataScope,
    studyId: string,
    body: CreateShareDto,
    from: Requester,
  ): Promise<CreatedShareDto> {
    const study = await this.studies.findStudyToExchange(scope, studyId);
    if (!study) throw Errors.notFound('Study');
    const token = randomBytes(32).toString('base64url');
    const hours = body.expires_in_hours ?? SHARE_DEFAULTS.expires_in_hours;
    const row = await this.shares.create({
      tenant_id: study.tenant_id,
      study_id: study.id,
      token_hash: tokenHash(token),
      passcode_hash: body.passcode ? await hashPasscode(body.passcode) : null,
      expires_at: new Date(Date.now() + hours * 3600_000),
      max_uses: body.max_uses ?? SHARE_DEFAULTS.max_uses,
      note: body.note ?? null,
      created_by_user_id: user.id,
    });
    if (!row) throw ShareErrors.clinicInactive();
    this.record('share.create', row.id, study.id, user, from);
    return { ...toShareDto(row), token, url: `/s/${token}` };
  }

  async list(scope: DataScope, studyId: string): Promise<ShareDto[]> {
    if (!(await this.studies.studyExists(scope, studyId))) throw Errors.notFound('Study');
    return (await this.shares.listForStudy(studyId)).map(toShareDto);
  }

  /** The link and every viewer token it gave stop at once. */
  async revoke(user: AuthUser, scope: DataScope, studyId: string, shareId: string, from: Requester): Promise<void> {
    if (!(await this.studies.studyExists(scope, studyId))) throw Errors.notFound('Study');
    if (!(await this.shares.revoke(studyId, shareId))) throw ShareErrors.notFound();
    await this.viewer.revokeShareTokens(shareId);
    this.record('share.revoke', shareId, studyId, user, from);
  }

  async open(token: string, passcode: string | null | undefined, from: Requester): Promise<OpenedShareDto> {
    if (!TOKEN_SHAPE.test(token)) throw ShareErrors.notFound();
    const hash = tokenHash(token);
    // A standing share without a passcode opens in one statement; anything else is read first.
    const share = (await this.shares.useWithoutPasscode(hash)) ?? (await this.openAfterChecks(hash, passcode));
    // The token reads in its creator's name and dies with their account: a share without one gives none.
    if (!share.created_by_user_id) throw ShareErrors.unavailable();
    const secondsLeft = (new Date(share.expires_at).getTime() - Date.now()) / 1000;
    const viewerToken = await this.viewer.issueForShare(
      {
        share_id: share.id,
        created_by: share.created_by_user_id,
        tenant_id: share.tenant_id,
        unit_id: share.unit_id,
        study_id: share.study_id,
        study_instance_uid: share.study_instance_uid,
      },
      secondsLeft,
    );
    // Revoked while the token was being issued: the viewer took it back.
    if (!viewerToken) throw ShareErrors.revoked();
    this.record('share.open', share.id, share.study_id, null, from);
    return {
      viewer_token: viewerToken.token,
      expires_in: viewerToken.expires_in,
      study: {
        study_instance_uid: share.study_instance_uid,
        patient_name: share.patient_name,
        study_date: share.study_date,
        study_description: share.study_description,
        modalities: share.modalities ?? [],
      },
      has_report: share.report_status === 'final',
    };
  }

  /** Why the share does not open (404, 410, 429, 401), or the share once its use is counted. */
  private async openAfterChecks(hash: string, passcode: string | null | undefined): Promise<ShareToOpen> {
    const share = await this.shares.findToOpen(hash);
    if (!share) throw ShareErrors.notFound();
    this.assertStanding(share);
    if (share.passcode_hash) await this.checkPasscode(share.id, share.passcode_hash, passcode);
    if (!(await this.shares.countUse(share.id))) {
      // Revoked, expired or used up between the read and the count.
      const again = await this.shares.findToOpen(hash);
      if (again) this.assertStanding(again);
      throw ShareErrors.usedUp();
    }
    return share;
  }

  private assertStanding(share: ShareToOpen): void {
    if (share.revoked_at || !share.tenant_active) throw ShareErrors.revoked();
    // Its viewer tokens would read in the name of an account that no longer reads the study: no use counted.
    if (!share.creator_usable) throw ShareErrors.unavailable();
    if (new Date(share.expires_at).getTime() <= Date.now()) throw ShareErrors.expired();
    if (share.uses >= share.max_uses) throw ShareErrors.usedUp();
  }

  /**
   * A wrong passcode counts towards the lock; a missing one does not (the page asks for it first).
   * The try takes its slot before the check (tens of milliseconds of scrypt) and a right passcode
   * gives it back: otherwise a burst of concurrent guesses would all find the window still open.
   */
  private async checkPasscode(shareId: string, hash: string, passcode: string | null | undefined): Promise<void> {
    if (!passcode) {
      const lockedMs = await this.redis.pttl(lockKey(shareId));
      if (lockedMs > 0) throw new ShareLockedError(lockedMs);
      throw ShareErrors.passcodeRequired();
    }
    const tryId = randomUUID();
    const args = [2, triesKey(shareId), lockKey(shareId), SHARE_LOCK_SECONDS * 1000, SHARE_LOCK_TRIES, tryId] as const;
    const waitMs = Number(await this.redis.eval(RESERVE_TRY, ...args));
    if (waitMs > 0) throw new ShareLockedError(waitMs);
    if (await verifyPasscode(passcode, hash)) {
      await this.redis.zrem(triesKey(shareId), `?${tryId}`);
      return;
    }
    await this.redis.eval(FOUND_WRONG, ...args);
    throw ShareErrors.wrongPasscode();
  }

  private record(
    action: 'share.create' | 'share.open' | 'share.revoke',
    shareId: string,
    studyId: string,
    user: AuthUser | null,
    from: Requester,
  ): void {
    this.audit.record({
      action,
      shareId,
      studyId,
      userId: user?.id ?? null,
      tenantId: user?.tenant_id ?? null,
      ip: from.ip,
      requestId: from.requestId,
    });
  }
}
