import { Column, Entity } from 'typeorm';
import { TimestampedEntity } from './base';

@Entity('tenants')
export class Tenant extends TimestampedEntity {
  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'varchar', length: 255 })
  slug: string;

  @Column({ type: 'boolean', default: true })
  is_active: boolean;

  @Column({ type: 'text', nullable: true })
  logo: string | null;
}
