import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export type RegisteredModality = { tenant_id: string; ip_address: string };

/** What the study's door reads from the archive. */
@Injectable()
export class DoorRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The clinics (quarantine excluded) whose archive holds the StudyInstanceUID (index studies_uid_idx),
   * and the clinic of an upload through the API (STOW-RS) recorded for it: an uploaded study is
   * archived from its upload on, not only once the index has placed it.
   */
  async clinicsOfStudy(studyInstanceUid: string): Promise<string[]> {
    const rows: Array<{ tenant_id: string }> = await this.db.query(
      `SELECT s.tenant_id FROM studies s JOIN tenants t ON t.id = s.tenant_id
       WHERE s.study_instance_uid = $1 AND t.slug <> 'quarantine'
       UNION
       SELECT p.tenant_id FROM upload_placements p WHERE p.study_instance_uid = $1`,
      [studyInstanceUid],
    );
    return rows.map((row) => row.tenant_id);
  }

  /** The modality registered under the (normalised) AE title, or null (modalities_aet_key). */
  async modality(aet: string): Promise<RegisteredModality | null> {
    const [row]: RegisteredModality[] = await this.db.query(`SELECT tenant_id, ip_address FROM modalities WHERE aet = $1`, [
      aet,
    ]);
    return row ?? null;
  }
}
