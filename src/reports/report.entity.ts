import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { Study, TimestampedEntity, User } from '../database/entities';
import { ReportTemplate } from '../tenant';

export type ReportKind = 'report' | 'addendum';
export type ReportState = 'draft' | 'final';

/**
 * A study's report or an addendum to it (decisions §3c). A final row never changes: the database
 * refuses it (trigger reports_final_unchanged).
 */
@Entity('reports')
export class Report extends TimestampedEntity {
  @Column({ type: 'uuid' })
  study_id: string;

  @ManyToOne(() => Study, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'study_id' })
  study?: Study;

  @Column({ type: 'uuid' })
  tenant_id: string;

  @Column({ type: 'uuid' })
  unit_id: string;

  @Column({ type: 'varchar', length: 16 })
  kind: ReportKind;

  @Column({ type: 'uuid', nullable: true })
  amends_id: string | null;

  @Column({ type: 'varchar', length: 16, default: 'draft' })
  status: ReportState;

  @Column({ type: 'text', nullable: true })
  indication: string | null;

  @Column({ type: 'text', nullable: true })
  technique: string | null;

  @Column({ type: 'text', nullable: true })
  findings: string | null;

  @Column({ type: 'text', nullable: true })
  impression: string | null;

  @Column({ type: 'uuid', nullable: true })
  template_id: string | null;

  @ManyToOne(() => ReportTemplate, { onDelete: 'RESTRICT', nullable: true })
  @JoinColumn({ name: 'template_id' })
  template?: ReportTemplate | null;

  @Column({ type: 'integer', default: 1 })
  version: number;

  @Column({ type: 'uuid' })
  author_id: string;

  @ManyToOne(() => User, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'author_id' })
  author?: User;

  @Column({ type: 'uuid', nullable: true })
  signed_by_id: string | null;

  /** The signer's name and CRM as they were at signing. */
  @Column({ type: 'varchar', length: 255, nullable: true })
  signed_by_name: string | null;

  @Column({ type: 'varchar', length: 12, nullable: true })
  signed_by_crm: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  signed_at: Date | null;

  /** What the PDF was rendered from at signing (letterhead, header, signature): see src/reports/pdf. */
  @Column({ type: 'jsonb', nullable: true })
  signed_layout: Record<string, unknown> | null;
}
