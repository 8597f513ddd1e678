// The clinics feature's public surface: what other features may import (see eslint.config.mjs).
export { ClinicsModule } from './clinics.module';
export { TenantsRepository } from './tenants.repository';
export { UnitsRepository } from './units.repository';
export { UnitsService } from './units.service';
export * from './units.dto';
export { SlugField, timestampsOf } from './clinic-fields';
