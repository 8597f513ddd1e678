import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { ClinicsModule } from '../clinics';
import { ModalitiesController } from './modalities/modalities.controller';
import { ModalitiesRepository } from './modalities/modalities.repository';
import { ModalitiesService } from './modalities/modalities.service';
import { TenantsController } from './tenants/tenants.controller';
import { TenantsService } from './tenants/tenants.service';
import { AdminUnitsController } from './units/units.controller';
import { UsersController } from './users/users.controller';
import { UsersRepository } from './users/users.repository';
import { UsersService } from './users/users.service';

/**
 * /api/admin: clinics, units, DICOM devices and users, for super admins only. Nothing else lives
 * under /api/admin (no deletions, no unit status, no password reset). Tenants and units as data
 * come from ClinicsModule, which the tenant module shares.
 */
@Module({
  imports: [AuthModule, ClinicsModule],
  controllers: [TenantsController, AdminUnitsController, ModalitiesController, UsersController],
  providers: [TenantsService, ModalitiesRepository, ModalitiesService, UsersRepository, UsersService],
})
export class AdminModule {}
