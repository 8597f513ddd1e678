// The tenant feature's public surface: what other features may import (see eslint.config.mjs).
export { TenantModule } from './tenant.module';
export { ReportTemplate } from './templates/report-template.entity';
