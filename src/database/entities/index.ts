import { Instance } from './instance.entity';
import { Modality } from './modality.entity';
import { Patient } from './patient.entity';
import { Report } from './report.entity';
import { ReportPdf } from './report-pdf.entity';
import { ReportPreset } from './report-preset.entity';
import { ReportTemplate } from './report-template.entity';
import { Series } from './series.entity';
import { Share } from './share.entity';
import { Study } from './study.entity';
import { Tenant } from './tenant.entity';
import { Thumbnail } from './thumbnail.entity';
import { Unit } from './unit.entity';
import { User } from './user.entity';

export {
  Instance,
  Modality,
  Patient,
  Report,
  ReportPdf,
  ReportPreset,
  ReportTemplate,
  Series,
  Share,
  Study,
  Tenant,
  Thumbnail,
  Unit,
  User,
};
export type { ReportStatus } from './study.entity';
export type { ReportKind, ReportState } from './report.entity';

export const ENTITIES = [
  Tenant,
  Unit,
  User,
  Modality,
  Patient,
  Study,
  Series,
  Instance,
  Thumbnail,
  ReportTemplate,
  Report,
  ReportPdf,
  ReportPreset,
  Share,
];
