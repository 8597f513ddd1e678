import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { foldedSearch } from '../common/pagination';
import { Tenant } from '../database/entities';

@Injectable()
export class TenantsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async page(filter: { search?: string; offset: number; limit: number }): Promise<[Tenant[], number]> {
    const qb = this.dataSource.getRepository(Tenant).createQueryBuilder('t');
    if (filter.search) {
      const search = foldedSearch(['t.name', 't.slug'], filter.search);
      qb.andWhere(search.sql, search.params);
    }
    return qb
      .orderBy('lower(t.name)', 'ASC')
      .addOrderBy('t.id', 'ASC')
      .offset(filter.offset)
      .limit(filter.limit)
      .getManyAndCount();
  }

  findById(id: string): Promise<Tenant | null> {
    return this.dataSource.getRepository(Tenant).findOneBy({ id });
  }

  exists(id: string): Promise<boolean> {
    return this.dataSource.getRepository(Tenant).existsBy({ id });
  }

  /** The clinic's settings: name and logo. */
  settings(id: string): Promise<Pick<Tenant, 'id' | 'name' | 'logo'> | null> {
    return this.dataSource.getRepository(Tenant).findOne({ select: { id: true, name: true, logo: true }, where: { id } });
  }

  /** Null when the tenant does not exist. */
  async setLogo(id: string, logo: string | null): Promise<Pick<Tenant, 'id' | 'name' | 'logo'> | null> {
    const [rows]: [Array<Pick<Tenant, 'id' | 'name' | 'logo'>>, number] = await this.dataSource.query(
      `UPDATE tenants SET logo = $2, updated_at = now() WHERE id = $1 RETURNING id, name, logo`,
      [id, logo],
    );
    return rows[0] ?? null;
  }

  /** Which of the two unique keys are already taken (a fast, friendly answer; the indexes decide). */
  async taken(name: string, slug: string): Promise<{ name: boolean; slug: boolean }> {
    const [row]: Array<{ name: boolean; slug: boolean }> = await this.dataSource.query(
      `SELECT EXISTS (SELECT 1 FROM tenants WHERE lower(name) = lower($1)) AS name,
              EXISTS (SELECT 1 FROM tenants WHERE slug = $2) AS slug`,
      [name, slug],
    );
    return row;
  }

  /**
   * Null when the name or the slug is taken. ON CONFLICT waits for a concurrent insert of the same
   * key and then skips, so the unique indexes settle every race without a failed (and logged) query.
   */
  async insert(values: { name: string; slug: string; is_active: boolean }): Promise<Tenant | null> {
    const rows: Array<{ id: string }> = await this.dataSource.query(
      `INSERT INTO tenants (name, slug, is_active) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING id`,
      [values.name, values.slug, values.is_active],
    );
    return rows[0] ? this.dataSource.getRepository(Tenant).findOneByOrFail({ id: rows[0].id }) : null;
  }

  /**
   * Sets the tenant's state and the same state on all its units, in one transaction. Returns null
   * when the tenant does not exist. Users' own flags are left alone: their access follows the
   * tenant through the auth guard, so re-activation restores exactly the previous state.
   */
  setActive(id: string, isActive: boolean): Promise<Tenant | null> {
    return this.dataSource.transaction(async (manager) => {
      const result = await manager.query(`UPDATE tenants SET is_active = $2, updated_at = now() WHERE id = $1 RETURNING id`, [
        id,
        isActive,
      ]);
      if ((result[0] as unknown[]).length === 0) return null;
      await manager.query(`UPDATE units SET is_active = $2, updated_at = now() WHERE tenant_id = $1 AND is_active <> $2`, [
        id,
        isActive,
      ]);
      return manager.getRepository(Tenant).findOneBy({ id });
    });
  }
}
