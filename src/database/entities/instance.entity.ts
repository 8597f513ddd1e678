import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { TimestampedEntity } from './base';
import { Series } from './series.entity';

@Entity('instances')
export class Instance extends TimestampedEntity {
  @Column({ type: 'uuid' })
  series_id: string;

  @ManyToOne(() => Series, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'series_id' })
  series?: Series;

  @Column({ type: 'varchar', length: 64 })
  imgsrv_instance_id: string;

  /** As sent, never cut (longer than 64 characters: an invalid UID, its study in quarantine). */
  @Column({ type: 'text' })
  sop_instance_uid: string;

  @Column({ type: 'integer' })
  instance_number: number;

  /** null for instances without pixel data (structured reports, PDFs). */
  @Column({ type: 'integer', nullable: true })
  rows: number | null;

  @Column({ type: 'integer', nullable: true })
  columns: number | null;

  @Column({ type: 'double precision', nullable: true })
  slice_thickness: number | null;
}
