import { Injectable } from '@nestjs/common';
import { AccountStatusService } from '../../auth';
import { TenantsRepository } from '../../clinics';
import { Errors } from '../../common/errors/api-errors';
import { fetchPage, Paginated } from '../../common/pagination';
import { explicitSlug, SLUG_TAKEN, slugFromName } from '../../common/validation/slug';
import { ADMIN_PAGE_SIZE } from '../../common/responses';
import { CreateTenantDto, TenantDto, toTenantDto } from './tenants.dto';

export const TENANT_NAME_TAKEN = 'A clinic with that name already exists.';
export const QUARANTINE_SLUG = 'quarantine';

/** Resolves the slug a create request asks for, or explains in the contract's 422 why it cannot. */
export function requestedSlug(explicit: string | null | undefined, name: string): string {
  if (explicit === undefined || explicit === null) {
    const derived = slugFromName(name);
    if (!derived) {
      throw Errors.fieldInvalid('slug', 'A slug cannot be derived from this name; please provide a slug.');
    }
    return derived;
  }
  return explicitSlug(explicit);
}

@Injectable()
export class TenantsService {
  constructor(
    private readonly tenants: TenantsRepository,
    private readonly accounts: AccountStatusService,
  ) {}

  async list(query: { search?: string; page?: number }): Promise<Paginated<TenantDto>> {
    return fetchPage(
      query.page,
      ADMIN_PAGE_SIZE,
      (offset, limit) => this.tenants.page({ search: query.search, offset, limit }),
      toTenantDto,
      query.search,
    );
  }

  async create(body: CreateTenantDto): Promise<TenantDto> {
    const slug = requestedSlug(body.slug, body.name);
    // Checked first for a complete answer (both fields); the insert settles concurrent requests.
    await this.refuseTaken(body.name, slug);
    const tenant = await this.tenants.insert({ name: body.name, slug, is_active: body.is_active ?? true });
    if (!tenant) {
      await this.refuseTaken(body.name, slug);
      throw Errors.fieldInvalid('name', TENANT_NAME_TAKEN);
    }
    return toTenantDto(tenant);
  }

  private async refuseTaken(name: string, slug: string): Promise<void> {
    const taken = await this.tenants.taken(name, slug);
    const errors: Record<string, string[]> = {};
    if (taken.name) errors.name = [TENANT_NAME_TAKEN];
    if (taken.slug) errors.slug = [SLUG_TAKEN];
    if (Object.keys(errors).length) throw Errors.validation(errors);
  }

  async setStatus(id: string, isActive: boolean): Promise<TenantDto> {
    if (isActive) {
      const current = await this.tenants.findById(id);
      if (!current) throw Errors.notFound('Tenant');
      // Nobody may ever sign in to the tenant that holds studies from unregistered devices.
      if (current.slug === QUARANTINE_SLUG) {
        throw Errors.fieldInvalid('is_active', 'The quarantine clinic cannot be activated.');
      }
    }
    const tenant = await this.tenants.setActive(id, isActive);
    if (!tenant) throw Errors.notFound('Tenant');
    // This process stops (or resumes) honouring the tenant's tokens now; others within seconds.
    this.accounts.forgetAll();
    return toTenantDto(tenant);
  }
}
