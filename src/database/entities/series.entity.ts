import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { TimestampedEntity } from './base';
import { Study } from './study.entity';

@Entity('series')
export class Series extends TimestampedEntity {
  @Column({ type: 'uuid' })
  study_id: string;

  @ManyToOne(() => Study, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'study_id' })
  study?: Study;

  @Column({ type: 'varchar', length: 64 })
  imgsrv_series_id: string;

  /** As sent, never cut (longer than 64 characters: an invalid UID, its study in quarantine). */
  @Column({ type: 'text' })
  series_instance_uid: string;

  @Column({ type: 'varchar', length: 16 })
  modality: string;

  @Column({ type: 'integer' })
  series_number: number;

  @Column({ type: 'varchar', length: 255, nullable: true })
  manufacturer: string | null;

  @Column({ type: 'integer', default: 0 })
  instance_count: number;
}
