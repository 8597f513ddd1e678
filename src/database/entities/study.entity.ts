import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { TimestampedEntity } from './base';
import { Patient } from './patient.entity';
import { Tenant } from './tenant.entity';
import { Unit } from './unit.entity';

export type ReportStatus = 'pending' | 'draft' | 'final';

@Entity('studies')
export class Study extends TimestampedEntity {
  @Column({ type: 'uuid' })
  tenant_id: string;

  @ManyToOne(() => Tenant, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'tenant_id' })
  tenant?: Tenant;

  @Column({ type: 'uuid' })
  unit_id: string;

  @ManyToOne(() => Unit, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'unit_id' })
  unit?: Unit;

  @Column({ type: 'uuid', nullable: true })
  patient_uuid: string | null;

  @ManyToOne(() => Patient, { onDelete: 'SET NULL', nullable: true })
  @JoinColumn({ name: 'patient_uuid' })
  patient?: Patient | null;

  @Column({ type: 'varchar', length: 64 })
  imgsrv_study_id: string;

  /** As sent, never cut (longer than 64 characters: an invalid UID, its study in quarantine). */
  @Column({ type: 'text' })
  study_instance_uid: string;

  @Column({ type: 'varchar', length: 64 })
  patient_id: string;

  @Column({ type: 'varchar', length: 255 })
  patient_name: string;

  @Column({ type: 'date', nullable: true })
  patient_birth_date: string | null;

  @Column({ type: 'varchar', length: 1, nullable: true })
  patient_sex: 'M' | 'F' | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  accession_number: string | null;

  @Column({ type: 'date' })
  study_date: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  study_description: string | null;

  @Column({ type: 'text', array: true, nullable: true })
  modalities: string[] | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  report_status: ReportStatus | null;

  @Column({ type: 'timestamptz', nullable: true })
  reported_at: Date | null;

  @Column({ type: 'uuid', nullable: true })
  reported_by_user_id: string | null;
}
