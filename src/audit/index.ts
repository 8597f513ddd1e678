// The audit feature's public surface: what other features may import (see eslint.config.mjs).
export { AuditModule } from './audit.module';
export { accessedPatient, AuditAccess, searchReturned } from './audit-access.decorator';
export { ACCESS_ACTIONS, AuditService } from './audit.service';
export type { AccessAction, AccessEntry } from './audit.service';
export { ViewTrail } from './view-trail';
export type { GateReader, ViewedStudy } from './view-trail';
