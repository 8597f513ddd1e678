import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { TimestampedEntity } from './base';
import { Tenant } from './tenant.entity';

@Entity('patients')
export class Patient extends TimestampedEntity {
  @Column({ type: 'uuid' })
  tenant_id: string;

  @ManyToOne(() => Tenant, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'tenant_id' })
  tenant?: Tenant;

  @Column({ type: 'varchar', length: 64 })
  patient_id: string;

  @Column({ type: 'varchar', length: 255 })
  patient_name: string;

  /** YYYY-MM-DD (pg `date` is read back as a string). */
  @Column({ type: 'date', nullable: true })
  patient_birth_date: string | null;

  @Column({ type: 'varchar', length: 1, nullable: true })
  patient_sex: 'M' | 'F' | null;
}
