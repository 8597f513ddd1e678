import { Injectable } from '@nestjs/common';
import { AccountStatusService } from '../../auth';
import { TenantsRepository, UnitsRepository } from '../../clinics';
import type { AuthUser } from '../../common/auth/auth-user';
import { PasswordHasher } from '../../common/auth/password-hasher';
import { Errors } from '../../common/errors/api-errors';
import { fetchPage, Paginated } from '../../common/pagination';
import { uniqueViolationOf } from '../../common/validation/unique-violation';
import { ADMIN_PAGE_SIZE } from '../../common/responses';
import { AdminUserDto, CreateUserDto, toAdminUserDto, UpdateUserDto } from './users.dto';
import { USER_EMAIL_INDEX, UserChanges, UsersRepository } from './users.repository';

export const EMAIL_TAKEN = 'The email has already been taken.';
export const UNIT_OUTSIDE_TENANT = 'The selected unit does not belong to the selected clinic.';

@Injectable()
export class UsersService {
  constructor(
    private readonly users: UsersRepository,
    private readonly tenants: TenantsRepository,
    private readonly units: UnitsRepository,
    private readonly accounts: AccountStatusService,
    private readonly passwords: PasswordHasher,
  ) {}

  async list(query: {
    tenant_id?: string;
    unit_id?: string;
    search?: string;
    page?: number;
  }): Promise<Paginated<AdminUserDto>> {
    const filter = { tenantId: query.tenant_id, unitId: query.unit_id, search: query.search };
    return fetchPage(
      query.page,
      ADMIN_PAGE_SIZE,
      (offset, limit) => this.users.page({ ...filter, offset, limit }),
      toAdminUserDto,
      query.search,
    );
  }

  async create(body: CreateUserDto): Promise<AdminUserDto> {
    if (!(await this.tenants.exists(body.tenant_id))) throw Errors.notFound('Tenant');
    const unit = await this.units.findById(body.unit_id);
    if (!unit) throw Errors.notFound('Unit');
    if (unit.tenant_id !== body.tenant_id) throw Errors.fieldInvalid('unit_id', UNIT_OUTSIDE_TENANT);
    if (await this.users.emailTaken(body.email)) throw Errors.fieldInvalid('email', EMAIL_TAKEN);
    const id = await this.users.insert(
      {
        tenant_id: body.tenant_id,
        unit_id: body.unit_id,
        name: body.name,
        email: body.email,
        crm: body.crm ?? null,
        signature: body.signature ?? null,
        is_tenant_admin: body.is_tenant_admin ?? false,
        is_active: body.is_active ?? true,
      },
      () => this.passwords.hash(body.password),
    );
    // A concurrent request with the same email won the race.
    if (!id) throw Errors.fieldInvalid('email', EMAIL_TAKEN);
    return toAdminUserDto((await this.users.findRow(id))!);
  }

  async update(caller: AuthUser, id: string, body: UpdateUserDto): Promise<AdminUserDto> {
    const current = await this.users.findRow(id);
    if (!current) throw Errors.notFound('User');
    if (caller.id === id && body.is_active === false) {
      throw Errors.fieldInvalid('is_active', 'You cannot deactivate your own account.');
    }
    if (body.tenant_id !== undefined && !(await this.tenants.exists(body.tenant_id))) {
      throw Errors.notFound('Tenant');
    }
    if (body.unit_id !== undefined || body.tenant_id !== undefined) {
      const tenantId = body.tenant_id ?? current.tenant_id;
      const unitId = body.unit_id ?? current.unit_id;
      const unit = unitId ? await this.units.findById(unitId) : null;
      if (body.unit_id !== undefined && !unit) throw Errors.notFound('Unit');
      // Moving a user to another clinic without naming a unit there leaves the old unit behind.
      if (unit && unit.tenant_id !== tenantId) throw Errors.fieldInvalid('unit_id', UNIT_OUTSIDE_TENANT);
    }
    if (body.email !== undefined && (await this.users.emailTaken(body.email, id))) {
      throw Errors.fieldInvalid('email', EMAIL_TAKEN);
    }
    const changes: UserChanges = {};
    for (const key of ['tenant_id', 'unit_id', 'name', 'email', 'crm', 'signature', 'is_tenant_admin', 'is_active'] as const) {
      if (body[key] !== undefined) (changes as Record<string, unknown>)[key] = body[key];
    }
    if (Object.keys(changes).length) {
      try {
        await this.users.update(id, changes);
      } catch (error) {
        if (uniqueViolationOf(error) === USER_EMAIL_INDEX) throw Errors.fieldInvalid('email', EMAIL_TAKEN);
        throw error;
      }
      // A deactivated or moved user loses (or changes) access at once in this process.
      this.accounts.forgetAll();
    }
    return toAdminUserDto((await this.users.findRow(id))!);
  }
}
