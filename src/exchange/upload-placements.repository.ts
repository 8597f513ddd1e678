import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** An uploaded study's clinic and unit (both always set). */
export interface UploadPlace {
  tenant_id: string;
  unit_id: string;
}

/** A study's upload placement, and whether the call that answered it recorded it. */
export interface UploadClaim {
  place: UploadPlace;
  made: boolean;
}

/** Where uploaded studies go (table upload_placements, read by ingestion). */
@Injectable()
export class UploadPlacementsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Records that the study goes to this unit unless a placement is recorded already; answers the
   * study's placement and whether this call made it. The placement this insert gave way to may be
   * taken back (its upload stored nothing) before it is read: then the insert is tried again (a few
   * times; past that the error fails this part only, as any database error does).
   */
  async claim(studyInstanceUid: string, place: UploadPlace, userId: string): Promise<UploadClaim> {
    for (let attempt = 1; ; attempt++) {
      const made: unknown[] = await this.db.query(
        `INSERT INTO upload_placements (study_instance_uid, tenant_id, unit_id, uploaded_by_user_id)
         VALUES ($1, $2, $3, $4) ON CONFLICT (study_instance_uid) DO NOTHING RETURNING study_instance_uid`,
        [studyInstanceUid, place.tenant_id, place.unit_id, userId],
      );
      if (made.length > 0) return { place, made: true };
      const [row]: UploadPlace[] = await this.db.query(
        `SELECT tenant_id::text AS tenant_id, unit_id::text AS unit_id FROM upload_placements WHERE study_instance_uid = $1`,
        [studyInstanceUid],
      );
      if (row) return { place: row, made: false };
      if (attempt === 5) throw new Error(`the placement of study ${studyInstanceUid} keeps changing`);
    }
  }

  /** Takes back a placement this upload made and then did not use. */
  async release(studyInstanceUid: string, place: UploadPlace): Promise<void> {
    await this.db.query(`DELETE FROM upload_placements WHERE study_instance_uid = $1 AND tenant_id = $2 AND unit_id = $3`, [
      studyInstanceUid,
      place.tenant_id,
      place.unit_id,
    ]);
  }

  /** The archive's id of the study with this UID in this clinic, once it is indexed. */
  async studyIdOf(studyInstanceUid: string, tenantId: string): Promise<string | null> {
    const [row] = await this.db.query(`SELECT id FROM studies WHERE study_instance_uid = $1 AND tenant_id = $2 LIMIT 1`, [
      studyInstanceUid,
      tenantId,
    ]);
    return row?.id ?? null;
  }
}
