// The entities every feature reads. A feature's own entities live in its folder (*.entity.ts);
// the data source finds them all by that name (data-source-options.ts).
export { TimestampedEntity } from './base';
export { Instance } from './instance.entity';
export { Modality } from './modality.entity';
export { Patient } from './patient.entity';
export { Series } from './series.entity';
export { Study } from './study.entity';
export type { ReportStatus } from './study.entity';
export { Tenant } from './tenant.entity';
export { Thumbnail } from './thumbnail.entity';
export { Unit } from './unit.entity';
export { User } from './user.entity';
