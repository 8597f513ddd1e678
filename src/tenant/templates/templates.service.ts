import { Injectable } from '@nestjs/common';
import { ADMIN_PAGE_SIZE } from '../../common/responses';
import type { AuthUser } from '../../common/auth/auth-user';
import { DataScope } from '../../common/auth/data-scope';
import { Errors } from '../../common/errors/api-errors';
import { fetchPage, Paginated } from '../../common/pagination';
import {
  CreateTemplateDto,
  TemplateAssetsDto,
  TemplateDto,
  TemplateListQueryDto,
  toTemplateDto,
  UpdateTemplateDto,
} from './templates.dto';
import { TemplateChanges, TemplatesRepository } from './templates.repository';

export const UNIT_NOT_IN_CLINIC = 'The selected unit id is invalid.';

/** The stored form of `assets`: only the background, with its opacity made explicit. */
function storedAssets(assets: TemplateAssetsDto | null | undefined): Record<string, unknown> {
  const background = assets?.background;
  if (!background) return {};
  return { background: { data_url: background.data_url, opacity: background.opacity ?? 1 } };
}

@Injectable()
export class TemplatesService {
  constructor(private readonly templates: TemplatesRepository) {}

  async list(scope: DataScope, query: TemplateListQueryDto): Promise<Paginated<TemplateDto>> {
    const filter = { tenantId: query.tenant_id, unitId: query.unit_id, search: query.search };
    return fetchPage(
      query.page,
      ADMIN_PAGE_SIZE,
      (offset, limit) => this.templates.page(scope, { ...filter, offset, limit }),
      toTemplateDto,
      query.search,
    );
  }

  async get(scope: DataScope, id: string): Promise<TemplateDto> {
    const row = await this.templates.findVisible(scope, id);
    if (!row) throw Errors.notFound('Template');
    return toTemplateDto(row);
  }

  /** The active template of the caller's own unit; null without a unit or an active template. */
  async mine(user: AuthUser, scope: DataScope): Promise<TemplateDto | null> {
    if (!user.unit_id) return null;
    const row = await this.templates.findActiveOfUnit(scope, user.unit_id);
    return row ? toTemplateDto(row) : null;
  }

  /** The template belongs to the tenant of its unit (for a super admin, whichever that is). */
  async create(scope: DataScope, body: CreateTemplateDto): Promise<TemplateDto> {
    const unit = await this.templates.findUnitInScope(scope, body.unit_id);
    if (!unit) throw Errors.fieldInvalid('unit_id', UNIT_NOT_IN_CLINIC);
    const id = await this.templates.create(unit.tenant_id, unit.id, {
      name: body.name,
      content: body.content ?? null,
      schema_version: body.schema_version ?? 1,
      layout: body.layout ?? {},
      page: body.page ?? {},
      assets: storedAssets(body.assets),
      is_active: body.is_active ?? true,
    });
    return this.get(scope, id);
  }

  async update(scope: DataScope, id: string, body: UpdateTemplateDto): Promise<TemplateDto> {
    const current = await this.templates.findVisible(scope, id);
    if (!current) throw Errors.notFound('Template');
    if (body.unit_id) {
      const unit = await this.templates.findUnitInScope(scope, body.unit_id);
      // A template stays in its clinic; a super admin cannot move it to another one either.
      if (!unit || unit.tenant_id !== current.tenant_id) throw Errors.fieldInvalid('unit_id', UNIT_NOT_IN_CLINIC);
    }
    const changes: TemplateChanges = {};
    if (body.name !== undefined) changes.name = body.name;
    if (body.unit_id !== undefined) changes.unit_id = body.unit_id;
    if (body.content !== undefined) changes.content = body.content;
    if (body.schema_version !== undefined) changes.schema_version = body.schema_version;
    // null resets a layout document to empty: the columns always hold an object.
    if (body.layout !== undefined) changes.layout = body.layout ?? {};
    if (body.page !== undefined) changes.page = body.page ?? {};
    if (body.assets !== undefined) changes.assets = storedAssets(body.assets);
    if (body.is_active !== undefined) changes.is_active = body.is_active;
    if (!(await this.templates.update(id, current.tenant_id, changes))) throw Errors.notFound('Template');
    return this.get(scope, id);
  }

  async remove(scope: DataScope, id: string): Promise<void> {
    const current = await this.templates.findVisible(scope, id);
    if (!current || !(await this.templates.softDelete(id))) throw Errors.notFound('Template');
  }
}
