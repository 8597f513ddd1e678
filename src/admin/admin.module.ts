import { Module } from '@nestjs/common';
import { ModalitiesController } from './modalities/modalities.controller';
import { ModalitiesRepository } from './modalities/modalities.repository';
import { ModalitiesService } from './modalities/modalities.service';
import { TenantsController } from './tenants/tenants.controller';
import { TenantsRepository } from './tenants/tenants.repository';
import { TenantsService } from './tenants/tenants.service';
import { AdminUnitsController } from './units/units.controller';
import { UnitsRepository } from './units/units.repository';
import { UnitsService } from './units/units.service';
import { UsersController } from './users/users.controller';
import { UsersRepository } from './users/users.repository';
import { UsersService } from './users/users.service';

/**
 * /api/admin: clinics, units, DICOM devices and users, for super admins only. Nothing else lives
 * under /api/admin (no deletions, no unit status, no password reset). UnitsService is exported
 * for the tenant module's unit list, which shares its order, search and shape.
 */
@Module({
  controllers: [TenantsController, AdminUnitsController, ModalitiesController, UsersController],
  providers: [
    TenantsRepository,
    TenantsService,
    UnitsRepository,
    UnitsService,
    ModalitiesRepository,
    ModalitiesService,
    UsersRepository,
    UsersService,
  ],
  exports: [UnitsService],
})
export class AdminModule {}
