import { Module } from '@nestjs/common';
import { ClinicsModule } from '../clinics';
import { SettingsController } from './settings/settings.controller';
import { SettingsService } from './settings/settings.service';
import { TemplatesController } from './templates/templates.controller';
import { TemplatesRepository } from './templates/templates.repository';
import { TemplatesService } from './templates/templates.service';
import { TenantUnitsController } from './units/tenant-units.controller';

/** /api/tenant: the caller's clinic — units, report templates and settings. Writes need a tenant admin. */
@Module({
  imports: [ClinicsModule],
  controllers: [TenantUnitsController, TemplatesController, SettingsController],
  providers: [TemplatesRepository, TemplatesService, SettingsService],
})
export class TenantModule {}
