import { Injectable } from '@nestjs/common';
import { DataScope } from '../common/auth/data-scope';
import { Errors } from '../common/errors/api-errors';
import { fetchPage, Paginated } from '../common/pagination';
import { ADMIN_PAGE_SIZE } from '../common/responses';
import { explicitSlug, SLUG_TAKEN } from '../common/validation/slug';
import { CreateUnitDto, toUnitDto, UnitDto } from './units.dto';
import { TenantsRepository } from './tenants.repository';
import { UnitsRepository } from './units.repository';

export const UNIT_NAME_TAKEN = 'A unit with that name already exists for this clinic.';

/** A unit's slug is optional: null stays null, anything else is normalised. */
function unitSlug(explicit: string | null | undefined): string | null {
  return explicit === undefined || explicit === null ? null : explicitSlug(explicit);
}

/** Units for the admin and the tenant lists (ordered by name) and their creation. */
@Injectable()
export class UnitsService {
  constructor(
    private readonly units: UnitsRepository,
    private readonly tenants: TenantsRepository,
  ) {}

  async list(scope: DataScope, query: { tenant_id?: string; search?: string; page?: number }): Promise<Paginated<UnitDto>> {
    const filter = { tenantId: query.tenant_id, search: query.search };
    return fetchPage(
      query.page,
      ADMIN_PAGE_SIZE,
      (offset, limit) => this.units.page(scope, { ...filter, offset, limit }),
      toUnitDto,
      query.search,
    );
  }

  async create(body: CreateUnitDto): Promise<UnitDto> {
    const slug = unitSlug(body.slug);
    if (!(await this.tenants.exists(body.tenant_id))) throw Errors.notFound('Tenant');
    // Checked first for a complete answer (both fields); the insert settles concurrent requests.
    await this.refuseTaken(body.tenant_id, body.name, slug);
    const unit = await this.units.insert({ tenant_id: body.tenant_id, name: body.name, slug });
    if (unit === 'no_tenant') throw Errors.notFound('Tenant');
    if (unit === 'conflict') {
      await this.refuseTaken(body.tenant_id, body.name, slug);
      throw Errors.fieldInvalid('name', UNIT_NAME_TAKEN);
    }
    return toUnitDto(unit);
  }

  private async refuseTaken(tenantId: string, name: string, slug: string | null): Promise<void> {
    const taken = await this.units.taken(tenantId, name, slug);
    const errors: Record<string, string[]> = {};
    if (taken.name) errors.name = [UNIT_NAME_TAKEN];
    if (taken.slug) errors.slug = [SLUG_TAKEN];
    if (Object.keys(errors).length) throw Errors.validation(errors);
  }
}
