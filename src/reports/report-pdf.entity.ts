import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * A signed report's PDF as it was rendered at a signing: version 1 at the report's signing, one more
 * at each signed addendum. The bytes never change (trigger report_pdfs_kept); the filing columns
 * say where the worker stored it in the image server.
 */
@Entity('report_pdfs')
export class ReportPdf {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'uuid' })
  report_id: string;

  @Column({ type: 'integer' })
  version: number;

  /** The report or addendum whose signing made this version. */
  @Column({ type: 'uuid', unique: true })
  signing_id: string;

  @Column({ type: 'bytea', select: false })
  data: Buffer;

  @Column({ type: 'varchar', length: 64, nullable: true })
  sop_instance_uid: string | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  filed_instance_id: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  filed_at: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created_at: Date;
}
