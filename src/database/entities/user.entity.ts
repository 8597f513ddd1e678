import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { TimestampedEntity } from './base';
import { Tenant } from './tenant.entity';
import { Unit } from './unit.entity';

@Entity('users')
export class User extends TimestampedEntity {
  @Column({ type: 'uuid', nullable: true })
  tenant_id: string | null;

  @ManyToOne(() => Tenant, { onDelete: 'RESTRICT', nullable: true })
  @JoinColumn({ name: 'tenant_id' })
  tenant?: Tenant | null;

  @Column({ type: 'uuid', nullable: true })
  unit_id: string | null;

  @ManyToOne(() => Unit, { onDelete: 'RESTRICT', nullable: true })
  @JoinColumn({ name: 'unit_id' })
  unit?: Unit | null;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** Stored lowercase; unique through the index on lower(email). */
  @Column({ type: 'varchar', length: 255 })
  email: string;

  /** bcrypt hash. Never selected unless asked for. */
  @Column({ type: 'varchar', length: 255, select: false })
  password: string;

  @Column({ type: 'varchar', length: 100, nullable: true, select: false })
  remember_token: string | null;

  @Column({ type: 'boolean', default: false })
  is_super_admin: boolean;

  @Column({ type: 'boolean', default: false })
  is_tenant_admin: boolean;

  @Column({ type: 'boolean', default: true })
  is_active: boolean;

  @Column({ type: 'varchar', length: 12, nullable: true })
  crm: string | null;

  /** Data URL of the signature image. Never selected unless asked for; exposed as has_signature. */
  @Column({ type: 'text', nullable: true, select: false })
  signature: string | null;

  /**
   * Generated column (signature IS NOT NULL): lists never load the image itself. The table has no
   * NOT NULL on it, as the migration made it; its expression is never null.
   */
  @Column({
    type: 'boolean',
    nullable: true,
    generatedType: 'STORED',
    asExpression: 'signature IS NOT NULL',
    insert: false,
    update: false,
  })
  has_signature: boolean;
}
