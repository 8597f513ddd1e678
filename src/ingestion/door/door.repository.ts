import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export type RegisteredModality = { tenant_id: string; ip_address: string };

/** What the study's door reads from the archive. */
@Injectable()
export class DoorRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The clinics (quarantine excluded) whose archive holds the StudyInstanceUID (index studies_uid_idx). */
  async clinicsOfStudy(studyInstanceUid: string): Promise<string[]> {
    const rows: Array<{ tenant_id: string }> = await this.db.query(
      `SELECT DISTINCT s.tenant_id FROM studies s JOIN tenants t ON t.id = s.tenant_id
       WHERE s.study_instance_uid = $1 AND t.slug <> 'quarantine'`,
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
