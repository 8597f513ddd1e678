import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { TimestampedEntity } from './base';
import { Tenant } from './tenant.entity';
import { Unit } from './unit.entity';

@Entity('modalities')
export class Modality extends TimestampedEntity {
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

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** Application Entity Title: trimmed, uppercased, globally unique. */
  @Column({ type: 'varchar', length: 16 })
  aet: string;

  @Column({ type: 'varchar', length: 45 })
  ip_address: string;
}
