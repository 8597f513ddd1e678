import { Column, DeleteDateColumn, Entity } from 'typeorm';
import { TimestampedEntity } from '../../database/entities';

/** Reusable report text of a clinic (unit_id null) or of one of its units, by modality. */
@Entity('report_presets')
export class ReportPreset extends TimestampedEntity {
  @Column({ type: 'uuid' })
  tenant_id: string;

  @Column({ type: 'uuid', nullable: true })
  unit_id: string | null;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'varchar', length: 16, nullable: true })
  modality: string | null;

  @Column({ type: 'text', nullable: true })
  indication: string | null;

  @Column({ type: 'text', nullable: true })
  technique: string | null;

  @Column({ type: 'text', nullable: true })
  findings: string | null;

  @Column({ type: 'text', nullable: true })
  impression: string | null;

  @DeleteDateColumn({ type: 'timestamptz', nullable: true })
  deleted_at: Date | null;
}
