import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Share } from './share.entity';
import { PreparedQueries } from '../database/list';

export interface NewShare {
  tenant_id: string;
  study_id: string;
  token_hash: string;
  passcode_hash: string | null;
  expires_at: Date;
  max_uses: number;
  note: string | null;
  created_by_user_id: string;
}

/** A share as listed, with its creator's name. */
export type ShareRow = Share & { has_passcode: boolean; creator_name: string | null };

/** A share found by its token, with what opening it needs of its study and clinic. */
export interface ShareToOpen {
  id: string;
  tenant_id: string;
  study_id: string;
  passcode_hash: string | null;
  expires_at: Date;
  max_uses: number;
  uses: number;
  revoked_at: Date | null;
  created_by_user_id: string | null;
  tenant_active: boolean;
  /** Its creator's account still gives viewer tokens that read (ViewerService: active, of the share's clinic or a super admin). */
  creator_usable: boolean;
  unit_id: string;
  study_instance_uid: string;
  patient_name: string;
  study_date: string | null;
  study_description: string | null;
  modalities: string[] | null;
  report_status: string | null;
}

/**
 * Whether `users u` (the share's creator) still gives viewer tokens that read the share's clinic.
 * This rule and TO_OPEN are also the database function share_use_without_passcode's (migration ShareOpenFunction).
 */
const CREATOR_USABLE = `(u.id IS NOT NULL AND u.is_active AND (u.is_super_admin OR u.tenant_id = sh.tenant_id))`;

/** The columns of a share to open (ShareToOpen), over `shares sh`, `studies s`, `tenants t` and `users u`. */
const TO_OPEN = `sh.id, sh.tenant_id, sh.study_id, sh.passcode_hash, sh.expires_at, sh.max_uses, sh.uses, sh.revoked_at,
  sh.created_by_user_id, t.is_active AS tenant_active, ${CREATOR_USABLE} AS creator_usable, s.unit_id, s.study_instance_uid, s.patient_name,
  s.study_date::text AS study_date, s.study_description, s.modalities, s.report_status`;

const LISTED = `sh.id, sh.tenant_id, sh.study_id, sh.expires_at, sh.max_uses, sh.uses, sh.last_used_at, sh.revoked_at,
  sh.note, sh.created_by_user_id, sh.created_at, sh.updated_at, (sh.passcode_hash IS NOT NULL) AS has_passcode,
  u.name AS creator_name`;

/** Rows an UPDATE ... RETURNING changed: TypeORM answers such a statement with `[rows, count]`. */
const updatedRows = (result: [unknown[], number]) => result[1];

@Injectable()
export class SharesRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly prepared: PreparedQueries,
  ) {}

  /**
   * The new share, or null when the study's clinic is not active (the quarantine clinic, or one
   * deactivated): such a link would never open.
   */
  async create(values: NewShare): Promise<ShareRow | null> {
    const [row] = await this.db.query(
      `WITH sh AS (
         INSERT INTO shares (tenant_id, study_id, token_hash, passcode_hash, expires_at, max_uses, note, created_by_user_id)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM tenants t WHERE t.id = $1 AND t.is_active RETURNING *)
       SELECT ${LISTED} FROM sh LEFT JOIN users u ON u.id = sh.created_by_user_id`,
      [
        values.tenant_id,
        values.study_id,
        values.token_hash,
        values.passcode_hash,
        values.expires_at,
        values.max_uses,
        values.note,
        values.created_by_user_id,
      ],
    );
    return row ?? null;
  }

  /** The study's shares, oldest first. */
  listForStudy(studyId: string): Promise<ShareRow[]> {
    return this.db.query(
      `SELECT ${LISTED} FROM shares sh LEFT JOIN users u ON u.id = sh.created_by_user_id
        WHERE sh.study_id = $1 ORDER BY sh.created_at, sh.id`,
      [studyId],
    );
  }

  async findToOpen(tokenHash: string): Promise<ShareToOpen | null> {
    const [row] = await this.db.query(
      `SELECT ${TO_OPEN}
         FROM shares sh JOIN studies s ON s.id = sh.study_id JOIN tenants t ON t.id = sh.tenant_id
              LEFT JOIN users u ON u.id = sh.created_by_user_id
        WHERE sh.token_hash = $1`,
      [tokenHash],
    );
    return row ?? null;
  }

  /**
   * Counts one use of the share with this token when it stands and has no passcode, and answers it
   * as `findToOpen` does (with this use counted); null otherwise (then `findToOpen` says why).
   * One statement, for the common open: a database function (migration ShareOpenFunction, which
   * says why) called as a named statement on the pool (PreparedQueries), without a query runner.
   */
  async useWithoutPasscode(tokenHash: string): Promise<ShareToOpen | null> {
    const [row] = await this.prepared.query<ShareToOpen>(`SELECT * FROM share_use_without_passcode($1)`, [tokenHash]);
    return row ?? null;
  }

  /**
   * Counts one use, only while the share stands (not revoked, not expired, uses left): the check and
   * the count are one statement, so concurrent opens never pass max_uses. False when it did not.
   */
  async countUse(shareId: string): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE shares SET uses = uses + 1, last_used_at = now()
        WHERE id = $1 AND uses < max_uses AND revoked_at IS NULL AND expires_at > now()
        RETURNING id`,
      [shareId],
    );
    return updatedRows(rows) === 1;
  }

  /** Revokes a share of the study (again: no change); false when the study has no such share. */
  async revoke(studyId: string, shareId: string): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE shares SET revoked_at = COALESCE(revoked_at, now()), updated_at = now()
        WHERE id = $1 AND study_id = $2 RETURNING id`,
      [shareId, studyId],
    );
    return updatedRows(rows) > 0;
  }
}
