import { Module } from '@nestjs/common';
import { AdminModule } from '../admin/admin.module';
import { SettingsController } from './settings/settings.controller';
import { SettingsService } from './settings/settings.service';
import { TemplatesController } from './templates/templates.controller';
import { TemplatesRepository } from './templates/templates.repository';
import { TemplatesService } from './templates/templates.service';
import { TenantUnitsController } from './units/tenant-units.controller';

/** /api/tenant: the caller's clinic — units, report templates and settings. Writes need a tenant admin. */
@Module({
  imports: [AdminModule],
  controllers: [TenantUnitsController, TemplatesController, SettingsController],
  providers: [TemplatesRepository, TemplatesService, SettingsService],
})
export class TenantModule {}
