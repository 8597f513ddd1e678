// The reports feature's public surface: what other features may import (see eslint.config.mjs).
export { ReportsModule, ReportsWorkerModule } from './reports.module';
export { ReportsService } from './reports.service';
