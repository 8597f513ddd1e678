// The audit feature's public surface: what other features may import (see eslint.config.mjs).
export { AuditModule } from './audit.module';
export { AuditAccess } from './audit-access.decorator';
export { AuditService } from './audit.service';
