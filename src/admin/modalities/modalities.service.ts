import { Injectable } from '@nestjs/common';
import { TenantsRepository, UnitsRepository } from '../../clinics';
import { Errors } from '../../common/errors/api-errors';
import { fetchPage, Paginated } from '../../common/pagination';
import { ADMIN_PAGE_SIZE } from '../../common/responses';
import { CreateModalityDto, ModalityDto, toModalityDto } from './modalities.dto';
import { ModalitiesRepository } from './modalities.repository';

export const MODALITY_NAME_TAKEN = 'A modality with that name already exists in this unit.';
export const AET_TAKEN = 'The aet has already been taken.';

@Injectable()
export class ModalitiesService {
  constructor(
    private readonly modalities: ModalitiesRepository,
    private readonly tenants: TenantsRepository,
    private readonly units: UnitsRepository,
  ) {}

  async list(query: { tenant_id?: string; unit_id?: string; search?: string; page?: number }): Promise<Paginated<ModalityDto>> {
    const filter = { tenantId: query.tenant_id, unitId: query.unit_id, search: query.search };
    return fetchPage(
      query.page,
      ADMIN_PAGE_SIZE,
      (offset, limit) => this.modalities.page({ ...filter, offset, limit }),
      toModalityDto,
      query.search,
    );
  }

  async create(body: CreateModalityDto): Promise<ModalityDto> {
    if (!(await this.tenants.exists(body.tenant_id))) throw Errors.notFound('Tenant');
    const unit = await this.units.findById(body.unit_id);
    // The contract answers a unit of another clinic like an unknown one.
    if (!unit || unit.tenant_id !== body.tenant_id) throw Errors.notFound('Unit');
    // Checked first for a complete answer (both fields); the insert settles concurrent requests.
    await this.refuseTaken(body.unit_id, body.name, body.aet);
    const id = await this.modalities.insert({
      tenant_id: body.tenant_id,
      unit_id: body.unit_id,
      name: body.name,
      aet: body.aet,
      ip_address: body.ip_address,
    });
    if (!id) {
      await this.refuseTaken(body.unit_id, body.name, body.aet);
      throw Errors.fieldInvalid('aet', AET_TAKEN);
    }
    return toModalityDto((await this.modalities.findRow(id))!);
  }

  private async refuseTaken(unitId: string, name: string, aet: string): Promise<void> {
    const taken = await this.modalities.taken(unitId, name, aet);
    const errors: Record<string, string[]> = {};
    if (taken.name) errors.name = [MODALITY_NAME_TAKEN];
    if (taken.aet) errors.aet = [AET_TAKEN];
    if (Object.keys(errors).length) throw Errors.validation(errors);
  }
}
