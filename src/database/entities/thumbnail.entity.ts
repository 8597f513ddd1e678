import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { TimestampedEntity } from './base';
import { Series } from './series.entity';
import { Study } from './study.entity';

/** A 300x300 JPEG: the study's own (series_id null) or one per series. */
@Entity('thumbnails')
export class Thumbnail extends TimestampedEntity {
  @Column({ type: 'uuid' })
  study_id: string;

  @ManyToOne(() => Study, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'study_id' })
  study?: Study;

  @Column({ type: 'uuid', nullable: true })
  series_id: string | null;

  @ManyToOne(() => Series, { onDelete: 'CASCADE', nullable: true })
  @JoinColumn({ name: 'series_id' })
  series?: Series | null;

  @Column({ type: 'varchar', length: 64, default: 'image/jpeg' })
  content_type: string;

  @Column({ type: 'bytea' })
  data: Buffer;
}
