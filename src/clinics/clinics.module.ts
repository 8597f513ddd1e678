import { Module } from '@nestjs/common';
import { TenantsRepository } from './tenants.repository';
import { UnitsRepository } from './units.repository';
import { UnitsService } from './units.service';

/**
 * The clinics (tenants) and their units as data, shared by the super admin's endpoints (admin) and
 * the caller's own clinic (tenant): the tables, the unit list (its order, search and shape) and
 * unit creation. No controllers.
 */
@Module({
  providers: [TenantsRepository, UnitsRepository, UnitsService],
  exports: [TenantsRepository, UnitsRepository, UnitsService],
})
export class ClinicsModule {}
