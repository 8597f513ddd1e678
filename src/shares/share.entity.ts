import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { Study, TimestampedEntity } from '../database/entities';

/** A link that opens one study for someone without an account (decisions.md 3d). */
@Entity('shares')
export class Share extends TimestampedEntity {
  @Column({ type: 'uuid' })
  tenant_id: string;

  @Column({ type: 'uuid' })
  study_id: string;

  @ManyToOne(() => Study, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'study_id' })
  study?: Study;

  /** SHA-256 (hex) of the token: the token itself is shown once and never kept. */
  @Column({ type: 'char', length: 64, select: false })
  token_hash: string;

  @Column({ type: 'varchar', length: 255, nullable: true, select: false })
  passcode_hash: string | null;

  @Column({ type: 'timestamptz' })
  expires_at: Date;

  @Column({ type: 'integer' })
  max_uses: number;

  @Column({ type: 'integer', default: 0 })
  uses: number;

  @Column({ type: 'timestamptz', nullable: true })
  last_used_at: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  revoked_at: Date | null;

  @Column({ type: 'varchar', length: 255, nullable: true })
  note: string | null;

  @Column({ type: 'uuid', nullable: true })
  created_by_user_id: string | null;
}
