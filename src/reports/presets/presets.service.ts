import { Injectable } from '@nestjs/common';
import { DataScope, scopeTenantId } from '../../common/auth/data-scope';
import { Errors } from '../../common/errors/api-errors';
import { fetchPage, Paginated } from '../../common/pagination';
import { ADMIN_PAGE_SIZE } from '../../common/responses';
import { SECTION_NAMES } from '../pdf/report-document';
import { CreatePresetDto, PresetDto, PresetListQueryDto, toPresetDto, UpdatePresetDto } from './presets.dto';
import { PresetsRepository, PresetValues } from './presets.repository';

export const PRESET_UNIT_INVALID = 'The selected unit id is invalid.';

function presetValues(body: CreatePresetDto | UpdatePresetDto): PresetValues {
  const values: PresetValues = {};
  if (body.name !== undefined) values.name = body.name;
  if (body.modality !== undefined) values.modality = body.modality;
  if (body.unit_id !== undefined) values.unit_id = body.unit_id;
  for (const name of SECTION_NAMES) if (body[name] !== undefined) values[name] = body[name];
  return values;
}

/** Report presets: everyone of the clinic reads them, tenant admins write them (decisions §3c). */
@Injectable()
export class PresetsService {
  constructor(private readonly presets: PresetsRepository) {}

  async list(scope: DataScope, query: PresetListQueryDto): Promise<Paginated<PresetDto>> {
    const search = query.search || undefined;
    return fetchPage(
      query.page,
      ADMIN_PAGE_SIZE,
      (offset, limit) =>
        this.presets.page(scope, { modality: query.modality ?? undefined, search, unitId: query.unit_id, offset, limit }),
      toPresetDto,
      search,
    );
  }

  async get(scope: DataScope, id: string): Promise<PresetDto> {
    const row = await this.presets.findVisible(scope, id);
    if (!row) throw Errors.notFound('Preset');
    return toPresetDto(row);
  }

  /** A tenant admin writes into their clinic; a super admin names the clinic through a unit of it. */
  async create(scope: DataScope, body: CreatePresetDto): Promise<PresetDto> {
    let tenantId = scopeTenantId(scope);
    if (!tenantId) {
      const unitTenant = body.unit_id ? await this.presets.tenantOfUnit(body.unit_id) : null;
      if (!unitTenant) throw Errors.fieldInvalid('unit_id', PRESET_UNIT_INVALID);
      tenantId = unitTenant;
    }
    if (body.unit_id && !(await this.presets.unitOfTenant(tenantId, body.unit_id))) {
      throw Errors.fieldInvalid('unit_id', PRESET_UNIT_INVALID);
    }
    const id = await this.presets.create({ ...presetValues(body), tenant_id: tenantId, name: body.name });
    return this.get(scope, id);
  }

  async update(scope: DataScope, id: string, body: UpdatePresetDto): Promise<PresetDto> {
    const current = await this.presets.findVisible(scope, id);
    if (!current) throw Errors.notFound('Preset');
    if (body.unit_id && !(await this.presets.unitOfTenant(current.tenant_id, body.unit_id))) {
      throw Errors.fieldInvalid('unit_id', PRESET_UNIT_INVALID);
    }
    if (!(await this.presets.update(id, presetValues(body)))) throw Errors.notFound('Preset');
    return this.get(scope, id);
  }

  async remove(scope: DataScope, id: string): Promise<void> {
    const current = await this.presets.findVisible(scope, id);
    if (!current || !(await this.presets.softDelete(id))) throw Errors.notFound('Preset');
  }
}
